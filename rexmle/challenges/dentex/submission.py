"""DENTEX submission rules (spec dentex.md, "Validity rules"), checked with public data only.

A case is one prediction file: a UTF-8 JSON array of detections, each an object with ``bbox``
``[x, y, w, h]`` (pixels, w > 0, h > 0), integer ``category_id_1/2/3`` from the id sets of the
public training JSON's category lists, ``score`` in [0, 1] and an optional ``image_id`` equal to
the row's id. Nothing is repaired: no box-format guessing, no id aliases, no defaults.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import Any

from rexmle.tasks.jobs import CheckContext
from rexmle.tasks.submission import SubmissionCase

from .prepare import CATEGORY_LISTS, DISEASE_JSON, LEVEL_KEYS

MAX_DETECTIONS_PER_IMAGE = 10_000
REQUIRED_KEYS = ("bbox", *LEVEL_KEYS, "score")
MAX_REASONS_PER_FILE = 5


@functools.lru_cache(maxsize=8)
def allowed_category_ids(public_dir: Path) -> dict[str, frozenset[int]]:
    """``category_id_k`` -> the id set of ``categories_k`` in the public training JSON."""
    document = json.loads((public_dir / "train" / DISEASE_JSON).read_text(encoding="utf-8"))
    return {
        key: frozenset(int(c["id"]) for c in document[name])
        for key, name in zip(LEVEL_KEYS, CATEGORY_LISTS, strict=True)
    }


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _reject_constant(token: str) -> float:
    msg = f"{token} is not a JSON number; use finite numbers"
    raise ValueError(msg)


def _is_finite(value: float) -> bool:
    """``math.isfinite`` that also answers False for integers beyond the float range."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def read_detections(path: Path) -> tuple[list[Any] | None, str | None]:
    """Parse a prediction file; (detections, None) or (None, problem)."""
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as err:
        return None, f"{path.name}: not UTF-8 text ({err.reason} at byte {err.start})"
    except OSError as err:
        return None, f"{path.name}: cannot be read ({err})"
    try:
        payload = json.loads(text, parse_constant=_reject_constant)
    except ValueError as err:
        return None, f"{path.name}: not valid JSON ({err})"
    if not isinstance(payload, list):
        kind = type(payload).__name__
        return None, (
            f"{path.name}: top-level must be a JSON array of detections, found a JSON {kind}"
            " (write [] for an image without detections)"
        )
    return payload, None


def check_detection(
    index: int, detection: object, case_id: str, allowed: dict[str, frozenset[int]]
) -> list[str]:
    """Reasons why one detection is invalid (``index`` = its position in the array)."""
    where = f"detection {index}"
    if not isinstance(detection, dict):
        return [f"{where}: must be a JSON object, found {type(detection).__name__}"]
    missing = [k for k in REQUIRED_KEYS if k not in detection]
    if missing:
        return [f"{where}: missing key(s) {missing}; required keys are {list(REQUIRED_KEYS)}"]
    reasons = []
    bbox = detection["bbox"]
    if not isinstance(bbox, list) or len(bbox) != 4 or not all(_is_number(v) for v in bbox):
        reasons.append(f"{where}: bbox {bbox!r} must be an array of 4 JSON numbers [x, y, w, h]")
    elif not all(_is_finite(v) for v in bbox):
        reasons.append(f"{where}: bbox {bbox!r} holds a non-finite number")
    elif bbox[2] <= 0 or bbox[3] <= 0:
        reasons.append(
            f"{where}: bbox {bbox!r} has width {bbox[2]} and height {bbox[3]}; both must be > 0 "
            f"(boxes are [x, y, w, h], not corners)"
        )
    for key in LEVEL_KEYS:
        value = detection[key]
        ids = sorted(allowed[key])
        if not isinstance(value, int) or isinstance(value, bool):
            reasons.append(f"{where}: {key} = {value!r} must be a JSON integer in {ids}")
        elif value not in allowed[key]:
            reasons.append(
                f"{where}: {key} = {value} is not one of {ids} (ids are 0-based, as in the "
                f"training JSON)"
            )
    score = detection["score"]
    if not _is_number(score) or not _is_finite(score) or not 0.0 <= score <= 1.0:
        reasons.append(f"{where}: score {score!r} must be a finite number in [0, 1]")
    if "image_id" in detection and detection["image_id"] != case_id:
        reasons.append(
            f"{where}: image_id {detection['image_id']!r} differs from the row's id {case_id!r}"
        )
    return reasons


def test_ids(context: CheckContext) -> list[str]:
    """The ids to submit: stems of ``public/test/images/*.png``, sorted."""
    return sorted(p.stem for p in (context.public / "test" / "images").glob("*.png"))


def check_case(case: SubmissionCase, context: CheckContext) -> list[str]:
    """Reasons why the case's file is not a valid prediction file for its test image."""
    (path,) = case.paths.values()
    return check_prediction_file(case.case_id, path, context.public)


def check_prediction_file(case_id: str, path: Path, public_dir: Path) -> list[str]:
    """Reasons why ``path`` is not a valid prediction file for test image ``case_id``."""
    detections, problem = read_detections(path)
    if detections is None:
        return [str(problem)]
    if len(detections) > MAX_DETECTIONS_PER_IMAGE:
        return [
            f"{path.name}: {len(detections)} detections; at most {MAX_DETECTIONS_PER_IMAGE} per "
            f"image are accepted (COCO scores only the 100 best per image and category)"
        ]
    allowed = allowed_category_ids(public_dir)
    reasons: list[str] = []
    for index, detection in enumerate(detections):
        reasons.extend(
            f"{path.name}: {r}" for r in check_detection(index, detection, case_id, allowed)
        )
        if len(reasons) >= MAX_REASONS_PER_FILE:
            reasons.append(f"{path.name}: further detections not checked")
            break
    return reasons
