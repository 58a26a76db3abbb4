"""Non-LLM baseline for ISLES'22: a DWI/ADC intensity rule fitted on the training cases.

Model: per case, z-score DWI and ADC over the brain (non-zero DWI voxels); a voxel is lesion when
``z_dwi - z_adc >= t``. The threshold ``t`` is chosen on the training cases to maximise mean Dice
over a fixed grid. Deterministic; needs only numpy.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from rexmle.io import read_image, write_image

THRESHOLDS = np.linspace(0.5, 6.0, 23)


def _score_map(public_dir: Path, folder: str, case_id: str) -> np.ndarray:
    dwi = np.asarray(read_image(public_dir / folder / f"{case_id}_dwi.nii.gz").array, dtype=float)
    adc = np.asarray(read_image(public_dir / folder / f"{case_id}_adc.nii.gz").array, dtype=float)
    brain = dwi != 0
    if not brain.any():
        brain = np.ones_like(dwi, dtype=bool)

    def z(x: np.ndarray) -> np.ndarray:
        sd = float(x[brain].std()) or 1.0
        return (x - float(x[brain].mean())) / sd

    return np.where(brain, z(dwi) - z(adc), -np.inf)


def _dice(pred: np.ndarray, truth: np.ndarray) -> float:
    total = int(pred.sum()) + int(truth.sum())
    return 1.0 if total == 0 else 2.0 * int((pred & truth).sum()) / total


def solve(public_dir: Path, submission_dir: Path, *, seed: int = 0) -> None:
    """Fit the threshold on ``public_dir/train`` and write masks for ``public_dir/test``."""
    train_ids = sorted(p.name[: -len("_msk.nii.gz")] for p in (public_dir / "train").glob("*_msk.nii.gz"))
    maps = [_score_map(public_dir, "train", i) for i in train_ids]
    truths = [
        np.asarray(read_image(public_dir / "train" / f"{i}_msk.nii.gz").array) == 1 for i in train_ids
    ]
    mean_dice = [np.mean([_dice(m >= t, g) for m, g in zip(maps, truths, strict=True)]) for t in THRESHOLDS]
    threshold = float(THRESHOLDS[int(np.argmax(mean_dice))])
    with open(public_dir / "sample_submission.csv", newline="", encoding="utf-8") as handle:
        test_ids = [row["case_id"] for row in csv.DictReader(handle)]
    rows = []
    for case_id in test_ids:
        dwi = read_image(public_dir / "test" / f"{case_id}_dwi.nii.gz")
        mask = (_score_map(public_dir, "test", case_id) >= threshold).astype(np.uint8)
        relative = f"predictions/{case_id}_pred.nii.gz"
        write_image(submission_dir / relative, mask, like=dwi.geometry)
        rows.append((case_id, relative))
    with open(submission_dir / "submission.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(("case_id", "predicted_mask_path"))
        writer.writerows(rows)
