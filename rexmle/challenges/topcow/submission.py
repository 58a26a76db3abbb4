"""TopCoW submission rules (topcow.md, "Validity rules"), checked with public data only.

Task 1 has no rule here: the YAML's file rule makes each label map readable (``.nii.gz``,
``.nii`` or ``.mha``), 3-D with one component, of the test image's size, with values in {0, …,
12, 15}, and warns when its spacing differs from the test image's. Task 2: one JSON box per case.
Task 3: one JSON pair of edge lists per case. Nothing is cast, rounded or resized. The track's
file name token (``ct`` or ``mr``) is the task's ``params.scan``.
"""

from __future__ import annotations

import json
from pathlib import Path

from rexmle.io import read_geometry
from rexmle.tasks.checks import SubmissionWarning
from rexmle.tasks.jobs import CheckContext
from rexmle.tasks.submission import SubmissionCase

from .labels import REGION_EDGES

BOX_KEYS = ("size", "location")


def public_test_image(public_dir: Path, modality: str, case_id: str) -> Path:
    """The public test image of a case."""
    return public_dir / "test" / "images" / f"topcow_{modality}_{case_id}_0000.nii.gz"


def _read_json(path: Path) -> tuple[object, str | None]:
    if path.suffix.lower() != ".json":
        return None, (
            f"{path.name}: write a .json file (the official .txt boxes and .yml edge lists are "
            f"not accepted; one format)"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        return None, f"{path.name}: cannot be read as UTF-8 text ({err})"
    try:
        return json.loads(text), None
    except json.JSONDecodeError as err:
        return None, f"{path.name}: not valid JSON ({err})"


def _is_json_integer(value: object) -> bool:
    """True for JSON integers only (bool, float such as 12.0 and strings are not)."""
    return type(value) is int


def check_box(case: SubmissionCase, context: CheckContext) -> list[str]:
    """Task 2: reasons why the file is not a valid box (+ a warning for a box leaving the image)."""
    (path,) = case.paths.values()
    payload, problem = _read_json(path)
    if problem:
        return [problem]
    example = '{"size": [sx, sy, sz], "location": [x, y, z]}'
    if not isinstance(payload, dict) or set(payload) != set(BOX_KEYS):
        found = sorted(payload) if isinstance(payload, dict) else type(payload).__name__
        return [
            f"{path.name}: expected a JSON object with exactly the keys {example}, found {found}"
        ]
    reasons = []
    for key in BOX_KEYS:
        values = payload[key]
        if (
            not isinstance(values, list)
            or len(values) != 3
            or not all(_is_json_integer(v) for v in values)
        ):
            reasons.append(
                f"{path.name}: {key!r} must be a list of 3 JSON integers (voxel indices, x y z), "
                f"found {values!r}; floats such as 12.0, booleans and strings are not accepted"
            )
    if reasons:
        return reasons
    size, location = payload["size"], payload["location"]
    if min(size) < 1:
        return [f"{path.name}: every size must be >= 1 voxel, found {size}"]
    test_image = public_test_image(context.public, context.params["scan"], case.case_id)
    shape = read_geometry(test_image).shape
    inside = all(lo >= 0 and lo + s <= n for lo, s, n in zip(location, size, shape, strict=True))
    if not inside:
        return [
            SubmissionWarning(
                f"{path.name}: the box (size {size}, location {location}) is not fully inside "
                f"the image of size {list(shape)}; it is scored as given"
            )
        ]
    return []


def check_edges(case: SubmissionCase, _context: CheckContext) -> list[str]:
    """Task 3: reasons why the file is not a valid edge-list JSON file."""
    (path,) = case.paths.values()
    payload, problem = _read_json(path)
    if problem:
        return [problem]
    if not isinstance(payload, dict) or set(payload) != set(REGION_EDGES):
        found = sorted(payload) if isinstance(payload, dict) else type(payload).__name__
        return [
            f"{path.name}: expected a JSON object with exactly the keys "
            f"{list(REGION_EDGES)}, found {found}"
        ]
    reasons = []
    for region, edges in REGION_EDGES.items():
        values = payload[region]
        if not isinstance(values, dict) or set(values) != set(edges):
            found = sorted(values) if isinstance(values, dict) else type(values).__name__
            reasons.append(
                f"{path.name}: {region!r} must hold exactly {list(edges)}, found {found}"
            )
            continue
        bad = {k: v for k, v in values.items() if not _is_json_integer(v) or v not in (0, 1)}
        if bad:
            reasons.append(
                f"{path.name}: {region} values must be the JSON integers 0 or 1, found {bad}"
            )
    return reasons
