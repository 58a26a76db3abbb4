"""TopCoW 2024 metrics per case and their aggregation over the test cases (topcow.md, "Metrics").

Task 1 (segmentation) crops gold and prediction to the test ROI, then scores class-average Dice,
B0 error and HD95 over the union of labels, clDice of the merged vessel mask, group-2 detection,
edge lists (graph accuracy) and the topology match. Task 2 scores the predicted box with the
boundary IoU (ratio 0.2) and the IoU (ratio 0.5, the whole box). Task 3 compares variant strings.
Every definition follows CoWBenchmark/TopCoW_Eval_Metrics (``topcow24_eval`` @25ca839).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
from skimage.morphology import skeletonize

from rexmle.challenges.topcow.graph import LabelMapGraph, region_matches, variant_strings
from rexmle.challenges.topcow.labels import GROUP2_LABELS, REGION_EDGES, variant_string
from rexmle.challenges.topcow.roi import Box, read_roi
from rexmle.io import read_image
from rexmle.metrics.classification import balanced_accuracy
from rexmle.metrics.lesions import detection_f1, label_detection
from rexmle.metrics.overlap import per_label_dice
from rexmle.metrics.surface import per_label_hd95

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
IOU_RATIO = 0.5
REGIONS = ("anterior", "posterior")
FAIL = "FAIL"
"""The topology class of a case whose region does not match."""


# ---- Task 1 ---------------------------------------------------------------------------------


def centerline_dice(pred: npt.NDArray[np.bool_], truth: npt.NDArray[np.bool_]) -> float:
    """clDice of two binary 3-D masks (skeletons by scikit-image's 3-D Lee thinning).

    Definition: Tprec = |skel(P) ∩ G| / |skel(P)|, Tsens = |skel(G) ∩ P| / |skel(G)|;
        clDice = 2·Tprec·Tsens / (Tprec + Tsens).
    Units: none, in [0, 1]; higher is better.
    Empty: Tprec (Tsens) = 0 when skel(P) (skel(G)) is empty; clDice = 0 when Tprec + Tsens = 0.
    Follows: TopCoW 2024 ``clDice`` (merged foreground of all labels, arrays in (x, y, z) index
        order, ``skeletonize`` on a 3-D array = Lee 1994, as ``skeletonize_3d``).
    Differs: none.

    Args:
        pred: predicted mask in (x, y, z) order.
        truth: reference mask, same shape.

    Returns:
        The clDice.

    Raises:
        ValueError: the shapes differ.
    """
    if pred.shape != truth.shape:
        msg = f"pred has shape {pred.shape} but truth has {truth.shape}"
        raise ValueError(msg)
    skel_pred = skeletonize(pred) if pred.any() else pred
    skel_truth = skeletonize(truth) if truth.any() else truth
    n_pred, n_truth = int(np.count_nonzero(skel_pred)), int(np.count_nonzero(skel_truth))
    tprec = int(np.count_nonzero(skel_pred & truth)) / n_pred if n_pred else 0.0
    tsens = int(np.count_nonzero(skel_truth & pred)) / n_truth if n_truth else 0.0
    if tprec + tsens == 0:
        return 0.0
    return 2.0 * tprec * tsens / (tprec + tsens)


def score_segmentation(
    pred: npt.NDArray[np.integer],
    truth: npt.NDArray[np.integer],
    *,
    spacing_mm: Sequence[float],
) -> dict[str, object]:
    """Task-1 values of one case on label maps already cropped to the ROI.

    Per case, with L = labels present in G or P (background excluded): ``dice``, ``b0_error``,
    ``hd95`` = means over L of Dice_l, |b0(P_l) − b0(G_l)| (26-connectivity) and HD95_l (90 mm for
    a label absent on one side), 0 each when L is empty; ``cldice`` of the merged foregrounds;
    the group-2 outcome per label (``grp2_<l>``: TP/FP/FN/TN at IoU ≥ 0.25); the GT and predicted
    variant strings; whether each topology region matches.

    Args:
        pred: cropped predicted label map, uint8, (x, y, z) order.
        truth: cropped reference label map, same shape and dtype.
        spacing_mm: reference spacing per array axis.

    Returns:
        Mapping of per-case values (floats, outcome strings, variant strings).
    """
    dice_per_label = per_label_dice(pred, truth)
    hd95_per_label = per_label_hd95(
        pred, truth, spacing_mm=spacing_mm, absent_value_mm=HD95_ABSENT_MM
    )
    pred_graph, truth_graph = LabelMapGraph(pred), LabelMapGraph(truth)
    labels = sorted(pred_graph.present | truth_graph.present)
    b0_per_label = {lab: abs(pred_graph.b0(lab) - truth_graph.b0(lab)) for lab in labels}

    def mean_over_labels(values: dict[int, float] | dict[int, int]) -> float:
        return float(np.mean([values[lab] for lab in labels])) if labels else 0.0

    result: dict[str, object] = {
        "dice": mean_over_labels(dice_per_label),
        "cldice": centerline_dice(pred > 0, truth > 0),
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
    gold = read_image(gold_path)
    window = read_roi(roi_path).crop(gold.geometry.shape)
    spacing = gold.geometry.spacing_mm[:3]
    truth = np.asarray(gold.array)[window].astype(np.uint8)
    del gold
    pred = np.asarray(read_image(pred_path).array)[window].astype(np.uint8)
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
    return metrics


# ---- Task 2 ---------------------------------------------------------------------------------


def _overlap_voxels(first: tuple[list[int], list[int]], second: tuple[list[int], list[int]]) -> int:
    """Voxels in the intersection of two inclusive boxes given as (lower corner, upper corner)."""
    count = 1
    for lo_a, hi_a, lo_b, hi_b in zip(first[0], first[1], second[0], second[1], strict=True):
        extent = min(hi_a, hi_b) - max(lo_a, lo_b) + 1
        if extent <= 0:
            return 0
        count *= extent
    return count


def _box_and_core(
    box: Box, ratio: float
) -> tuple[tuple[list[int], list[int]], tuple[list[int], list[int]] | None]:
    lower = list(box.location)
    upper = [lo + s - 1 for lo, s in zip(box.location, box.size, strict=True)]
    depth = [math.ceil(s * ratio) for s in box.size]
    core_lower = [lo + d for lo, d in zip(lower, depth, strict=True)]
    core_upper = [u - d for u, d in zip(upper, depth, strict=True)]
    core = (
        None
        if any(hi < lo for lo, hi in zip(core_lower, core_upper, strict=True))
        else (core_lower, core_upper)
    )
    return (lower, upper), core


def boundary_iou(first: Box, second: Box, *, ratio: float) -> float:
    """IoU of the boundary shells of two voxel boxes, in closed form.

    Definition: the shell of a box with size s and location l holds the voxels v of the box
        [l, l + s − 1] with v_i − l_i < d_i or (l_i + s_i − 1) − v_i < d_i on some axis i,
        d_i = ceil(s_i · ratio) (computed as ``math.ceil(s * ratio)``, as the official code).
        Boundary IoU = |shell(A) ∩ shell(B)| / |shell(A) ∪ shell(B)|, counted with
        core(X) = X shrunk by d_i on both sides: |shell(A) ∩ shell(B)| = |A∩B| − |core(A)∩B|
        − |A∩core(B)| + |core(A)∩core(B)|, |shell(X)| = |X| − |core(X)|.
    Units: none, in [0, 1]; higher is better. ratio 0.5 empties the core: plain box IoU.
    Empty: never (sizes ≥ 1 give non-empty shells).
    Follows: TopCoW 2024 Task 2 ``boundary_iou_from_tuple`` (ratio 0.2 for ``Boundary_IoU``,
        0.5 for ``IoU``); boxes unclipped, negative or out-of-volume coordinates allowed.
    Differs: no voxel sets are built (identical counts).

    Args:
        first: one box.
        second: the other box.
        ratio: boundary depth as a fraction of each side, in (0, 0.5].

    Returns:
        The boundary IoU.

    Raises:
        ValueError: a size is below 1 or the ratio is outside (0, 0.5].
    """
    if not 0.0 < ratio <= 0.5:
        msg = f"ratio must be in (0, 0.5], got {ratio}"
        raise ValueError(msg)
    if min(*first.size, *second.size) < 1:
        msg = f"box sizes must be >= 1, got {first.size} and {second.size}"
        raise ValueError(msg)
    box_a, core_a = _box_and_core(first, ratio)
    box_b, core_b = _box_and_core(second, ratio)
    volume_a = math.prod(first.size)
    volume_b = math.prod(second.size)
    shell_a = volume_a - (_overlap_voxels(core_a, core_a) if core_a else 0)
    shell_b = volume_b - (_overlap_voxels(core_b, core_b) if core_b else 0)
    intersection = _overlap_voxels(box_a, box_b)
    if core_a:
        intersection -= _overlap_voxels(core_a, box_b)
    if core_b:
        intersection -= _overlap_voxels(box_a, core_b)
    if core_a and core_b:
        intersection += _overlap_voxels(core_a, core_b)
    return intersection / (shell_a + shell_b - intersection)


def score_box(pred: Box, truth: Box) -> dict[str, float]:
    """Task-2 values of one case: ``boundary_iou`` (ratio 0.2) and ``iou`` (ratio 0.5)."""
    return {
        "boundary_iou": boundary_iou(truth, pred, ratio=BOUNDARY_RATIO),
        "iou": boundary_iou(truth, pred, ratio=IOU_RATIO),
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
    return metrics
