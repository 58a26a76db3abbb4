"""TopCoW task 2 under the published study's definitions (``--definitions study``).

Re-implemented from the description in ``docs/study-errata.md`` (entries topcow-track1/2-task2):
the study's boundary set of a box is the box grown OUTWARD by ceil(ratio · size) voxels on every
side (the whole grown volume), where the official boundary is the inner band of the box within
that distance of a face. ``boundary_iou`` is then the IoU of the boxes grown with ratio 0.2 and
``iou`` the IoU of the boxes grown with ratio 0.5 (the official ``iou`` is the plain box IoU).
"""

from __future__ import annotations

from rexmle.metrics.boxes import enlarged_box_iou
from rexmle.tasks.jobs import ScoreCase
from rexmle.tasks.rows import CaseRow

from .metrics import BOUNDARY_RATIO, read_box
from .roi import Box

WHOLE_BOX_RATIO = 0.5
"""The ratio the study (like the official code) passes for ``iou``."""


def score_box(pred: Box, truth: Box) -> dict[str, float]:
    """The study's ``boundary_iou`` and ``iou`` of one predicted box against the gold box."""
    first = (list(truth.location), list(truth.size))
    second = (list(pred.location), list(pred.size))
    return {
        "boundary_iou": enlarged_box_iou(*first, *second, ratio=BOUNDARY_RATIO),
        "iou": enlarged_box_iou(*first, *second, ratio=WHOLE_BOX_RATIO),
    }


def score_box_case(case: ScoreCase) -> CaseRow:
    """Task-2 values of one case under the study's definitions."""
    pred_path, gold_path = case.file_pair()
    return CaseRow(case.case_id, dict(score_box(read_box(pred_path), read_box(gold_path))))
