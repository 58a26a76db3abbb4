"""TopCoW tasks 1 and 2 under the published study's definitions (``--definitions study``).

Re-implemented from the description in ``docs/study-errata.md``. Task 1 (entries
topcow-track1/2-task1): see :func:`score_segmentation_study`. Task 2 (entries
topcow-track1/2-task2): the study's boundary set of a box is the box grown OUTWARD by
ceil(ratio · size) voxels on every side (the whole grown volume), where the official boundary is
the inner band of the box within that distance of a face. ``boundary_iou`` is then the IoU of
the boxes grown with ratio 0.2 and ``iou`` the IoU of the boxes grown with ratio 0.5 (the
official ``iou`` is the plain box IoU).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from rexmle.io import read_image
from rexmle.metrics.boxes import enlarged_box_iou
from rexmle.metrics.lesions import DetectionOutcome, label_detection
from rexmle.metrics.overlap import per_label_dice
from rexmle.metrics.surface import hausdorff_distance_95
from rexmle.metrics.topology import cldice, per_label_b0_error
from rexmle.tasks.jobs import ScoreCase
from rexmle.tasks.rows import CaseRow, CaseValue
from rexmle.tasks.spec import TaskSpec

from .labels import ANTERIOR_LABELS, GROUP2_LABELS, POSTERIOR_LABELS
from .metrics import BOUNDARY_RATIO, HD95_ABSENT_MM, group2_f1, read_box
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


# ---- Task 1 ---------------------------------------------------------------------------------

STUDY_REGION_LABELS: dict[str, tuple[int, ...]] = {
    "anterior": ANTERIOR_LABELS,
    "posterior": POSTERIOR_LABELS,
}
STUDY_SURFACE_CONNECTIVITY = 6
"""The study's surfaces: mask minus its erosion with the 6-neighbourhood cross."""


def _directed_hd95(pred: np.ndarray, truth: np.ndarray, spacing_mm: Sequence[float]) -> float:
    return hausdorff_distance_95(
        pred,
        truth,
        spacing_mm=spacing_mm,
        absent_value_mm=HD95_ABSENT_MM,
        directed=True,
        surface_connectivity=STUDY_SURFACE_CONNECTIVITY,
    )


def score_segmentation_study(
    pred: npt.NDArray[np.integer],
    truth: npt.NDArray[np.integer],
    *,
    spacing_mm: Sequence[float],
) -> dict[str, CaseValue]:
    """The study's task-1 values of one case, on whole (uncropped) uint8 (x, y, z) label maps.

    Definition: L_G = labels present in G (background excluded), predicted-only labels are not
        scored. ``dice`` = mean over L_G of Dice_l; ``b0_error`` = mean over L_G of
        |b0(P_l) − b0(G_l)| (26-connected); ``hd95`` = mean over L_G of d95(P_l → G_l) on
        6-neighbourhood surfaces in mm (90 mm when P_l is empty); L_G empty gives dice 1, b0 0,
        hd95 0. ``cldice`` of the merged foregrounds with skeletons of the (z, y, x) arrays.
        ``grp2_<c>`` as officially, on the whole volume. ``<region>_match``: every label of
        the region present in G has IoU ≥ 0.25 and every label absent from G is absent from P.
    """
    gt_labels = sorted(int(v) for v in np.unique(truth) if v != 0)
    pred_present = {int(v) for v in np.unique(pred) if v != 0}
    dice_per_label = per_label_dice(pred, truth, labels=gt_labels)
    b0_per_label = per_label_b0_error(pred, truth, labels=gt_labels, connectivity=26)
    hd95_per_label = {
        label: _directed_hd95(pred == label, truth == label, spacing_mm) for label in gt_labels
    }

    def mean_over_gt(values: dict[int, float] | dict[int, int], empty: float) -> float:
        return float(np.mean([values[lab] for lab in gt_labels])) if gt_labels else empty

    result: dict[str, CaseValue] = {
        "dice": mean_over_gt(dice_per_label, 1.0),
        "cldice": cldice(np.transpose(pred > 0), np.transpose(truth > 0)),
        "b0_error": mean_over_gt(b0_per_label, 0.0),
        "hd95": mean_over_gt(hd95_per_label, 0.0),
    }
    for label in GROUP2_LABELS:
        result[f"grp2_{label}"] = str(label_detection(pred, truth, label, iou_threshold=0.25))
    for region, labels in STUDY_REGION_LABELS.items():
        result[f"{region}_match"] = all(
            label_detection(pred, truth, label, iou_threshold=0.25) == DetectionOutcome.TP
            if label in gt_labels
            else label not in pred_present
            for label in labels
        )
    return result


def score_segmentation_case(case: ScoreCase) -> CaseRow:
    """The study's task-1 values of one case: the whole volume, no ROI crop."""
    pred_path, gold_path = case.file_pair()
    gold = read_image(gold_path, reader="simpleitk")
    spacing = gold.geometry.spacing_mm[:3]
    truth = np.asarray(gold.array).astype(np.uint8)
    del gold
    pred = np.asarray(read_image(pred_path, reader="simpleitk").array).astype(np.uint8)
    return CaseRow(case.case_id, score_segmentation_study(pred, truth, spacing_mm=spacing))


def aggregate_segmentation(rows: list[CaseRow], _task: TaskSpec) -> dict[str, float]:
    """The study's task-1 values over the cases.

    ``f1_grp2`` as officially; ``<region>_graph_acc`` and ``<region>_topology`` are both the
    fraction of cases whose ``<region>_match`` holds (the study's balanced accuracy against a
    reference that is "correct" for every case reduces to that fraction).
    """
    metrics = {"f1_grp2": group2_f1([row.values for row in rows])}
    for region in STUDY_REGION_LABELS:
        matched = [bool(row.values[f"{region}_match"]) for row in rows]
        fraction = float(sum(matched) / len(matched))
        metrics[f"{region}_graph_acc"] = fraction
        metrics[f"{region}_topology"] = fraction
    return metrics
