"""Mini raw fixture of LDCT-IQA: the extracted training archive and the official test archive.

``LDCTIQAG2023_train/image/0000.tif … 0011.tif`` (float32 32 x 32) with ``train.json``, and
``LDCTIQAC_test/images/0000.tiff … 0005.tiff`` with ``test.json`` (six images, one tied score).
Quality is tied to noise: score = 4 - 2 x noise sd (rounded to the 0.2 steps of the real scale),
so a model can learn it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import tifffile

TRAIN_SCORES = [0.0, 0.4, 0.8, 1.2, 1.6, 2.0, 2.4, 2.8, 3.2, 3.6, 4.0, 2.0]
TEST_SCORES = [0.6, 1.4, 2.2, 2.2, 3.0, 3.8]


def _slice(rng: np.random.Generator, score: float) -> np.ndarray:
    y, x = np.mgrid[:32, :32]
    body = ((x - 16) ** 2 / 196 + (y - 16) ** 2 / 121 <= 1).astype(np.float32)
    organ = ((x - 19) ** 2 + (y - 14) ** 2 <= 16).astype(np.float32)
    clean = 0.3 * body + 0.3 * organ
    noise_sd = (4.0 - score) / 20.0
    return (clean + rng.normal(0.0, noise_sd, clean.shape)).astype(np.float32)


def make_fixture(raw_dir: Path, *, seed: int = 0) -> None:
    """Write both extracted archives under ``raw_dir``.

    Seed 0 gives the fixed ``TEST_SCORES``; any other seed (a prepare's secret) draws them.
    """
    rng = np.random.default_rng(seed)
    train = raw_dir / "LDCTIQAG2023_train"
    (train / "image").mkdir(parents=True)
    labels = {}
    for i, score in enumerate(TRAIN_SCORES):
        name = f"{i:04d}.tif"
        tifffile.imwrite(train / "image" / name, _slice(rng, score))
        labels[name] = score
    (train / "train.json").write_text(json.dumps(labels, indent=1), encoding="utf-8")
    test = raw_dir / "LDCTIQAC_test"
    (test / "images").mkdir(parents=True)
    labels = {}
    test_scores = TEST_SCORES
    if seed != 0:  # a secret seed also draws the test scores (on the 0.2 steps of the scale)
        steps = np.random.default_rng([seed, 1]).integers(0, 21, size=len(TEST_SCORES))
        test_scores = [round(0.2 * int(step), 1) for step in steps]
    for i, score in enumerate(test_scores):
        name = f"{i:04d}.tiff"
        tifffile.imwrite(test / "images" / name, _slice(rng, score))
        labels[name] = score
    (test / "test.json").write_text(json.dumps(labels, indent=1), encoding="utf-8")
