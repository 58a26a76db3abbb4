"""SEG.A submission rules (spec seg_a.md, "Validity rules"), checked with public data only."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rexmle.tasks.checks import (
    SubmissionWarning,
    check_allowed_values,
    read_label_volume,
)

MASK_SUFFIXES = (".nrrd", ".nii.gz", ".mha")
SPACING_WARNING_MM = 1e-3


def check_mask_file(case_id: str, path: Path, public_dir: Path) -> list[str]:
    """Reasons why ``path`` is not a valid mask for test case ``case_id`` (+ warnings).

    Rules: readable .nrrd/.seg.nrrd/.nii.gz/.mha; 3-D with one component; size of the test image;
    values exactly 0/1. A spacing that differs from the test image's by more than 1e-3 mm is a
    warning only (the GT geometry is used for distances).
    """
    test_image = public_dir / "test" / "images" / f"{case_id}.nrrd"
    image, test, problem = read_label_volume(path, suffixes=MASK_SUFFIXES, test_image=test_image)
    if image is None or test is None:
        return [str(problem)]
    array = np.asarray(image.array)
    reasons: list[str] = []
    value_problem = check_allowed_values(array, (0, 1))
    if value_problem:
        reasons.append(f"{path.name}: {value_problem}")
    offset = np.abs(np.asarray(image.spacing_mm) - np.asarray(test.spacing_mm)).max()
    if offset > SPACING_WARNING_MM:
        reasons.append(
            SubmissionWarning(
                f"{path.name}: spacing {image.spacing_mm} differs from the test image's "
                f"{test.spacing_mm} mm; the test image geometry is used for distances"
            )
        )
    return reasons
