"""TopCoW 2024 metrics per case and their aggregation over the test cases (topcow.md, "Metrics").

Task 1 (segmentation) crops gold and prediction to the test ROI, then scores class-average Dice,
B0 error and HD95 over the union of labels, clDice of the merged vessel mask, group-2 detection,
edge lists (graph accuracy) and the topology match. Task 2 scores the predicted box with the
boundary IoU (ratio 0.2) and the IoU (ratio 0.5, the whole box). Task 3 compares variant strings.
Every definition follows CoWBenchmark/TopCoW_Eval_Metrics (``topcow24_eval`` @25ca839). The YAML
declares which values are means over the cases; the ``aggregate_*`` functions give the others.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from rexmle.io import read_image
from rexmle.metrics.boxes import boundary_iou, box_iou
from rexmle.metrics.classification import balanced_accuracy
from rexmle.metrics.lesions import detection_f1, label_detection
from rexmle.metrics.overlap import per_label_dice
from rexmle.metrics.surface import per_label_hd95
from rexmle.metrics.topology import cldice, per_label_b0_error
from rexmle.tasks.jobs import ScoreCase
from rexmle.tasks.rows import CaseRow, CaseValue
from rexmle.tasks.spec import TaskSpec

from .graph import LabelMapGraph, region_matches, variant_strings
from .labels import GROUP2_LABELS, REGION_EDGES, variant_string
from .roi import Box, read_roi

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
) -> dict[str, CaseValue]:
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

    result: dict[str, CaseValue] = {
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


def score_segmentation_case(case: ScoreCase) -> CaseRow:
    """Read, crop and score one Task-1 case against gold inside its ROI (``private/roi/``).

    The prediction's own geometry is ignored except for its size (official: the GT geometry is
    copied onto it); both maps are cropped to the ROI clipped to the volume and cast to uint8.
    """
    pred_path, gold_path = case.file_pair()
    roi_path = case.private / "roi" / f"topcow_{case.params['scan']}_{case.case_id}.txt"
    gold = read_image(gold_path, reader="simpleitk")
    window = read_roi(roi_path).crop(gold.geometry.shape)
    spacing = gold.geometry.spacing_mm[:3]
    truth = np.asarray(gold.array)[window].astype(np.uint8)
    del gold
    pred = np.asarray(read_image(pred_path, reader="simpleitk").array)[window].astype(np.uint8)
    return CaseRow(case.case_id, score_segmentation(pred, truth, spacing_mm=spacing))


def aggregate_segmentation(rows: list[CaseRow], _task: TaskSpec) -> dict[str, float]:
    """The Task-1 values over all cases (``dice``, ``cldice``, ``b0_error``, ``hd95`` are means).

    ``f1_grp2``: per group-2 label, TP/FP/FN summed over cases, F1 = 2TP/(2TP+FP+FN) (0 if all
    are 0), mean over the four labels. ``*_graph_acc``: balanced accuracy of predicted vs GT
    variant strings. ``*_topology``: balanced accuracy with the prediction = the GT string when
    the region matches, else ``FAIL``.
    """
    cases = [row.values for row in rows]
    metrics: dict[str, float] = {"f1_grp2": group2_f1(cases)}
    for region in REGIONS:
        truth = [str(c[f"gt_{region}"]) for c in cases]
        pred = [str(c[f"pred_{region}"]) for c in cases]
        topology = [
            t if bool(c[f"{region}_match"]) else FAIL for t, c in zip(truth, cases, strict=True)
        ]
        metrics[f"{region}_graph_acc"] = balanced_accuracy(pred, truth)
        metrics[f"{region}_topology"] = balanced_accuracy(topology, truth)
    return metrics


def group2_f1(cases: Sequence[dict[str, CaseValue]]) -> float:
    """``f1_grp2``: per group-2 label TP/FP/FN summed over the cases' ``grp2_<c>`` outcomes,
    F1 = 2TP/(2TP+FP+FN) (0 if all are 0), mean over the four labels.
    """
    f1_values = []
    for label in GROUP2_LABELS:
        outcomes = [str(c[f"grp2_{label}"]) for c in cases]
        f1_values.append(
            detection_f1(outcomes.count("TP"), outcomes.count("FP"), outcomes.count("FN"))
        )
    return float(np.mean(f1_values))


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


def read_box(path: Path) -> Box:
    """A submitted (or gold) box file ``{"size": [...], "location": [...]}``, already validated."""
    payload = json.loads(path.read_text(encoding="utf-8"))
    size, location = payload["size"], payload["location"]
    return Box(size=(size[0], size[1], size[2]), location=(location[0], location[1], location[2]))


def score_box_case(case: ScoreCase) -> CaseRow:
    """Task-2 values of one case (the YAML declares both as means over the cases)."""
    pred_path, gold_path = case.file_pair()
    return CaseRow(case.case_id, dict(score_box(read_box(pred_path), read_box(gold_path))))


# ---- Task 3 ---------------------------------------------------------------------------------


def score_edges(
    pred: dict[str, dict[str, int]], truth: dict[str, dict[str, int]]
) -> dict[str, CaseValue]:
    """Task-3 values of one case: GT and predicted variant strings of both regions."""
    result: dict[str, CaseValue] = {}
    for region in REGIONS:
        edges = REGION_EDGES[region]
        result[f"gt_{region}"] = variant_string(region, [truth[region][e] for e in edges])
        result[f"pred_{region}"] = variant_string(region, [pred[region][e] for e in edges])
        result[f"{region}_correct"] = result[f"gt_{region}"] == result[f"pred_{region}"]
    return result


def score_edges_case(case: ScoreCase) -> CaseRow:
    """Task-3 values of one case from the submitted and the gold edge-list files."""
    pred_path, gold_path = case.file_pair()
    pred = json.loads(pred_path.read_text(encoding="utf-8"))
    truth = json.loads(gold_path.read_text(encoding="utf-8"))
    return CaseRow(case.case_id, score_edges(pred, truth))


def aggregate_edges(rows: list[CaseRow], _task: TaskSpec) -> dict[str, float]:
    """``anterior_acc`` / ``posterior_acc``: balanced accuracy of the variant strings."""
    metrics = {}
    for region in REGIONS:
        truth = [str(row.values[f"gt_{region}"]) for row in rows]
        pred = [str(row.values[f"pred_{region}"]) for row in rows]
        metrics[f"{region}_acc"] = balanced_accuracy(pred, truth)
    return metrics
