"""Non-LLM baseline for NeurIPS-CellSeg: a learned intensity threshold and connected components.

Model, fitted on ``public/train``: each image is reduced to one channel (channel mean) and scaled
to [0, 1] between its 1st and 99th percentiles; the polarity (cells brighter or darker than the
background) and the threshold that maximises the pooled foreground Dice over a fixed grid are
learned from the training labels, as is a minimum object size (a fraction of the median cell
area). At test time: threshold, fill holes, label 4-connected components, drop small ones.
Deterministic; needs numpy, scipy and tifffile only.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import numpy.typing as npt
import tifffile
from scipy import ndimage

from rexmle.io import read_image
from rexmle.tasks.jobs import BaselineJob

from .prepare import SIZES_FILE, label_name

THRESHOLDS = np.linspace(0.05, 0.95, 19)
MAX_TRAIN_IMAGES = 200
MAX_FIT_PIXELS = 1_000_000


def _gray(path: Path, shape: tuple[int, int], *, step: int = 1) -> npt.NDArray[np.float32]:
    """One channel of size ``shape`` (every ``step``-th pixel) scaled to [0, 1] by the 1st and
    99th percentiles.
    """
    array = np.asarray(read_image(path).array)
    if array.ndim == 3:
        channel_last = array.shape[:2] == shape
        array = array[::step, ::step] if channel_last else array[:, ::step, ::step]
        array = array.mean(axis=2 if channel_last else 0, dtype=np.float32)
    else:
        array = array[::step, ::step].astype(np.float32)
    low, high = np.percentile(array, (1.0, 99.0))
    return np.clip((array - low) / max(float(high - low), 1e-9), 0.0, 1.0)


def fit(public_dir: Path, *, seed: int = 0) -> dict[str, float]:
    """Learn polarity, threshold and minimum object size from (a sample of) the training set."""
    labels_dir = public_dir / "train" / "labels"
    images = sorted((public_dir / "train" / "images").iterdir())
    rng = np.random.default_rng(seed)
    if len(images) > MAX_TRAIN_IMAGES:
        images = [
            images[i] for i in sorted(rng.choice(len(images), MAX_TRAIN_IMAGES, replace=False))
        ]
    pixels: list[npt.NDArray[np.float32]] = []
    truths: list[npt.NDArray[np.bool_]] = []
    areas: list[int] = []
    for path in images:
        labels = np.asarray(read_image(labels_dir / label_name(path.stem)).array)
        step = max(1, int(np.sqrt(labels.size / MAX_FIT_PIXELS)))
        pixels.append(_gray(path, labels.shape, step=step).ravel())
        truths.append((labels[::step, ::step] > 0).ravel())
        counts = np.bincount(labels.ravel().astype(np.int64))[1:]
        areas.extend(int(c) for c in counts[counts > 0])
    values = np.concatenate(pixels)
    truth = np.concatenate(truths)
    inside = float(values[truth].mean()) if truth.any() else 1.0
    outside = float(values[~truth].mean()) if (~truth).any() else 0.0
    bright = inside >= outside
    oriented = values if bright else 1.0 - values
    dices = []
    for threshold in THRESHOLDS:
        pred = oriented >= threshold
        total = int(pred.sum()) + int(truth.sum())
        dices.append(0.0 if total == 0 else 2.0 * int((pred & truth).sum()) / total)
    return {
        "bright": float(bright),
        "threshold": float(THRESHOLDS[int(np.argmax(dices))]),
        "min_size": float(max(4.0, 0.2 * np.median(areas))) if areas else 4.0,
    }


def predict(model: dict[str, float], gray: npt.NDArray[np.float32]) -> npt.NDArray[np.uint32]:
    """Instance map of one image."""
    oriented = gray if model["bright"] else 1.0 - gray
    foreground = ndimage.binary_fill_holes(oriented >= model["threshold"])
    labels, n = ndimage.label(foreground)
    if n == 0:
        return labels.astype(np.uint32)
    sizes = np.bincount(labels.ravel())
    keep = sizes >= model["min_size"]
    keep[0] = False
    lookup = np.zeros(sizes.size, dtype=np.uint32)
    lookup[keep] = np.arange(1, int(keep.sum()) + 1, dtype=np.uint32)
    return lookup[labels]


def solve(job: BaselineJob) -> None:
    """Fit on ``public/train`` and write one TIFF label map per test image."""
    public_dir, submission_dir = job.public, job.submission
    model = fit(public_dir, seed=job.seed)
    id_column = job.columns[0]
    with open(public_dir / "test" / SIZES_FILE, newline="", encoding="utf-8") as handle:
        sizes = {r[id_column]: (int(r["height"]), int(r["width"])) for r in csv.DictReader(handle)}
    images = {p.stem: p for p in (public_dir / "test" / "images").iterdir()}
    rows = []
    for case_id, shape in sorted(sizes.items()):
        labels = predict(model, _gray(images[case_id], shape))
        relative = f"predictions/{label_name(case_id)}"
        (submission_dir / "predictions").mkdir(parents=True, exist_ok=True)
        tifffile.imwrite(str(submission_dir / relative), labels, compression="zlib")
        rows.append((case_id, relative))
    job.write_submission_csv(rows)
