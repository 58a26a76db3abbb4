"""ISLES'22 metrics per case and their aggregation (spec isles22.md, "Metrics").

Per case, with G the gold mask and P the prediction (26-connectivity for lesions):
``dice``, ``lesion_f1``, ``lesion_count_diff`` and ``abs_volume_diff`` (mL, voxel volume = product
of the first three zooms of the GT file / 1000). The YAML declares each aggregated by its mean.

The voxel volume is computed as the official code computes it: the header stores the zooms as
float32 and ``np.prod`` multiplies them in float32; only the division by 1000 is in float64.
(A float64 product differs by up to ~1e-7 relative when the product is not a float32 number,
e.g. 1.2 x 1.2 x 2.0 mm.)
"""

from __future__ import annotations

import numpy as np

from rexmle.io import read_image
from rexmle.metrics.lesions import lesion_f1_from_counts, lesion_tally
from rexmle.metrics.overlap import absolute_volume_difference_ml, dice
from rexmle.tasks.jobs import ScoreCase
from rexmle.tasks.rows import CaseRow, CaseValue


def voxel_volume_ml(zooms_mm: tuple[float, ...] | list[float]) -> float:
    """The official voxel volume in mL: the float32 product of the first three zooms / 1000."""
    return float(np.prod(np.asarray(zooms_mm[:3], dtype=np.float32))) / 1000.0


def score_case(case: ScoreCase) -> CaseRow:
    """The four metrics of one case."""
    pred_path, gold_path = case.file_pair()
    gold = read_image(gold_path)
    # C order (NIfTI arrives in Fortran order): the box and component code reads rows
    truth = np.ascontiguousarray(np.asarray(gold.array) == 1)
    pred = np.ascontiguousarray(np.asarray(read_image(pred_path).array) == 1)
    voxel_ml = voxel_volume_ml(gold.spacing_mm)
    lesions = lesion_tally(pred, truth, connectivity=26)  # one labelling of each mask
    values: dict[str, CaseValue] = {
        "dice": dice(pred, truth, empty_value=1.0),
        "lesion_f1": lesion_f1_from_counts(lesions.tp, lesions.fp, lesions.fn, empty_value=1.0),
        "lesion_count_diff": float(lesions.count_difference),
        "abs_volume_diff": absolute_volume_difference_ml(pred, truth, voxel_volume_ml=voxel_ml),
    }
    return CaseRow(case_id=case.case_id, values=values)
