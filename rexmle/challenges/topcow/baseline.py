"""Non-LLM baselines for the three TopCoW tasks, learned from ``public/train`` (numpy/scipy/skimage).

All three start from a vessel mask and its centre of mass in mm, which aligns cases that sit at
different places in their volumes:

- Task 1: the vessel threshold (an intensity percentile of each image) is chosen on the training
  cases to maximise foreground Dice; each predicted vessel voxel takes the label of the nearest
  labelled training voxel, in mm relative to the vessel centre (k-d tree), and stays background
  when no labelled training voxel lies within 3 mm.
- Tasks 2 and 3 have no voxel labels: their vessel mask is the image above its Otsu threshold.
- Task 2: the ROI box is the mean over training cases of its corner offset from the vessel centre
  and of its size, both in mm, converted back to the test image's voxels.
- Task 3: 1-nearest neighbour: the edge lists of the training case whose smoothed vessel mask,
  sampled on a fixed mm grid around the vessel centre, is closest (Euclidean) to the test case's.

Deterministic for a given seed (the only randomness is the subsampling of training voxels).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import numpy.typing as npt
from scipy import ndimage
from scipy.spatial import cKDTree
from skimage.filters import threshold_otsu

from rexmle.io import Geometry, read_image, write_image
from rexmle.tasks.jobs import BaselineJob

from .prepare import prediction_name, write_json
from .roi import Box, read_roi

PERCENTILES = (80.0, 85.0, 88.0, 90.0, 92.0, 94.0, 96.0, 98.0, 99.0, 99.5, 99.8)
"""Vessel threshold candidates: intensity percentiles of each image."""
MAX_LABEL_DISTANCE_MM = 3.0
STRIDE = 2
"""Thresholds, their Dice and vessel centres are computed on every 2nd voxel per axis."""
MAX_TRAIN_VOXELS = 400_000
GRID_POINTS = (20, 20, 12)
GRID_FRACTION = 0.6
"""Half-width of the Task-3 sampling grid as a fraction of the training images' half-extent."""


def _train_stems(public_dir: Path) -> list[str]:
    images = sorted((public_dir / "train" / "images").glob("topcow_*_0000.nii.gz"))
    return [p.name[: -len("_0000.nii.gz")] for p in images]


def _image(path: Path) -> tuple[npt.NDArray[np.float32], Geometry]:
    image = read_image(path)
    return np.asarray(image.array, dtype=np.float32), image.geometry


def _otsu(image: np.ndarray) -> float:
    return float(threshold_otsu(image))


def _centre_mm(mask: np.ndarray, spacing: np.ndarray) -> np.ndarray:
    if not mask.any():
        return np.asarray(mask.shape, dtype=float) / 2 * spacing
    return np.asarray(ndimage.center_of_mass(mask)) * spacing


def _dice(pred: np.ndarray, truth: np.ndarray) -> float:
    total = int(pred.sum()) + int(truth.sum())
    return 1.0 if total == 0 else 2.0 * int((pred & truth).sum()) / total


