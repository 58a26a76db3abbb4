"""Non-LLM baseline for TopBrain: a vessel threshold and a label atlas, fitted on training cases.

Model: intensities are standardised per image by (x - median) / IQR; a voxel is vessel when its
standardised value is at least ``t``, with ``t`` chosen on the training cases to maximise the
binary vessel Dice over a fixed grid. Labels come from an atlas on a 32 x 32 x 32 grid of
normalised image coordinates (voxel index / image size): each cell takes the label seen most often
there in the training label maps; empty cells take the label of the nearest filled cell. Each
predicted vessel voxel gets the label of its atlas cell. Deterministic; numpy and scipy only.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage

from rexmle.io import read_image, write_image
from rexmle.tasks.jobs import BaselineJob

from .labels import TRACKS
from .prepare import image_name, prediction_name

ATLAS_SHAPE = np.array([32, 32, 32])
THRESHOLDS = np.linspace(0.5, 20.0, 40)


def standardise(image: np.ndarray) -> np.ndarray:
    """(image - median) / IQR as float32."""
    q25, q50, q75 = np.percentile(image, [25, 50, 75])
    return ((image - q50) / max(float(q75 - q25), 1e-6)).astype(np.float32)


def _cells(coords: np.ndarray, shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    scaled = (coords * ATLAS_SHAPE / np.asarray(shape)).astype(np.int64)
    scaled = np.minimum(scaled, ATLAS_SHAPE - 1)
    return tuple(scaled.T)


def _dice(pred: np.ndarray, truth: np.ndarray) -> float:
    total = int(pred.sum()) + int(truth.sum())
    return 1.0 if total == 0 else 2.0 * int((pred & truth).sum()) / total


def fit_atlas(label_maps: list[np.ndarray], n_labels: int) -> np.ndarray:
    """The most frequent label per atlas cell, empty cells filled from the nearest filled one."""
    votes = np.zeros((*ATLAS_SHAPE, n_labels + 1), dtype=np.int64)
    for labels in label_maps:
        coords = np.argwhere(labels > 0)
        np.add.at(votes, (*_cells(coords, labels.shape), labels[labels > 0]), 1)
    atlas = np.argmax(votes[..., 1:], axis=-1) + 1
    filled = votes[..., 1:].sum(axis=-1) > 0
    if not filled.any():
        return np.zeros(tuple(ATLAS_SHAPE), dtype=np.uint8)
    _, nearest = ndimage.distance_transform_edt(~filled, return_indices=True)
    return atlas[tuple(nearest)].astype(np.uint8)


def solve(job: BaselineJob) -> None:
    """Fit on ``public/train`` and write label maps for ``public/test`` (no randomness)."""
    public_dir, submission_dir = job.public, job.submission
    modality = job.params["scan"]
    track = TRACKS[modality]
    label_paths = sorted((public_dir / "train" / "labels").glob(f"topcow_{modality}_*.nii.gz"))
    images, label_maps = [], []
    for path in label_paths:
        pid = path.name[len(f"topcow_{modality}_") : -len(".nii.gz")]
        image = read_image(public_dir / "train" / "images" / image_name(modality, pid))
        images.append(standardise(np.asarray(image.array, dtype=np.float32)))
        label_maps.append(np.asarray(read_image(path).array).astype(np.uint8))
    scores = [
        np.mean([_dice(x >= t, g > 0) for x, g in zip(images, label_maps, strict=True)])
        for t in THRESHOLDS
    ]
    threshold = float(THRESHOLDS[int(np.argmax(scores))])
    atlas = fit_atlas(label_maps, track.n_labels)
    test_ids = job.test_ids()
    rows = []
    for pid in test_ids:
        image = read_image(public_dir / "test" / "images" / image_name(modality, pid))
        vessel = standardise(np.asarray(image.array, dtype=np.float32)) >= threshold
        labels = np.zeros(vessel.shape, dtype=np.uint8)
        coords = np.argwhere(vessel)
        labels[vessel] = atlas[_cells(coords, vessel.shape)]
        relative = prediction_name(modality, pid)
        write_image(submission_dir / relative, labels, like=image.geometry)
        rows.append((pid, relative))
    job.write_submission_csv(rows)
