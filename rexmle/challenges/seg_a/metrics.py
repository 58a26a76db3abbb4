"""SEG.A 2023 metrics per case and their aggregation (spec seg_a.md, "Metrics").

No official per-case code is public; the chosen definition, per case with G the gold mask and
P the prediction (foreground = 1) on the gold grid and spacing:

- ``dsc`` = 2·|G∩P| / (|G| + |P|) (`rexmle.metrics.overlap.dice`; G is never empty).
- ``hd`` = symmetric Hausdorff distance (maximum) in mm between the 6-neighbourhood voxel
  surfaces, array border as background (`rexmle.metrics.surface.hausdorff_distance`, the
  `evalutils.stats.hausdorff_distance(connectivity=1)` definition); an empty prediction gets
  the length of the volume diagonal.

The arrays are in (x, y, z) order with the spacing in the same order, which is the spec's
(z, y, x) arrays with (s_z, s_y, s_x): distances do not depend on the order of the axes.

Aggregation (declared in the YAML): ``hd_50pc`` and ``dsc_50pc`` are medians of the cases' ``hd``
and ``dsc`` (`numpy.median`: the mean of the two middle values for an even count). Never ranked:
``dsc_mean`` and ``hd_mean`` (means), ``dsc_std`` and ``hd_std`` (population standard deviation,
ddof = 0; :func:`aggregate`).
"""

from __future__ import annotations

import numpy as np

from rexmle.io import read_image
from rexmle.metrics.overlap import dice
from rexmle.metrics.surface import hausdorff_distance
from rexmle.tasks.jobs import ScoreCase
from rexmle.tasks.rows import CaseRow, CaseValue, column
from rexmle.tasks.spec import TaskSpec


def score_case(case: ScoreCase) -> CaseRow:
    """``dsc`` and ``hd`` of one case, on the gold grid and spacing (both read by SimpleITK)."""
    pred, truth, spacing = read_case(case)
    return CaseRow(case_id=case.case_id, values=case_values(pred, truth, spacing))


def read_case(case: ScoreCase) -> tuple[np.ndarray, np.ndarray, tuple[float, ...]]:
    """The (prediction, gold) foreground masks in C order and the gold spacing in mm."""
    pred_path, gold_path = case.file_pair()
    gold = read_image(gold_path, reader="simpleitk")
    # C order whatever the file format (NIfTI arrives in Fortran order)
    truth = np.ascontiguousarray(np.asarray(gold.array) == 1)
    pred = np.ascontiguousarray(np.asarray(read_image(pred_path, reader="simpleitk").array) == 1)
    return pred, truth, tuple(float(s) for s in gold.spacing_mm)


def case_values(
    pred: np.ndarray, truth: np.ndarray, spacing: tuple[float, ...], *, directed: bool = False
) -> dict[str, CaseValue]:
    """``dsc`` and ``hd`` (``directed``: prediction to gold only) with ``spacing`` per axis."""
    return {
        "dsc": dice(pred, truth, empty_value=1.0),
        "hd": hausdorff_distance(
            pred, truth, spacing_mm=spacing, surface_connectivity=6, directed=directed
        ),
    }


def aggregate(rows: list[CaseRow], _task: TaskSpec) -> dict[str, float]:
    """``dsc_std`` and ``hd_std``: population standard deviations (ddof 0) over the cases."""
    return {
        "dsc_std": float(np.std(column(rows, "dsc"))),
        "hd_std": float(np.std(column(rows, "hd"))),
    }
