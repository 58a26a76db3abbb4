"""Non-LLM baseline for ISLES'22: a DWI/ADC intensity rule fitted on the training cases.

Model: per case, robust z-scores of DWI and ADC over the brain (non-zero DWI voxels; median and
1.4826 x MAD, so a large lesion does not inflate the scale); a voxel is lesion when
``z_dwi - z_adc >= t``; predicted components smaller than half the smallest training lesion are
dropped. The threshold ``t`` is chosen on the training cases: among the grid values
whose mean Dice is within 0.01 of the best, the median (the middle of the plateau generalises better
than its edge). Deterministic; needs only numpy.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy import ndimage

from rexmle.io import read_image, write_image
from rexmle.tasks.jobs import BaselineJob

THRESHOLDS = np.linspace(0.5, 15.0, 59)


def _score_map(public_dir: Path, folder: str, case_id: str) -> np.ndarray:
    dwi = np.asarray(read_image(public_dir / folder / f"{case_id}_dwi.nii.gz").array, dtype=float)
    adc = np.asarray(read_image(public_dir / folder / f"{case_id}_adc.nii.gz").array, dtype=float)
    brain = dwi != 0
    if not brain.any():
        brain = np.ones_like(dwi, dtype=bool)

    def z(x: np.ndarray) -> np.ndarray:
        values = x[brain]
        centre = float(np.median(values))
        scale = 1.4826 * float(np.median(np.abs(values - centre))) or 1.0
        return (x - centre) / scale

    return np.where(brain, z(dwi) - z(adc), -np.inf)


def _drop_small(mask: np.ndarray, min_voxels: int) -> np.ndarray:
    labels, n = ndimage.label(mask, structure=np.ones((3, 3, 3), bool))
    if n == 0:
        return mask
    sizes = np.bincount(labels.ravel())
    keep = sizes >= min_voxels
    keep[0] = False
    return keep[labels]


def _dice(pred: np.ndarray, truth: np.ndarray) -> float:
    total = int(pred.sum()) + int(truth.sum())
    return 1.0 if total == 0 else 2.0 * int((pred & truth).sum()) / total


def solve(job: BaselineJob) -> None:
    """Fit the threshold on ``public/train`` and write masks for ``public/test`` (no randomness)."""
    public_dir, submission_dir = job.public, job.submission
    train_ids = sorted(
        p.name[: -len("_msk.nii.gz")] for p in (public_dir / "train").glob("*_msk.nii.gz")
    )
    component_sizes: list[int] = []
    maps = [_score_map(public_dir, "train", i) for i in train_ids]
    truths = [
        np.asarray(read_image(public_dir / "train" / f"{i}_msk.nii.gz").array) == 1
        for i in train_ids
    ]
    for truth in truths:
        labels, n = ndimage.label(truth, structure=np.ones((3, 3, 3), bool))
        component_sizes.extend(np.bincount(labels.ravel())[1:].tolist() if n else [])
    min_voxels = max(1, int(min(component_sizes, default=2) // 2))
    mean_dice = [
        np.mean([_dice(m >= t, g) for m, g in zip(maps, truths, strict=True)]) for t in THRESHOLDS
    ]
    best = float(np.max(mean_dice))
    plateau = THRESHOLDS[np.asarray(mean_dice) >= best - 0.01]
    threshold = float(np.median(plateau))
    test_ids = job.test_ids()
    rows = []
    for case_id in test_ids:
        dwi = read_image(public_dir / "test" / f"{case_id}_dwi.nii.gz")
        mask = _drop_small(_score_map(public_dir, "test", case_id) >= threshold, min_voxels)
        mask = mask.astype(np.uint8)
        relative = f"predictions/{case_id}_pred.nii.gz"
        write_image(submission_dir / relative, mask, like=dwi.geometry)
        rows.append((case_id, relative))
    job.write_submission_csv(rows)
