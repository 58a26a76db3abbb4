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


QUIRK_TEST_FOLDER = "LDCTIQAC2023_test"
QUIRK_GROUPS = 3


def make_fixture(raw_dir: Path, *, seed: int = 0, real_quirks: bool = False) -> None:
    """Write both extracted archives under ``raw_dir``.

    Seed 0 gives the fixed ``TEST_SCORES``; any other seed (a prepare's secret) draws them.
    ``real_quirks`` writes the other known layouts with the same images and scores: train.json
    keys without the ``.tif`` suffix, and the organiser-style test set
    ``LDCTIQAC2023_test/test-ground-truth.json`` (``{"test_<k>.zip": {fnames, scores}}``) with
    the images as ``LDCTIQAC2023_test/test_<k>/<stem>.tif``.
    """
    rng = np.random.default_rng(seed)
    train = raw_dir / "LDCTIQAG2023_train"
    (train / "image").mkdir(parents=True)
    labels = {}
    for i, score in enumerate(TRAIN_SCORES):
        name = f"{i:04d}.tif"
        tifffile.imwrite(train / "image" / name, _slice(rng, score))
        labels[name[:-4] if real_quirks else name] = score
    (train / "train.json").write_text(json.dumps(labels, indent=1), encoding="utf-8")
    test_scores = TEST_SCORES
    if seed != 0:  # a secret seed also draws the test scores (on the 0.2 steps of the scale)
        steps = np.random.default_rng([seed, 1]).integers(0, 21, size=len(TEST_SCORES))
        test_scores = [round(0.2 * int(step), 1) for step in steps]
    slices = [(f"{i:04d}", score, _slice(rng, score)) for i, score in enumerate(test_scores)]
    if real_quirks:
        _write_ground_truth_layout(raw_dir / QUIRK_TEST_FOLDER, slices)
        return
    test = raw_dir / "LDCTIQAC_test"
    (test / "images").mkdir(parents=True)
    labels = {}
    for stem, score, image in slices:
        tifffile.imwrite(test / "images" / f"{stem}.tiff", image)
        labels[f"{stem}.tiff"] = score
    (test / "test.json").write_text(json.dumps(labels, indent=1), encoding="utf-8")


def _write_ground_truth_layout(root: Path, slices: list[tuple[str, float, np.ndarray]]) -> None:
    document: dict[str, dict[str, list]] = {}
    for k, (stem, score, image) in enumerate(slices):
        group = f"test_{k % QUIRK_GROUPS}"
        (root / group).mkdir(parents=True, exist_ok=True)
        tifffile.imwrite(root / group / f"{stem}.tif", image)
        entry = document.setdefault(f"{group}.zip", {"fnames": [], "scores": []})
        entry["fnames"].append(stem)
        entry["scores"].append(score)
    (root / "test-ground-truth.json").write_text(json.dumps(document, indent=1), encoding="utf-8")
