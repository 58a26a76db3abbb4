"""Non-LLM baseline for the PUMA nuclei tasks: dark-blob detection + nearest-mean classes.

Model: darkness = 1 - mean(RGB), Gaussian-smoothed (sigma 1 px). The threshold is the one of a
fixed grid that best separates nucleus pixels (the training outlines, rasterised) from the rest
(pixel Dice). On a test ROI, the 8-connected blobs above the threshold with at least the
learned minimum area are the detections; each blob's position is its pixel-centre mean and its
class the nearest class mean (z-scored features: mean RGB and area) among the training nuclei.
Deterministic; needs numpy and scipy only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
from scipy import ndimage

from rexmle.tasks.jobs import BaselineJob

from .classes import track_classes
from .raster import polygon_window

THRESHOLDS = np.linspace(0.2, 0.9, 36)
SMOOTHING_PX = 1.0


def _darkness(image: npt.NDArray[np.generic]) -> npt.NDArray[np.float64]:
    rgb = np.asarray(image[..., :3], dtype=np.float64) / 255.0
    return ndimage.gaussian_filter(1.0 - rgb.mean(axis=-1), SMOOTHING_PX)


def _blob_features(rgb: np.ndarray, pixels: np.ndarray) -> np.ndarray:
    colour = rgb[pixels].mean(axis=0)
    return np.array([*colour, float(pixels.sum())])


def _train(
    public_dir: Path, classes: Sequence[str]
) -> tuple[float, float, dict[str, np.ndarray], np.ndarray, np.ndarray]:
    import tifffile

    hits = np.zeros(THRESHOLDS.size)
    predicted = np.zeros(THRESHOLDS.size)
    n_truth = 0
    features: list[np.ndarray] = []
    names: list[str] = []
    areas: list[float] = []
    for json_path in sorted((public_dir / "train" / "nuclei_json").glob("*.json")):
        image = tifffile.imread(public_dir / "train" / "images" / f"{json_path.stem}.tif")
        rgb = np.asarray(image[..., :3], dtype=np.float64) / 255.0
        shape = (rgb.shape[0], rgb.shape[1])
        nuclei = np.zeros(shape, dtype=bool)
        for item in json.loads(json_path.read_text(encoding="utf-8"))["polygons"]:
            window = polygon_window([np.asarray(item["path_points"], dtype=np.float64)], shape)
            if window is None or not window.mask.any():
                continue
            nuclei[window.slices] |= window.mask
            features.append(_blob_features(rgb[window.slices], window.mask))
            names.append(str(item["name"]))
            areas.append(float(window.mask.sum()))
        darkness = _darkness(image)
        for k, threshold in enumerate(THRESHOLDS):
            above = darkness >= threshold
            hits[k] += np.count_nonzero(above & nuclei)
            predicted[k] += np.count_nonzero(above)
        n_truth += int(nuclei.sum())
    dice = 2 * hits / np.maximum(predicted + n_truth, 1)
    threshold = float(THRESHOLDS[int(np.argmax(dice))])
    min_area = 0.3 * float(np.percentile(areas, 10)) if areas else 1.0
    table = np.asarray(features).reshape(-1, 4)
    centre = table.mean(axis=0) if len(table) else np.zeros(4)
    scale = table.std(axis=0) if len(table) else np.ones(4)
    scale[scale == 0] = 1.0
    means = {
        name: ((table[[n == name for n in names]] - centre) / scale).mean(axis=0)
        for name in classes
        if name in names
    }
    return threshold, min_area, means, centre, scale


def solve(job: BaselineJob) -> None:
    """Fit on ``public/train`` and write one nuclei JSON per test ROI (classes of the track)."""
    import tifffile

    public_dir, submission_dir = job.public, job.submission
    threshold, min_area, means, centre, scale = _train(public_dir, track_classes(job.params))
    names = list(means)
    class_means = np.asarray([means[n] for n in names]).reshape(-1, 4)
    rows = []
    for case_id in job.test_ids():
        image = tifffile.imread(public_dir / "test" / "images" / f"{case_id}.tif")
        rgb = np.asarray(image[..., :3], dtype=np.float64) / 255.0
        labels, _ = ndimage.label(_darkness(image) >= threshold, structure=np.ones((3, 3)))
        detections = []
        for index, box in enumerate(ndimage.find_objects(labels), start=1):
            if box is None or not names:
                continue
            pixels = labels[box] == index
            if pixels.sum() < min_area:
                continue
            rows_idx, cols_idx = np.nonzero(pixels)
            x = float(cols_idx.mean() + box[1].start + 0.5)
            y = float(rows_idx.mean() + box[0].start + 0.5)
            feature = (_blob_features(rgb[box], pixels) - centre) / scale
            nearest = int(np.argmin(((class_means - feature) ** 2).sum(axis=1)))
            detections.append({"class": names[nearest], "centroid": [x, y], "confidence": 1.0})
        relative = f"predictions/{case_id}.json"
        target = submission_dir / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps({"nuclei": detections}) + "\n", encoding="utf-8")
        rows.append((case_id, relative))
    job.write_submission_csv(rows)
