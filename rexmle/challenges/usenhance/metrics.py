"""USenhance metrics per image (spec usenhance.md): LNCC, SSIM, PSNR on 8-bit images; means."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rexmle.challenges.usenhance.submission import read_gray_png
from rexmle.metrics.image import lncc, psnr, ssim

KEYS = ("lncc", "ssim", "psnr")


def score_case(case: tuple[str, Path, Path]) -> dict[str, object]:
    """Metrics of one image; ``case`` = (id, prediction path, gold path)."""
    case_id, pred_path, gold_path = case
    pred = read_gray_png(pred_path).astype(np.float64)
    truth = read_gray_png(gold_path).astype(np.float64)
    return {
        "case_id": case_id,
        "lncc": lncc(pred, truth),
        "ssim": ssim(pred, truth, data_range=255.0),
        "psnr": psnr(pred, truth, data_range=255.0),
    }


def aggregate(cases: list[dict[str, object]]) -> dict[str, float]:
    """Arithmetic mean of every key over the images."""
    return {key: float(np.mean([float(c[key]) for c in cases])) for key in KEYS}  # type: ignore[arg-type]
