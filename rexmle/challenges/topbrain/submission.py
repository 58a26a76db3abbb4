"""TopBrain's own submission rule (spec topbrain.md, "Validity rules"), public data only.

The YAML's file rule makes each label map readable (``.nii.gz``, ``.nii``, ``.mha``), 3-D with
one component, of the test image's size and with values in the track's label set. This module
adds the one TopBrain-specific finding: a spacing that differs from the test image's by more than
1e-3 mm is a warning only, because the GT geometry is used for scoring, as officially.
"""

from __future__ import annotations

import numpy as np

from rexmle.io import ImageReadError, read_geometry
from rexmle.tasks.checks import SubmissionWarning
from rexmle.tasks.jobs import CheckContext
from rexmle.tasks.submission import SubmissionCase

from .prepare import image_name

SPACING_WARNING_MM = 1e-3


def check_case(case: SubmissionCase, context: CheckContext) -> list[str]:
    """A warning when the label map's spacing differs from the test image's (never an error).

    Runs after the declared rule accepted the file, so its header is readable.
    """
    (path,) = case.paths.values()
    test_image = (
        context.public / "test" / "images" / image_name(context.params["scan"], case.case_id)
    )
    test = read_geometry(test_image)
    try:
        spacing = read_geometry(path).spacing_mm[:3]
    except ImageReadError as err:
        return [f"unreadable file: {err}"]
    offset = np.abs(np.asarray(spacing) - np.asarray(test.spacing_mm[:3])).max()
    if offset > SPACING_WARNING_MM:
        return [
            SubmissionWarning(
                f"{path.name}: spacing {spacing} differs from the test image's "
                f"{test.spacing_mm} mm; the test image geometry is used"
            )
        ]
    return []
