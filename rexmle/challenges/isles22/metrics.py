"""ISLES'22 metrics per case and their aggregation (spec isles22.md, "Metrics").

Per case, with G the gold mask and P the prediction (26-connectivity for lesions):
``dice``, ``lesion_f1``, ``lesion_count_diff`` and ``abs_volume_diff`` (mL, voxel volume = product
of the first three zooms of the GT file / 1000). Aggregation: arithmetic mean over test cases.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from rexmle.io import read_image
from rexmle.metrics.lesions import lesion_count_difference, lesion_f1
from rexmle.metrics.overlap import absolute_volume_difference_ml, dice

KEYS = ("dice", "lesion_f1", "lesion_count_diff", "abs_volume_diff")


def score_case(case: tuple[str, Path, Path]) -> dict[str, object]:
    """Metrics of one case; ``case`` = (case id, prediction path, gold path)."""
    case_id, pred_path, gold_path = case
    gold = read_image(gold_path)
    truth = np.asarray(gold.array) == 1
    pred = np.asarray(read_image(pred_path).array) == 1
    voxel_ml = math.prod(gold.spacing_mm[:3]) / 1000.0
    return {
        "case_id": case_id,
        "dice": dice(pred, truth, empty_value=1.0),
        "lesion_f1": lesion_f1(pred, truth, connectivity=26),
        "lesion_count_diff": float(lesion_count_difference(pred, truth, connectivity=26)),
        "abs_volume_diff": absolute_volume_difference_ml(pred, truth, voxel_volume_ml=voxel_ml),
    }


def aggregate(cases: list[dict[str, object]]) -> dict[str, float]:
    """Arithmetic mean of every key over the cases."""
    return {key: float(np.mean([float(c[key]) for c in cases])) for key in KEYS}  # type: ignore[arg-type]
