"""Non-LLM baseline for USenhance: a 5 x 5 linear filter learned by least squares.

Model: the enhanced pixel is an affine function of the 5 x 5 low-quality neighbourhood (26
coefficients, reflect border), fitted jointly over all training pairs with numpy's least squares,
then clipped to [0, 255] and rounded to uint8.
"""

from __future__ import annotations

import numpy as np
from PIL import Image

from rexmle.tasks.jobs import BaselineJob

from .submission import read_gray_png

RADIUS = 2


def _design(low: np.ndarray) -> np.ndarray:
    padded = np.pad(low.astype(np.float64), RADIUS, mode="reflect")
    h, w = low.shape
    columns = [
        padded[dy : dy + h, dx : dx + w].ravel()
        for dy in range(2 * RADIUS + 1)
        for dx in range(2 * RADIUS + 1)
    ]
    columns.append(np.ones(h * w))
    return np.stack(columns, axis=1)


def solve(job: BaselineJob) -> None:
    """Fit on ``train/{low,high}_quality`` and write enhanced PNGs for ``test/low_quality``."""
    public_dir, submission_dir = job.public, job.submission
    lows = sorted((public_dir / "train" / "low_quality").glob("*.png"))
    x = np.concatenate([_design(read_gray_png(p)) for p in lows])
    y = np.concatenate(
        [read_gray_png(public_dir / "train" / "high_quality" / p.name).ravel() for p in lows]
    ).astype(np.float64)
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    out_dir = submission_dir / "enhanced"
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for image_id in job.test_ids():
        low = read_gray_png(public_dir / "test" / "low_quality" / f"{image_id}.png")
        enhanced = np.clip(np.rint(_design(low) @ coef), 0, 255).astype(np.uint8)
        Image.fromarray(enhanced.reshape(low.shape)).save(out_dir / f"{image_id}.png")
        rows.append((image_id, f"enhanced/{image_id}.png"))
    job.write_submission_csv(rows)
