"""NeurIPS-CellSeg submission rules (spec neurips-cellseg.md, "Validity rules"), public data only.

A case is one instance label map: a TIFF (``.tif``/``.tiff``) or PNG file holding a 2-D integer
array of the test image's (height, width) from ``public/test/image_sizes.csv``, values in
0 ... 2**31 - 1, at most 1 000 000 distinct instance ids. Nothing is resized, cast or squeezed.
"""

from __future__ import annotations

import csv
import functools
from pathlib import Path

import numpy as np

from rexmle.challenges.neurips_cellseg.prepare import SIZES_FILE
from rexmle.tasks.checks import check_shape, read_submitted_image

MASK_SUFFIXES = (".tif", ".tiff", ".png")
MAX_INSTANCE_ID = 2**31 - 1
MAX_INSTANCES = 1_000_000
_BINCOUNT_MAX_ID = 1 << 26


@functools.lru_cache(maxsize=8)
def image_sizes(public_dir: Path) -> dict[str, tuple[int, int]]:
    """``image_id`` -> (height, width) from ``public/test/image_sizes.csv``."""
    with open(public_dir / "test" / SIZES_FILE, newline="", encoding="utf-8") as handle:
        return {
            row["image_id"]: (int(row["height"]), int(row["width"]))
            for row in csv.DictReader(handle)
        }


def count_instances(labels: np.ndarray) -> int:
    """Number of distinct non-zero values of a non-negative integer map."""
    if labels.size == 0:
        return 0
    top = int(labels.max())
    if top <= MAX_INSTANCES:
        if top <= 0:
            return 0
        present = np.zeros(top + 1, dtype=bool)
        present[labels.ravel()] = True
        return int(np.count_nonzero(present[1:]))
    if top <= _BINCOUNT_MAX_ID:
        return int(np.count_nonzero(np.bincount(labels.ravel().astype(np.int64))[1:]))
    values = np.unique(labels)
    return int(np.count_nonzero(values))


def check_mask_file(case_id: str, path: Path, public_dir: Path) -> list[str]:
    """Reasons why ``path`` is not a valid instance map for test image ``case_id``."""
    expected = image_sizes(public_dir)[case_id]
    image, problem = read_submitted_image(path, suffixes=MASK_SUFFIXES, expected_shape=expected)
    if image is None:
        return [str(problem)]
    labels = np.asarray(image.array)
    if labels.ndim != 2:
        return [
            f"{path.name}: the array has shape {labels.shape}; write a single-channel 2-D "
            f"label map (no channel axis, no RGB)"
        ]
    if labels.dtype.kind not in "iu":
        return [
            f"{path.name}: dtype {labels.dtype} is not an integer type; write instance ids as "
            f"uint8/16/32/64 or int8/16/32/64 (float and bool maps are not accepted)"
        ]
    shape_problem = check_shape(labels.shape, expected, what=path.name)
    if shape_problem:
        return [shape_problem]
    if labels.size == 0:
        return []
    low, high = int(labels.min()), int(labels.max())
    if low < 0:
        return [f"{path.name}: negative value {low}; 0 is background, instances are positive ids"]
    if high > MAX_INSTANCE_ID:
        return [
            f"{path.name}: instance id {high} exceeds {MAX_INSTANCE_ID} (2**31 - 1); the official "
            f"evaluation casts maps to int32, so renumber the instances"
        ]
    n_instances = count_instances(labels)
    if n_instances > MAX_INSTANCES:
        return [
            f"{path.name}: {n_instances} distinct instance ids; at most {MAX_INSTANCES} allowed"
        ]
    return []
