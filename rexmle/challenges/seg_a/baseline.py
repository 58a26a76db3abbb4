"""Non-LLM baseline for SEG.A: an intensity window fitted on the training cases.

Model: a voxel is aorta when its HU value is at least ``t``; of the resulting mask only the
largest 26-connected component is kept (the aortic tree is one connected object). ``t`` is chosen
on the training cases to maximise mean Dice over a fixed grid of HU values. Deterministic; needs
numpy and scipy only.
"""

from __future__ import annotations

import numpy as np

from rexmle.io import read_image, write_image
from rexmle.tasks.jobs import BaselineJob
from rexmle.tasks.masks import largest_component

from .prepare import prediction_name

THRESHOLDS_HU = np.arange(-100.0, 701.0, 20.0)


def _dice(pred: np.ndarray, truth: np.ndarray) -> float:
    total = int(pred.sum()) + int(truth.sum())
    return 1.0 if total == 0 else 2.0 * int((pred & truth).sum()) / total


def solve(job: BaselineJob) -> None:
    """Fit the threshold on ``public/train`` and write masks for ``public/test`` (no randomness)."""
    public_dir, submission_dir = job.public, job.submission
    train_ids = sorted(
        p.name[: -len(".nrrd")] for p in (public_dir / "train" / "images").glob("*.nrrd")
    )
    images = [
        np.asarray(read_image(public_dir / "train" / "images" / f"{i}.nrrd").array, dtype=float)
        for i in train_ids
    ]
    truths = [
        np.asarray(read_image(public_dir / "train" / "labels" / f"{i}.seg.nrrd").array) == 1
        for i in train_ids
    ]
    scores = [
        np.mean([_dice(largest_component(x >= t), g) for x, g in zip(images, truths, strict=True)])
        for t in THRESHOLDS_HU
    ]
    threshold = float(THRESHOLDS_HU[int(np.argmax(scores))])
    rows = []
    for case_id in job.test_ids():
        image = read_image(public_dir / "test" / "images" / f"{case_id}.nrrd")
        mask = largest_component(np.asarray(image.array, dtype=float) >= threshold)
        relative = prediction_name(case_id)
        write_image(submission_dir / relative, mask.astype(np.uint8), like=image.geometry)
        rows.append((case_id, relative))
    job.write_submission_csv(rows)
