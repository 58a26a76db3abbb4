"""TopBrain submission rules (spec topbrain.md, "Validity rules"), checked with public data only."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rexmle.challenges.topbrain.labels import Track
from rexmle.challenges.topbrain.prepare import image_name
from rexmle.tasks.checks import (
    SubmissionWarning,
    check_allowed_values,
    read_label_volume,
)

MASK_SUFFIXES = (".nii.gz", ".nii", ".mha")
SPACING_WARNING_MM = 1e-3


def check_label_file(case_id: str, path: Path, public_dir: Path, track: Track) -> list[str]:
    """Reasons why ``path`` is not a valid label map for test case ``case_id`` (+ warnings).

    Rules: readable ``.nii.gz``/``.nii``/``.mha``; 3-D with one component; size of the test
    image; values exactly within 0..40 (CTA) or 0..42 (MRA). A spacing differing from the test
    image's by more than 1e-3 mm is a warning only: the GT geometry is used, as officially.
    """
    test_image = public_dir / "test" / "images" / image_name(track.modality, case_id)
    image, test, problem = read_label_volume(
        path, suffixes=MASK_SUFFIXES, test_image=test_image, what="label map"
    )
    if image is None or test is None:
        return [str(problem)]
    array = np.asarray(image.array)
    reasons: list[str] = []
    value_problem = check_allowed_values(array, track.labels)
    if value_problem:
        reasons.append(
            f"{path.name}: {value_problem.replace(str(list(track.labels)), f'0..{track.n_labels}')}"
        )
    offset = np.abs(np.asarray(image.spacing_mm) - np.asarray(test.spacing_mm)).max()
    if offset > SPACING_WARNING_MM:
        reasons.append(
            SubmissionWarning(
                f"{path.name}: spacing {image.spacing_mm} differs from the test image's "
                f"{test.spacing_mm} mm; the test image geometry is used"
            )
        )
    return reasons
