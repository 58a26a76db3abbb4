"""Non-LLM baseline for PANTHER: an intensity window fitted on the training tumours.

Model: per image, intensities are standardised by the image's median and interquartile range;
the tumour window [lo, hi] is the 5th-95th percentile of the standardised tumour voxels of all
training cases; a test voxel is tumour when it falls in the window, after a 3x3x1 median filter,
and only the largest 26-connected component is kept. Deterministic; numpy and scipy only.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy import ndimage

from rexmle.challenges.panther.prepare import SUBMISSION_COLUMNS, prediction_name
from rexmle.io import read_image, write_image
from rexmle.tasks.csvfile import read_id_column
from rexmle.tasks.files import write_csv

_BOX = np.ones((3, 3, 3), dtype=bool)


def standardise(image: np.ndarray) -> np.ndarray:
    """(image - median) / IQR, smoothed in-plane with a 3x3x1 median filter."""
    q25, q50, q75 = np.percentile(image, [25, 50, 75])
    scaled = (image - q50) / max(float(q75 - q25), 1e-6)
    return ndimage.median_filter(scaled, size=(3, 3, 1))


def largest_component(mask: np.ndarray) -> np.ndarray:
    """The largest 26-connected component of ``mask`` (empty stays empty)."""
    labels, count = ndimage.label(mask, structure=_BOX)
    if count <= 1:
        return mask
    sizes = np.bincount(labels.ravel())
    sizes[0] = 0
    return labels == int(np.argmax(sizes))


def solve(public_dir: Path, submission_dir: Path, *, seed: int = 0) -> None:
    """Fit the window on ``public_dir/train`` and write masks for ``public_dir/test``."""
    tumour_values = []
    for label_path in sorted((public_dir / "train" / "labels").glob("*.mha")):
        image_path = public_dir / "train" / "images" / f"{label_path.name[:-4]}_0000.mha"
        image = standardise(np.asarray(read_image(image_path).array, dtype=float))
        tumour = np.asarray(read_image(label_path).array) == 1
        tumour_values.append(image[tumour])
    lo, hi = np.percentile(np.concatenate(tumour_values), [5, 95])
    test_ids = read_id_column(public_dir / "sample_submission.csv", "image_id")
    rows = []
    for case_id in test_ids:
        image = read_image(public_dir / "test" / "images" / f"{case_id}_0000.mha")
        scaled = standardise(np.asarray(image.array, dtype=float))
        mask = largest_component((scaled >= lo) & (scaled <= hi))
        relative = prediction_name(case_id)
        write_image(submission_dir / relative, mask.astype(np.uint8), like=image.geometry)
        rows.append((case_id, relative))
    write_csv(submission_dir / "submission.csv", SUBMISSION_COLUMNS, rows)
