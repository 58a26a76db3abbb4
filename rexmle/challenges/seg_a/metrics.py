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

Aggregation: ``hd_50pc`` and ``dsc_50pc`` are medians over the test cases (`numpy.median`: the
mean of the two middle values for an even count). Extra, never ranked: ``dsc_mean``,
``dsc_std``, ``hd_mean``, ``hd_std`` (population standard deviation, ddof = 0).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rexmle.io import read_image
from rexmle.metrics.overlap import dice
from rexmle.metrics.surface import hausdorff_distance

LEADERBOARD_KEYS = ("hd_50pc", "dsc_50pc")
EXTRA_KEYS = ("dsc_mean", "dsc_std", "hd_mean", "hd_std")


def score_case(case: tuple[str, Path, Path]) -> dict[str, object]:
    """Metrics of one case; ``case`` = (case id, prediction path, gold path)."""
    case_id, pred_path, gold_path = case
    gold = read_image(gold_path, reader="simpleitk")
    # C order whatever the file format (NIfTI arrives in Fortran order)
    truth = np.ascontiguousarray(np.asarray(gold.array) == 1)
    pred = np.ascontiguousarray(np.asarray(read_image(pred_path, reader="simpleitk").array) == 1)
    spacing = tuple(float(s) for s in gold.spacing_mm)
    return {
        "case_id": case_id,
        "dsc": dice(pred, truth, empty_value=1.0),
        "hd": hausdorff_distance(pred, truth, spacing_mm=spacing, surface_connectivity=6),
    }


def aggregate(cases: list[dict[str, object]]) -> dict[str, float]:
    """Medians (leaderboard keys) and means/standard deviations (extra keys) over the cases."""
    dsc = np.asarray([float(c["dsc"]) for c in cases])  # type: ignore[arg-type]
    hd = np.asarray([float(c["hd"]) for c in cases])  # type: ignore[arg-type]
    return {
        "hd_50pc": float(np.median(hd)),
        "dsc_50pc": float(np.median(dsc)),
        "dsc_mean": float(np.mean(dsc)),
        "dsc_std": float(np.std(dsc)),
        "hd_mean": float(np.mean(hd)),
        "hd_std": float(np.std(hd)),
    }
