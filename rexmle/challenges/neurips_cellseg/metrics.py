"""NeurIPS-CellSeg metrics per image (spec neurips-cellseg.md, "Metrics").

Per test image and IoU threshold t of ``params.iou_thresholds`` (0.5 ... 0.9): instances touching
the 2-pixel border band are removed from both maps (per 2000 x 2000 tile for images of 25 MP or
more), TP_t is a maximum one-to-one matching of pairs with IoU >= t, F1 = 2PR / (P + R) (0 when
TP = 0), rounded to 4 decimals. The YAML declares ``f1_<t>`` as the mean over all test images.
:func:`image_scores` is what grading calls per image, and what ``bench/metrics_2d.py`` times.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rexmle.io import read_image
from rexmle.metrics.instances import (
    CELLSEG_THRESHOLDS,
    F1_DECIMALS,
    TILE_PX,
    WHOLE_IMAGE_MAX_PIXELS,
    cellseg_match_counts,
)
from rexmle.tasks.jobs import ScoreCase
from rexmle.tasks.rows import CaseRow


def image_scores(
    pred: np.ndarray,
    truth: np.ndarray,
    *,
    thresholds: Sequence[float] = CELLSEG_THRESHOLDS,
    whole_image_max_pixels: int = WHOLE_IMAGE_MAX_PIXELS,
    tile_px: int = TILE_PX,
) -> dict[str, float | int]:
    """Rounded F1 at every threshold of one image, with the counts behind it.

    Definition: `rexmle.metrics.instances.cellseg_match_counts` at ``thresholds``,
        F1 = 0 if TP = 0 else 2PR / (P + R), then ``numpy.round(F1, 4)`` (the values of
        `rexmle.metrics.instances.cellseg_f1`, with the counts of one matching).
    Units: F1 fraction in [0, 1]; counts of instances.
    Empty: GT or prediction without instances after boundary removal -> F1 = 0.
    Follows: JunMa11/NeurIPS-CellSeg ``baseline/compute_metric.py`` (@3128e96), default options.
    Differs: tiled mode keeps both maps in a wide integer type (official: the GT's dtype).

    Args:
        pred: predicted instance map (H, W), integer dtype, ids >= 0.
        truth: reference instance map, same shape.
        thresholds: IoU thresholds, ascending.
        whole_image_max_pixels: images with at least this many pixels are tiled.
        tile_px: tile side in pixels.

    Returns:
        ``f1_<t>`` for every threshold, plus ``n_truth``, ``n_pred`` and ``tp_<t>`` at the
        first threshold.
    """
    counts = cellseg_match_counts(
        pred,
        truth,
        thresholds=thresholds,
        whole_image_max_pixels=whole_image_max_pixels,
        tile_px=tile_px,
    )
    row: dict[str, float | int] = {
        f"f1_{c.threshold}": float(np.round(c.f1, F1_DECIMALS)) for c in counts
    }
    row["n_truth"] = counts[0].n_truth
    row["n_pred"] = counts[0].n_pred
    row[f"tp_{counts[0].threshold}"] = counts[0].true_positives
    return row


def score_case(case: ScoreCase) -> CaseRow:
    """Rounded F1 at every declared threshold of one test image, with the counts behind it."""
    pred_path, gold_path = case.file_pair()
    truth = np.asarray(read_image(gold_path).array)
    pred = np.asarray(read_image(pred_path).array)
    thresholds = [float(t) for t in case.params["iou_thresholds"]]
    values = image_scores(pred, truth, thresholds=thresholds)
    return CaseRow(case_id=case.case_id, values=dict(values))
