"""TopBrain 2025 metrics per case and their aggregation (spec topbrain.md, "Metrics").

Follows CoWBenchmark/TopBrain_Eval_Metrics (``topbrain25_eval``, @ba4252a). Per test case, G and P
are the gold and predicted label maps cast to uint8, the prediction taking the gold geometry; the
arrays are in (x, y, z) index order (the official skeletonisation order) with the gold spacing in
the same order. L = labels present in G or in P (background excluded).

- ``dice``: mean over L of Dice_l (0 for a label on one side only) — `class_average_dice`.
- ``cldice``: mean over L of clDice_l (Lee skeletons; 0 for a label on one side only) —
  `per_label_cldice`.
- ``b0_error``: mean over L of |b0(P_l) − b0(G_l)|, 26-connectivity — `class_average_b0_error`.
- ``hd95``: mean over L of the symmetric HD95_l in mm (26-neighbourhood voxel surfaces; 290 mm
  for a label on one side only) — `class_average_hd95`.
- ``neighbor_error``: mean over the labels present in P of the number of touching labels that
  the vendored valid-neighbour table does not allow — `invalid_neighbor_error`.
- Side-road detection, per side-road label c of the track: TP / FN by IoU(G_c, P_c) ≥ 0.25 when c
  is in G, FP / TN by presence in P otherwise — `label_detection` (on the label's bounding box,
  which gives the same outcome).

Every per-case value is 0 when its label set is empty (official). Aggregation (declared in the
YAML): ``dice``, ``cldice``, ``b0_error``, ``hd95`` and ``neighbor_error`` are means over the test
cases; ``f1_side_road`` (``aggregate: dataset``) sums TP, FP, FN per side-road label over the
cases, takes F1_c = 2TP / (2TP + FP + FN) (0 when the sum is 0) and averages over all the track's
side-road labels. The track (``ct`` or ``mr``) is the task's ``params.scan``.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from rexmle.io import read_image
from rexmle.metrics.lesions import DetectionOutcome, detection_f1, label_detection
from rexmle.metrics.overlap import class_average_dice
from rexmle.metrics.surface import class_average_hd95
from rexmle.metrics.topology import (
    class_average_b0_error,
    invalid_neighbor_error,
    label_boxes,
    per_label_cldice,
)
from rexmle.tasks.jobs import ScoreCase
from rexmle.tasks.rows import CaseRow, CaseValue
from rexmle.tasks.spec import TaskSpec

from .labels import TRACKS, valid_neighbors

ABSENT_HD95_MM = 290.0
IOU_THRESHOLD = 0.25


def side_road_outcomes(
    pred: np.ndarray, truth: np.ndarray, side_road: tuple[int, ...]
) -> dict[int, DetectionOutcome]:
    """Detection outcome of every side-road label, computed on each label's bounding box."""
    boxes = label_boxes(pred, truth, margin=0)
    outcomes: dict[int, DetectionOutcome] = {}
    for label in side_road:
        box = boxes.get(label)
        if box is None:
            outcomes[label] = DetectionOutcome.TN
            continue
        outcomes[label] = label_detection(pred[box], truth[box], label, iou_threshold=IOU_THRESHOLD)
    return outcomes


def score_arrays(
    pred: np.ndarray,
    truth: np.ndarray,
    spacing_mm: tuple[float, ...],
    modality: str,
    *,
    directed_hd95: bool = False,
    neighbors_over_union: bool = False,
) -> tuple[dict[str, float], dict[int, DetectionOutcome]]:
    """Per-case values and side-road outcomes of uint8 (x, y, z) label maps.

    The keywords select the published study's variants (``study.py``): HD95 from the prediction
    to the gold only, and the neighbour error averaged over the labels of G ∪ P.
    """
    cldice_scores = per_label_cldice(pred, truth)
    union = None
    if neighbors_over_union:
        union = [int(v) for v in np.union1d(np.unique(pred), np.unique(truth)) if v != 0]
    values = {
        "dice": class_average_dice(pred, truth),
        "cldice": float(np.mean(list(cldice_scores.values()))) if cldice_scores else 0.0,
        "b0_error": class_average_b0_error(pred, truth, connectivity=26),
        "hd95": class_average_hd95(
            pred,
            truth,
            spacing_mm=spacing_mm,
            absent_value_mm=ABSENT_HD95_MM,
            directed=directed_hd95,
        ),
        "neighbor_error": invalid_neighbor_error(
            pred, valid_neighbors(modality), over_labels=union
        ),
    }
    return values, side_road_outcomes(pred, truth, TRACKS[modality].side_road)


def score_case(case: ScoreCase) -> CaseRow:
    """Metrics of one case; ``detail`` holds its side-road outcomes (label -> outcome)."""
    return score_case_with(case)


def score_case_with(
    case: ScoreCase, *, directed_hd95: bool = False, neighbors_over_union: bool = False
) -> CaseRow:
    """:func:`score_case` with the variants of :func:`score_arrays`."""
    pred_path, gold_path = case.file_pair()
    gold = read_image(gold_path, reader="simpleitk")
    # C order: NIfTI arrays arrive in Fortran order, which makes every per-label pass ~3x slower
    truth = np.ascontiguousarray(gold.array, dtype=np.uint8)
    pred = np.ascontiguousarray(read_image(pred_path, reader="simpleitk").array, dtype=np.uint8)
    spacing = tuple(float(s) for s in gold.spacing_mm)
    values, outcomes = score_arrays(
        pred,
        truth,
        spacing,
        case.params["scan"],
        directed_hd95=directed_hd95,
        neighbors_over_union=neighbors_over_union,
    )
    row: dict[str, CaseValue] = dict(values)
    for label, outcome in outcomes.items():
        row[f"side_road_{label}"] = str(outcome)
    return CaseRow(case_id=case.case_id, values=row, detail=outcomes)


def aggregate(rows: list[CaseRow], task: TaskSpec) -> dict[str, float]:
    """``f1_side_road``: the mean over the track's side-road labels of the detection F1, its TP,
    FP and FN summed over the cases (the rows' ``detail``).
    """
    f1_scores = []
    for label in TRACKS[task.params["scan"]].side_road:
        counts = Counter(row.detail[label] for row in rows)
        f1_scores.append(
            detection_f1(
                counts[DetectionOutcome.TP],
                counts[DetectionOutcome.FP],
                counts[DetectionOutcome.FN],
            )
        )
    return {"f1_side_road": float(np.mean(f1_scores))}
