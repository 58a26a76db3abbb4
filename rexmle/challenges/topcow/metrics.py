"""TopCoW 2024 metrics per case and their aggregation over the test cases (topcow.md, "Metrics").

Task 1 (segmentation) crops gold and prediction to the test ROI, then scores class-average Dice,
B0 error and HD95 over the union of labels, clDice of the merged vessel mask, group-2 detection,
edge lists (graph accuracy) and the topology match. Task 2 scores the predicted box with the
boundary IoU (ratio 0.2) and the IoU (ratio 0.5, the whole box). Task 3 compares variant strings.
Every definition follows CoWBenchmark/TopCoW_Eval_Metrics (``topcow24_eval`` @25ca839).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from rexmle.challenges.topcow.graph import LabelMapGraph, region_matches, variant_strings
from rexmle.challenges.topcow.labels import GROUP2_LABELS, REGION_EDGES, variant_string
from rexmle.challenges.topcow.roi import Box, read_roi
from rexmle.io import read_image
from rexmle.metrics.boxes import boundary_iou, box_iou
from rexmle.metrics.classification import balanced_accuracy
from rexmle.metrics.lesions import detection_f1, label_detection
from rexmle.metrics.overlap import per_label_dice
from rexmle.metrics.surface import per_label_hd95
from rexmle.metrics.topology import cldice, per_label_b0_error

SEG_KEYS = (
    "dice",
    "cldice",
    "b0_error",
    "hd95",
    "f1_grp2",
    "anterior_graph_acc",
    "posterior_graph_acc",
    "anterior_topology",
    "posterior_topology",
)
BOX_KEYS = ("boundary_iou", "iou")
EDGE_KEYS = ("anterior_acc", "posterior_acc")
HD95_ABSENT_MM = 90.0
"""HD95 of a label present on one side only (official TopCoW bound)."""
BOUNDARY_RATIO = 0.2
REGIONS = ("anterior", "posterior")
FAIL = "FAIL"
"""The topology class of a case whose region does not match."""


# ---- Task 1 ---------------------------------------------------------------------------------


FOREGROUND_MARGIN = 2
"""Background voxels kept around the union foreground (clDice skeletons use a 2-voxel margin)."""


def foreground_window(
    pred: npt.NDArray[np.integer], truth: npt.NDArray[np.integer], *, margin: int
) -> tuple[slice, ...]:
    """Slices of the bounding box of ``(pred > 0) | (truth > 0)``, grown by ``margin``, clipped.

    An all-background pair gives the whole array.
    """
    window = []
    for axis in range(pred.ndim):
        others = tuple(a for a in range(pred.ndim) if a != axis)
        present = np.flatnonzero(np.any(pred, axis=others) | np.any(truth, axis=others))
        if present.size == 0:
            return tuple(slice(None) for _ in range(pred.ndim))
        start = max(int(present[0]) - margin, 0)
        stop = min(int(present[-1]) + 1 + margin, pred.shape[axis])
        window.append(slice(start, stop))
    return tuple(window)


def score_segmentation(
    pred: npt.NDArray[np.integer],
    truth: npt.NDArray[np.integer],
    *,
    spacing_mm: Sequence[float],
) -> dict[str, object]:
    """Task-1 values of one case, on label maps already cropped to the test ROI.

    Definition: with L = labels present in G or P (background excluded): ``dice``, ``b0_error``,
        ``hd95`` = means over L of Dice_l, |b0(P_l) − b0(G_l)| (26-connected components) and
        HD95_l (symmetric, 26-neighbourhood surfaces, numpy-interpolated 95th percentile);
        ``cldice`` of the merged foregrounds (P > 0, G > 0); ``grp2_<c>`` = the detection outcome
        (TP/FP/FN/TN at IoU ≥ 0.25) of c ∈ {8, 9, 10, 15}; ``gt_<region>`` / ``pred_<region>`` =
        the variant strings of the edge lists; ``<region>_match`` = the topology verdict
        (:func:`rexmle.challenges.topcow.graph.region_matches`).
    Units: Dice and clDice in [0, 1] (higher is better); B0 error in components and HD95 in mm
        (lower is better).
    Empty: a label absent on one side has Dice 0, HD95 90 mm and B0 error = the other side's
        component count; L empty gives 0 for the three means; an empty skeleton gives clDice 0.
    Follows: TopCoW 2024 ``score_case_task_1_seg`` (CoWBenchmark/TopCoW_Eval_Metrics @25ca839).
    Differs: none. Both maps are first cropped to the bounding box of their union foreground
        plus 2 voxels, which changes no value: every rule treats the array border as background
        (the official zero padding) and clDice skeletonises each mask inside its own box plus 2
        voxels anyway.

    Args:
        pred: cropped predicted label map, uint8, (x, y, z) order.
        truth: cropped reference label map, same shape and dtype.
        spacing_mm: reference spacing per array axis, in mm.

    Returns:
        Mapping of per-case values (floats, outcome strings, variant strings, booleans).
    """
    window = foreground_window(pred, truth, margin=FOREGROUND_MARGIN)
    pred, truth = pred[window], truth[window]
    dice_per_label = per_label_dice(pred, truth)
    hd95_per_label = per_label_hd95(
        pred, truth, spacing_mm=spacing_mm, absent_value_mm=HD95_ABSENT_MM
    )
    pred_graph, truth_graph = LabelMapGraph(pred), LabelMapGraph(truth)
    labels = sorted(pred_graph.present | truth_graph.present)
    b0_per_label = per_label_b0_error(pred, truth, connectivity=26)

    def mean_over_labels(values: dict[int, float] | dict[int, int]) -> float:
        return float(np.mean([values[lab] for lab in labels])) if labels else 0.0

    result: dict[str, object] = {
        "dice": mean_over_labels(dice_per_label),
        "cldice": cldice(pred > 0, truth > 0),
        "b0_error": mean_over_labels(b0_per_label),
        "hd95": mean_over_labels(hd95_per_label),
    }
    for label in GROUP2_LABELS:
        result[f"grp2_{label}"] = str(label_detection(pred, truth, label, iou_threshold=0.25))
    truth_variants = variant_strings(truth_graph.bits)
    pred_variants = variant_strings(pred_graph.bits)
    for region in REGIONS:
        result[f"gt_{region}"] = truth_variants[region]
        result[f"pred_{region}"] = pred_variants[region]
        result[f"{region}_match"] = region_matches(pred_graph, truth_graph, region)
    return result


def score_segmentation_case(item: tuple[str, Path, Path, Path]) -> dict[str, object]:
    """Read, crop and score one Task-1 case; ``item`` = (id, prediction, gold, ROI file).

    The prediction's own geometry is ignored except for its size (official: the GT geometry is
    copied onto it); both maps are cropped to the ROI clipped to the volume and cast to uint8.
    """
    case_id, pred_path, gold_path, roi_path = item
    gold = read_image(gold_path, reader="simpleitk")
    window = read_roi(roi_path).crop(gold.geometry.shape)
    spacing = gold.geometry.spacing_mm[:3]
    truth = np.asarray(gold.array)[window].astype(np.uint8)
    del gold
    pred = np.asarray(read_image(pred_path, reader="simpleitk").array)[window].astype(np.uint8)
    return {"case_id": case_id, **score_segmentation(pred, truth, spacing_mm=spacing)}


def aggregate_segmentation(cases: list[dict[str, object]]) -> dict[str, float]:
    """The nine Task-1 leaderboard values from the per-case rows.

    ``dice``, ``cldice``, ``b0_error``, ``hd95``: means over cases. ``f1_grp2``: per group-2
    label, TP/FP/FN summed over cases, F1 = 2TP/(2TP+FP+FN) (0 if all are 0), mean over the four
    labels. ``*_graph_acc``: balanced accuracy of predicted vs GT variant strings.
    ``*_topology``: balanced accuracy with the prediction = the GT string when the region matches,
    else ``FAIL``.
    """
    metrics = {
        key: float(np.mean([float(c[key]) for c in cases]))  # type: ignore[arg-type]
        for key in ("dice", "cldice", "b0_error", "hd95")
    }
    f1_values = []
    for label in GROUP2_LABELS:
        outcomes = [str(c[f"grp2_{label}"]) for c in cases]
        f1_values.append(
            detection_f1(outcomes.count("TP"), outcomes.count("FP"), outcomes.count("FN"))
        )
    metrics["f1_grp2"] = float(np.mean(f1_values))
    for region in REGIONS:
        truth = [str(c[f"gt_{region}"]) for c in cases]
        pred = [str(c[f"pred_{region}"]) for c in cases]
        topology = [
            t if bool(c[f"{region}_match"]) else FAIL for t, c in zip(truth, cases, strict=True)
        ]
        metrics[f"{region}_graph_acc"] = balanced_accuracy(pred, truth)
        metrics[f"{region}_topology"] = balanced_accuracy(topology, truth)
    return {key: metrics[key] for key in SEG_KEYS}


# ---- Task 2 ---------------------------------------------------------------------------------


def score_box(pred: Box, truth: Box) -> dict[str, float]:
    """Task-2 values of one case: ``boundary_iou`` (shell ratio 0.2) and ``iou``.

    Both follow ``boundary_iou_from_tuple`` of the official code (``iou`` is its ratio 0.5, whose
    shell is the whole box, i.e. the plain box IoU); boxes are used unclipped.
    """
    first = (list(truth.location), list(truth.size))
    second = (list(pred.location), list(pred.size))
    return {
        "boundary_iou": boundary_iou(*first, *second, ratio=BOUNDARY_RATIO),
        "iou": box_iou(*first, *second),
    }


def aggregate_boxes(cases: list[dict[str, object]]) -> dict[str, float]:
    """Means of the per-case ``boundary_iou`` and ``iou``."""
    return {key: float(np.mean([float(c[key]) for c in cases])) for key in BOX_KEYS}  # type: ignore[arg-type]


# ---- Task 3 ---------------------------------------------------------------------------------


def score_edges(
    pred: dict[str, dict[str, int]], truth: dict[str, dict[str, int]]
) -> dict[str, object]:
    """Task-3 values of one case: GT and predicted variant strings of both regions."""
    result: dict[str, object] = {}
    for region in REGIONS:
        edges = REGION_EDGES[region]
        result[f"gt_{region}"] = variant_string(region, [truth[region][e] for e in edges])
        result[f"pred_{region}"] = variant_string(region, [pred[region][e] for e in edges])
        result[f"{region}_correct"] = result[f"gt_{region}"] == result[f"pred_{region}"]
    return result


def aggregate_edges(cases: list[dict[str, object]]) -> dict[str, float]:
    """``anterior_acc`` / ``posterior_acc``: balanced accuracy of the variant strings."""
    metrics = {}
    for region in REGIONS:
        truth = [str(c[f"gt_{region}"]) for c in cases]
        pred = [str(c[f"pred_{region}"]) for c in cases]
        metrics[f"{region}_acc"] = balanced_accuracy(pred, truth)
    return {key: metrics[key] for key in EDGE_KEYS}
