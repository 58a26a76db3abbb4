"""Non-LLM baseline for PANTHER: an intensity window fitted on the training tumours.

Model: per image, intensities are standardised by the image's median and interquartile range;
the tumour window [lo, hi] is the 5th-95th percentile of the standardised tumour voxels of all
training cases; a test voxel is tumour when it falls in the window, after a 3x3x1 median filter,
and only the largest 26-connected component is kept. Deterministic; numpy and scipy only.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage

from rexmle.io import read_image, write_image
from rexmle.tasks.jobs import BaselineJob
from rexmle.tasks.masks import largest_component

from .prepare import prediction_name


def standardise(image: np.ndarray) -> np.ndarray:
    """(image - median) / IQR, smoothed in-plane with a 3x3x1 median filter."""
    q25, q50, q75 = np.percentile(image, [25, 50, 75])
    scaled = (image - q50) / max(float(q75 - q25), 1e-6)
    return ndimage.median_filter(scaled, size=(3, 3, 1))


def solve(job: BaselineJob) -> None:
    """Fit the window on ``public/train`` and write masks for ``public/test`` (no randomness)."""
    public_dir, submission_dir = job.public, job.submission
    tumour_values = []
    for label_path in sorted((public_dir / "train" / "labels").glob("*.mha")):
        image_path = public_dir / "train" / "images" / f"{label_path.name[:-4]}_0000.mha"
        image = standardise(np.asarray(read_image(image_path).array, dtype=float))
        tumour = np.asarray(read_image(label_path).array) == 1
        tumour_values.append(image[tumour])
    lo, hi = np.percentile(np.concatenate(tumour_values), [5, 95])
    rows = []
    for case_id in job.test_ids():
        test_image = read_image(public_dir / "test" / "images" / f"{case_id}_0000.mha")
        scaled = standardise(np.asarray(test_image.array, dtype=float))
        mask = largest_component((scaled >= lo) & (scaled <= hi))
        relative = prediction_name(case_id)
        write_image(submission_dir / relative, mask.astype(np.uint8), like=test_image.geometry)
        rows.append((case_id, relative))
    job.write_submission_csv(rows)
