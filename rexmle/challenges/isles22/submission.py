"""ISLES'22 submission rules (spec isles22.md, "Validity rules"), checked with public data only."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rexmle.grading.checks import (
    SubmissionWarning,
    check_allowed_values,
    check_shape,
    read_submitted_image,
)
from rexmle.io import read_geometry

MASK_SUFFIXES = (".nii.gz", ".nii")
AFFINE_TOLERANCE = 1e-3


def check_mask_file(case_id: str, path: Path, public_dir: Path) -> list[str]:
    """Reasons why ``path`` is not a valid mask for test case ``case_id`` (+ warnings)."""
    dwi = read_geometry(public_dir / "test" / f"{case_id}_dwi.nii.gz")
    image, problem = read_submitted_image(path, suffixes=MASK_SUFFIXES, expected_shape=dwi.shape)
    if image is None:
        return [str(problem)]
    array = image.array
    if array.ndim != 3:
        return [
            f"{path.name}: the mask is {array.ndim}-D with shape {array.shape}; write a 3-D mask "
            f"(a trailing singleton axis is not squeezed)"
        ]
    reasons: list[str] = []
    shape_problem = check_shape(array.shape, dwi.shape, what=path.name)
    if shape_problem:
        return [shape_problem]
    value_problem = check_allowed_values(array, (0, 1))
    if value_problem:
        reasons.append(f"{path.name}: {value_problem}")
    placement = np.asarray(image.geometry.direction) * np.asarray(image.geometry.spacing_mm)
    expected = np.asarray(dwi.direction) * np.asarray(dwi.spacing_mm)
    offset = np.abs(np.asarray(image.geometry.origin_mm) - np.asarray(dwi.origin_mm))
    if np.abs(placement - expected).max() > AFFINE_TOLERANCE or offset.max() > AFFINE_TOLERANCE:
        reasons.append(
            SubmissionWarning(
                f"{path.name}: affine differs from the DWI's by more than {AFFINE_TOLERANCE}; "
                f"voxels are compared in array order, but save masks with the DWI header"
            )
        )
    return reasons
