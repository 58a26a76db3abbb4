"""PANTHER submission rules (spec panther.md, "Validity rules"), checked with public data only."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rexmle.tasks.checks import check_allowed_values, read_label_volume

MASK_SUFFIXES = (".mha", ".nii.gz")
SPACING_TOLERANCE_MM = 1e-4


def check_mask_file(case_id: str, path: Path, public_dir: Path) -> list[str]:
    """Reasons why ``path`` is not a valid tumour mask for test case ``case_id``.

    Rules: readable ``.mha``/``.nii.gz``; 3-D with one component; size of the test image; spacing
    of the test image within 1e-4 mm per axis (the official evaluator rejects a mismatch); values
    exactly 0/1.
    """
    test_image = public_dir / "test" / "images" / f"{case_id}_0000.mha"
    image, test, problem = read_label_volume(path, suffixes=MASK_SUFFIXES, test_image=test_image)
    if image is None or test is None:
        return [str(problem)]
    array = np.asarray(image.array)
    reasons: list[str] = []
    offset = np.abs(np.asarray(image.spacing_mm) - np.asarray(test.spacing_mm)).max()
    if offset > SPACING_TOLERANCE_MM:
        shown = tuple(round(s, 6) for s in image.spacing_mm)
        expected = tuple(round(s, 6) for s in test.spacing_mm)
        reasons.append(
            f"{path.name}: spacing {shown} mm differs from the test image spacing {expected} mm "
            f"by more than {SPACING_TOLERANCE_MM} mm; save the mask with the test image's header"
        )
    value_problem = check_allowed_values(array, (0, 1))
    if value_problem:
        reasons.append(f"{path.name}: {value_problem}")
    return reasons
