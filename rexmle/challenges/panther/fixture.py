"""Mini raw fixture of PANTHER 2025, shared by both tasks: the two extracted Zenodo archives.

``PANTHER_Task1.zip`` and ``PANTHER_Task2.zip`` are extracted into ``raw/<archive-stem>/``:

    PANTHER_Task1/ImagesTr/100NN_0001_0000.mha     NN = 00..09 (10 labelled cases)
    PANTHER_Task1/LabelsTr/100NN_0001.mha
    PANTHER_Task1/ImagesTr_unlabeled/10000_0002_0000.mha, 10001_0003_0000.mha
    PANTHER_Task2/ImagesTr/103NN_0000.mha          NN = 03..12 (10 labelled cases)
    PANTHER_Task2/LabelsTr/103NN.mha

Volumes are 24 x 20 x 12 voxels (x, y, z) at the anisotropic spacing (0.8, 0.8, 3.0) mm, float32
images; labels are uint8 with a pancreas blob (2) holding a hypo-intense tumour (1) of 20-200
voxels that spans 2-3 slices and stays at least two slices away from the first and last slice.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from rexmle.io import write_image

SHAPE = (24, 20, 12)
SPACING_MM = (0.8, 0.8, 3.0)
TASK1_IDS = tuple(f"100{n:02d}_0001" for n in range(10))
TASK2_IDS = tuple(f"103{n:02d}" for n in range(3, 13))
UNLABELLED = ("10000_0002_0000.mha", "10001_0003_0000.mha")
PANCREAS, TUMOUR = 2, 1


def label_map(rng: np.random.Generator) -> np.ndarray:
    """Pancreas ellipsoid (2) with a tumour (1) inside, as a uint8 (x, y, z) array."""
    x, y, z = np.ogrid[: SHAPE[0], : SHAPE[1], : SHAPE[2]]
    labels = np.zeros(SHAPE, dtype=np.uint8)
    cx, cy, cz = int(rng.integers(10, 14)), int(rng.integers(8, 12)), int(rng.integers(5, 7))
    pancreas = ((x - cx) / 8.0) ** 2 + ((y - cy) / 5.0) ** 2 + ((z - cz) / 2.6) ** 2 <= 1.0
    labels[pancreas] = PANCREAS
    radius = float(rng.uniform(2.2, 3.3))
    depth = int(rng.integers(2, 4))
    tx, ty = cx + int(rng.integers(-2, 3)), cy + int(rng.integers(-1, 2))
    disk = (x - tx) ** 2 + (y - ty) ** 2 <= radius**2
    tumour = disk & (z >= cz - 1) & (z < cz - 1 + depth)
    labels[tumour] = TUMOUR
    return labels


def _write_case(
    image_path: Path, label_path: Path | None, rng: np.random.Generator, origin: tuple
) -> None:
    labels = label_map(rng)
    image = rng.normal(100.0, 10.0, SHAPE)
    image += 100.0 * (labels == PANCREAS) + 40.0 * (labels == TUMOUR)
    grid: dict[str, Any] = {"spacing_mm": SPACING_MM, "origin_mm": origin}
    write_image(image_path, image.astype(np.float32), **grid)
    if label_path is not None:
        write_image(label_path, labels, **grid)


def make_fixture(raw_dir: Path, *, seed: int = 0) -> None:
    """Write the extracted layout of both archives under ``raw_dir``."""
    rng = np.random.default_rng(seed)
    origin = (-9.6, -8.0, -18.0)
    task1 = raw_dir / "PANTHER_Task1"
    for case_id in TASK1_IDS:
        _write_case(
            task1 / "ImagesTr" / f"{case_id}_0000.mha",
            task1 / "LabelsTr" / f"{case_id}.mha",
            rng,
            origin,
        )
    for name in UNLABELLED:
        _write_case(task1 / "ImagesTr_unlabeled" / name, None, rng, origin)
    task2 = raw_dir / "PANTHER_Task2"
    for case_id in TASK2_IDS:
        _write_case(
            task2 / "ImagesTr" / f"{case_id}_0000.mha",
            task2 / "LabelsTr" / f"{case_id}.mha",
            rng,
            origin,
        )
