"""Non-LLM baseline for LDCT-IQA: least-squares regression of the score on noise features.

Features per slice: log of the robust noise level (1.4826 x MAD of the difference between the
image and its 3 x 3 median filter), and log of the image's standard deviation. A linear model
(with intercept) is fitted on the training labels with numpy's least squares.
"""

from __future__ import annotations

import csv

import numpy as np
import tifffile
from scipy import ndimage

from rexmle.tasks.jobs import BaselineJob


def features(image: np.ndarray) -> np.ndarray:
    """Feature vector [1, log noise, log sd] of one slice."""
    image = np.asarray(image, dtype=np.float64)
    residual = image - ndimage.median_filter(image, size=3)
    noise = 1.4826 * float(np.median(np.abs(residual - np.median(residual))))
    return np.array([1.0, np.log(noise + 1e-6), np.log(float(image.std()) + 1e-6)])


def solve(job: BaselineJob) -> None:
    """Fit on ``train_labels.csv`` and write ``submission.csv`` for the test images."""
    id_column, value_column = job.columns
    public_dir = job.public
    with open(public_dir / "train_labels.csv", newline="", encoding="utf-8") as handle:
        labels = {row[id_column]: float(row[value_column]) for row in csv.DictReader(handle)}
    ids = sorted(labels)
    x = np.stack([features(tifffile.imread(public_dir / "train/images" / f"{i}.tif")) for i in ids])
    y = np.array([labels[i] for i in ids])
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    rows = []
    for image_id in job.test_ids():
        image = tifffile.imread(public_dir / "test/images" / f"{image_id}.tiff")
        rows.append((image_id, repr(float(features(image) @ coef))))
    job.write_submission_csv(rows)