def solve_segmentation(job: BaselineJob) -> None:
    """Task 1: learned threshold + nearest labelled training voxel relative to the vessel centre."""
    public_dir, submission_dir, modality = job.public, job.submission, job.params["scan"]
    rng = np.random.default_rng(job.seed)
    stems = _train_stems(public_dir)
    per_case = max(1, MAX_TRAIN_VOXELS // max(len(stems), 1))
    dice_rows, centre_rows, points, values = [], [], [], []
    for stem in stems:  # one pass, one case in memory at a time
        image, geometry = _image(public_dir / "train" / "images" / f"{stem}_0000.nii.gz")
        spacing = np.asarray(geometry.spacing_mm[:3])
        labels = np.asarray(read_image(public_dir / "train" / "labels" / f"{stem}.nii.gz").array)
        truth = labels > 0
        coarse, coarse_truth = (
            image[::STRIDE, ::STRIDE, ::STRIDE],
            truth[::STRIDE, ::STRIDE, ::STRIDE],
        )
        thresholds = np.percentile(coarse, PERCENTILES)
        dice_rows.append([_dice(coarse >= t, coarse_truth) for t in thresholds])
        centre_rows.append([_centre_mm(coarse >= t, spacing * STRIDE) for t in thresholds])
        index = np.argwhere(truth)
        if len(index) > per_case:
            index = index[np.sort(rng.choice(len(index), per_case, replace=False))]
        points.append(index * spacing)
        values.append(labels[tuple(index.T)].astype(np.uint8))
        del image, labels, truth
    best = int(np.argmax(np.mean(dice_rows, axis=0)))
    percentile = PERCENTILES[best]
    points = [p - centres[best] for p, centres in zip(points, centre_rows, strict=True)]
    tree = cKDTree(np.concatenate(points))
    known = np.concatenate(values)
    rows = []
    for case_id in job.test_ids():
        path = public_dir / "test" / "images" / f"topcow_{modality}_{case_id}_0000.nii.gz"
        image, geometry = _image(path)
        spacing = np.asarray(geometry.spacing_mm[:3])
        coarse = image[::STRIDE, ::STRIDE, ::STRIDE]
        threshold = np.percentile(coarse, percentile)
        vessel = image >= threshold
        centre = _centre_mm(coarse >= threshold, spacing * STRIDE)
        prediction = np.zeros(image.shape, dtype=np.uint8)
        index = np.argwhere(vessel)
        if len(index):
            _, nearest = tree.query(
                index * spacing - centre, distance_upper_bound=MAX_LABEL_DISTANCE_MM
            )
            found = nearest < len(known)
            prediction[tuple(index[found].T)] = known[nearest[found]]
        relative = prediction_name(modality, case_id, "_0000.nii.gz")
        write_image(submission_dir / relative, prediction, like=geometry)
        rows.append((case_id, relative))
    job.write_submission_csv(rows)


def solve_box(job: BaselineJob) -> None:
    """Task 2: mean ROI corner offset (mm) from the vessel centre and mean ROI size (mm)."""
    public_dir, submission_dir, modality = job.public, job.submission, job.params["scan"]
    offsets, sizes = [], []
    for stem in _train_stems(public_dir):
        image, geometry = _image(public_dir / "train" / "images" / f"{stem}_0000.nii.gz")
        spacing = np.asarray(geometry.spacing_mm[:3])
        box = read_roi(public_dir / "train" / "labels" / f"{stem}.txt")
        centre = _centre_mm(image >= _otsu(image), spacing)
        offsets.append(np.asarray(box.location) * spacing - centre)
        sizes.append(np.asarray(box.size) * spacing)
    mean_offset, mean_size = np.mean(offsets, axis=0), np.mean(sizes, axis=0)
    rows = []
    for case_id in job.test_ids():
        path = public_dir / "test" / "images" / f"topcow_{modality}_{case_id}_0000.nii.gz"
        image, geometry = _image(path)
        spacing = np.asarray(geometry.spacing_mm[:3])
        centre = _centre_mm(image >= _otsu(image), spacing)
        location = np.rint((centre + mean_offset) / spacing).astype(int)
        size = np.maximum(np.rint(mean_size / spacing).astype(int), 1)
        box = Box(
            size=(int(size[0]), int(size[1]), int(size[2])),
            location=(int(location[0]), int(location[1]), int(location[2])),
        )
        relative = prediction_name(modality, case_id, "_bbox.json")
        write_json(submission_dir / relative, box.to_json())
        rows.append((case_id, relative))
    job.write_submission_csv(rows)


def _vessel_features(path: Path, half_extent_mm: np.ndarray) -> np.ndarray:
    image, geometry = _image(path)
    spacing = np.asarray(geometry.spacing_mm[:3])
    vessel = (image >= _otsu(image)).astype(np.float32)
    smooth = ndimage.gaussian_filter(vessel, sigma=1.0)
    centre = _centre_mm(vessel > 0, spacing)
    axes = [np.linspace(-h, h, n) for h, n in zip(half_extent_mm, GRID_POINTS, strict=True)]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=0).reshape(3, -1)
    coordinates = (grid + centre[:, None]) / spacing[:, None]
    return ndimage.map_coordinates(smooth, coordinates, order=1, mode="constant")


def solve_edges(job: BaselineJob) -> None:
    """Task 3: the edge lists of the nearest training case (aligned, smoothed vessel masks)."""
    public_dir, submission_dir, modality = job.public, job.submission, job.params["scan"]
    stems = _train_stems(public_dir)
    extents = []
    for stem in stems:
        geometry = read_image(public_dir / "train" / "images" / f"{stem}_0000.nii.gz").geometry
        extents.append(np.asarray(geometry.shape[:3]) * np.asarray(geometry.spacing_mm[:3]))
    half_extent = GRID_FRACTION * np.median(extents, axis=0) / 2
    train_features = np.stack(
        [
            _vessel_features(public_dir / "train" / "images" / f"{s}_0000.nii.gz", half_extent)
            for s in stems
        ]
    )
    train_edges = [
        json.loads((public_dir / "train" / "edges" / f"{s}_edges.json").read_text(encoding="utf-8"))
        for s in stems
    ]
    rows = []
    for case_id in job.test_ids():
        path = public_dir / "test" / "images" / f"topcow_{modality}_{case_id}_0000.nii.gz"
        features = _vessel_features(path, half_extent)
        nearest = int(np.argmin(np.linalg.norm(train_features - features, axis=1)))
        relative = prediction_name(modality, case_id, "_edges.json")
        write_json(submission_dir / relative, train_edges[nearest])
        rows.append((case_id, relative))
    job.write_submission_csv(rows)
