"""TopCoW submission rules (topcow.md, "Validity rules"), checked with public data only.

Task 1: one label map per case (``.nii.gz``, ``.nii`` or ``.mha``), 3-D, one component, the test
image's size, values in {0, …, 12, 15}. Task 2: one JSON box per case. Task 3: one JSON pair of
edge lists per case. Nothing is cast, rounded or resized.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from rexmle.challenges.topcow.labels import ALLOWED_VALUES, REGION_EDGES
from rexmle.io import read_geometry
from rexmle.tasks.checks import (
    SubmissionWarning,
    check_allowed_values,
    check_shape,
    read_submitted_image,
)

MASK_SUFFIXES = (".nii.gz", ".nii", ".mha")
SPACING_WARNING_MM = 1e-3
BOX_KEYS = ("size", "location")


def public_test_image(public_dir: Path, modality: str, case_id: str) -> Path:
    """The public test image of a case."""
    return public_dir / "test" / "images" / f"topcow_{modality}_{case_id}_0000.nii.gz"


def check_mask_file(case_id: str, path: Path, public_dir: Path, modality: str) -> list[str]:
    """Reasons why ``path`` is not a valid Task-1 label map for test case ``case_id`` (+ warnings)."""
    reference = read_geometry(public_test_image(public_dir, modality, case_id))
    image, problem = read_submitted_image(
        path, suffixes=MASK_SUFFIXES, expected_shape=reference.shape, reader="simpleitk"
    )
    if image is None:
        return [str(problem)]
    array = image.array
    if array.ndim != 3 or image.geometry.channels != 1:
        return [
            f"{path.name}: the label map has array shape {array.shape} with "
            f"{image.geometry.channels} component(s); write a 3-D single-component label map"
        ]
    shape_problem = check_shape(array.shape, reference.shape, what=path.name)
    if shape_problem:
        return [shape_problem]
    reasons: list[str] = []
    value_problem = check_allowed_values(_distinct_values(array), ALLOWED_VALUES)
    if value_problem:
        reasons.append(f"{path.name}: {value_problem} (13 and 14 are unused in TopCoW)")
    spacing_gap = np.abs(np.subtract(image.geometry.spacing_mm[:3], reference.spacing_mm[:3]))
    if spacing_gap.max() > SPACING_WARNING_MM:
        reasons.append(
            SubmissionWarning(
                f"{path.name}: spacing {image.geometry.spacing_mm} differs from the test image's "
                f"{reference.spacing_mm}; voxels are compared by index, save the map with the "
                f"test image's header"
            )
        )
    return reasons


COUNT_CHUNK = 1 << 22
"""Voxels counted at a time (bincount makes an int64 copy of its input: 32 MiB per chunk)."""


def _distinct_values(array: np.ndarray) -> np.ndarray:
    """The distinct values of a 8- or 16-bit integer array, counted chunk by chunk (faster and
    smaller than a sort of a 512 x 512 x 256 map); any other array, or one with negative values,
    is returned as it is (then sorted by the generic check)."""
    if array.dtype.kind not in "ui" or array.dtype.itemsize > 2 or array.size == 0:
        return array
    if array.dtype.kind == "i" and int(array.min()) < 0:
        return array
    flat = array.ravel(order="K")  # a view for C- or Fortran-ordered (NIfTI) arrays
    seen = np.zeros(1 << (8 * array.dtype.itemsize), dtype=bool)
    for start in range(0, flat.size, COUNT_CHUNK):
        counts = np.bincount(flat[start : start + COUNT_CHUNK])
        seen[: counts.size] |= counts > 0
    return np.flatnonzero(seen).astype(array.dtype)


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


def check_box_file(case_id: str, path: Path, public_dir: Path, modality: str) -> list[str]:
    """Reasons why ``path`` is not a valid Task-2 box (+ a warning for a box leaving the image)."""
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
    shape = read_geometry(public_test_image(public_dir, modality, case_id)).shape
    inside = all(lo >= 0 and lo + s <= n for lo, s, n in zip(location, size, shape, strict=True))
    if not inside:
        return [
            SubmissionWarning(
                f"{path.name}: the box (size {size}, location {location}) is not fully inside "
                f"the image of size {list(shape)}; it is scored as given"
            )
        ]
    return []


def check_edges_file(path: Path) -> list[str]:
    """Reasons why ``path`` is not a valid Task-3 edge-list JSON file."""
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
