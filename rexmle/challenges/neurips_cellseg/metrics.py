"""NeurIPS-CellSeg metrics per image and their aggregation (spec neurips-cellseg.md, "Metrics").

Per test image and IoU threshold t in 0.5 ... 0.9: instances touching the 2-pixel border band are
removed from both maps (per 2000 x 2000 tile for images of 25 MP or more), TP_t is a maximum
one-to-one matching of pairs with IoU >= t, F1 = 2PR / (P + R) (0 when TP = 0), rounded to 4
decimals. ``f1_<t>`` is the mean of the rounded values over all test images.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rexmle.io import read_image
from rexmle.metrics.instances import (
    CELLSEG_THRESHOLDS,
    F1_DECIMALS,
    TILE_PX,
    WHOLE_IMAGE_MAX_PIXELS,
    cellseg_match_counts,
)

KEYS: tuple[str, ...] = tuple(f"f1_{t}" for t in CELLSEG_THRESHOLDS)


def image_scores(
    pred: np.ndarray,
    truth: np.ndarray,
    *,
    whole_image_max_pixels: int = WHOLE_IMAGE_MAX_PIXELS,
    tile_px: int = TILE_PX,
) -> dict[str, float | int]:
    """Rounded F1 at every threshold of one image, with the counts behind it.

    Definition: `rexmle.metrics.instances.cellseg_match_counts` at thresholds 0.5 ... 0.9,
        F1 = 0 if TP = 0 else 2PR / (P + R), then ``numpy.round(F1, 4)``.
    Units: F1 fraction in [0, 1]; counts of instances.
    Empty: GT or prediction without instances after boundary removal -> F1 = 0.
    Follows: JunMa11/NeurIPS-CellSeg ``baseline/compute_metric.py`` (@3128e96), default options.
    Differs: tiled mode keeps both maps in a wide integer type (official: the GT's dtype).

    Args:
        pred: predicted instance map (H, W), integer dtype, ids >= 0.
        truth: reference instance map, same shape.
        whole_image_max_pixels: images with at least this many pixels are tiled.
        tile_px: tile side in pixels.

    Returns:
        ``f1_<t>`` for every threshold, plus ``n_truth``, ``n_pred`` and ``tp_0.5``.
    """
    counts = cellseg_match_counts(
        pred,
        truth,
        thresholds=CELLSEG_THRESHOLDS,
        whole_image_max_pixels=whole_image_max_pixels,
        tile_px=tile_px,
    )
    row: dict[str, float | int] = {
        f"f1_{c.threshold}": float(np.round(c.f1, F1_DECIMALS)) for c in counts
    }
    row["n_truth"] = counts[0].n_truth
    row["n_pred"] = counts[0].n_pred
    row["tp_0.5"] = counts[0].true_positives
    return row


def score_case(case: tuple[str, Path, Path]) -> dict[str, object]:
    """Metrics of one case; ``case`` = (case id, prediction path, gold path)."""
    case_id, pred_path, gold_path = case
    truth = np.asarray(read_image(gold_path).array)
    pred = np.asarray(read_image(pred_path).array)
    return {"case_id": case_id, **image_scores(pred, truth)}


def aggregate(cases: list[dict[str, object]]) -> dict[str, float]:
    """Arithmetic mean of every ``f1_<t>`` over all cases."""
    return {key: float(np.mean([float(c[key]) for c in cases])) for key in KEYS}  # type: ignore[arg-type]
