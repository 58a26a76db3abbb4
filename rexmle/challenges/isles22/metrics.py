"""ISLES'22 metrics per case and their aggregation (spec isles22.md, "Metrics").

Per case, with G the gold mask and P the prediction (26-connectivity for lesions):
``dice``, ``lesion_f1``, ``lesion_count_diff`` and ``abs_volume_diff`` (mL, voxel volume = product
of the first three zooms of the GT file / 1000). The YAML declares each aggregated by its mean.
"""

from __future__ import annotations

import math

import numpy as np

from rexmle.io import read_image
from rexmle.metrics.lesions import lesion_count_difference, lesion_f1
from rexmle.metrics.overlap import absolute_volume_difference_ml, dice
from rexmle.tasks.jobs import ScoreCase
from rexmle.tasks.rows import CaseRow, CaseValue


def score_case(case: ScoreCase) -> CaseRow:
    """The four metrics of one case."""
    pred_path, gold_path = case.file_pair()
    gold = read_image(gold_path)
    truth = np.asarray(gold.array) == 1
    pred = np.asarray(read_image(pred_path).array) == 1
    voxel_ml = math.prod(gold.spacing_mm[:3]) / 1000.0
    values: dict[str, CaseValue] = {
        "dice": dice(pred, truth, empty_value=1.0),
        "lesion_f1": lesion_f1(pred, truth, connectivity=26),
        "lesion_count_diff": float(lesion_count_difference(pred, truth, connectivity=26)),
        "abs_volume_diff": absolute_volume_difference_ml(pred, truth, voxel_volume_ml=voxel_ml),
    }
    return CaseRow(case_id=case.case_id, values=values)
