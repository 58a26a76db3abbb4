"""Mini raw fixture of SEG.A 2023: the extracted AVT collection, 9 small cases.

The three Figshare archives ``Dongyang.zip``, ``KiTS.zip`` and ``Rider.zip`` are extracted into
``raw/<archive-stem>/``; inside, every case is a folder ``<case>/`` holding ``<case>.nrrd`` (CTA,
int16 HU) and ``<case>.seg.nrrd`` (mask, uint8 {0, 1}) on the same grid. Dongyang gets one extra
nesting level (``Dongyang/Dongyang/D1/``), as third-party loaders report for the real archive.
Cases D1, D2, D10 (string order puts D10 before D2), K1-K3, R1-R3. Volumes are
20 x 16 x 12 voxels (x, y, z) at (0.8, 0.8, 2.5) mm; the mask is a bent tube of radius 2-3 voxels
with one branch, kept at least one slice away from the first and last z slice.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from rexmle.io import write_image

SHAPE = (20, 16, 12)
SPACING_MM = (0.8, 0.8, 2.5)
CASES = {
    "Dongyang": ("Dongyang/Dongyang", ("D1", "D2", "D10")),
    "KiTS": ("KiTS", ("K1", "K2", "K3")),
    "Rider": ("Rider", ("R1", "R2", "R3")),
}
"""archive stem -> (case folder parent relative to raw/, case ids)."""


def vessel_mask(rng: np.random.Generator) -> np.ndarray:
    """A bent tube along z (slices 1..9) with a branch, as a uint8 (x, y, z) mask."""
    mask = np.zeros(SHAPE, dtype=np.uint8)
    x, y = np.ogrid[: SHAPE[0], : SHAPE[1]]
    radius = float(rng.integers(2, 4))
    x0, y0 = float(rng.integers(8, 12)), float(rng.integers(6, 10))
    bend = float(rng.uniform(-0.35, 0.35))
    for z in range(1, 10):
        cx, cy = x0 + bend * (z - 1), y0
        mask[..., z][(x - cx) ** 2 + (y - cy) ** 2 <= radius**2] = 1
    branch_z = int(rng.integers(3, 7))
    cy = y0
    for cx in range(int(x0), min(int(x0) + 8, SHAPE[0] - 1)):
        mask[..., branch_z][(x - cx) ** 2 + (y - cy) ** 2 <= 1.5**2] = 1
    return mask


RIDER_FOLDER_SUFFIX = " (AD)"
"""``real_quirks``: Rider case folders are named like ``R1 (AD)/`` (spaces and brackets)."""


def make_fixture(raw_dir: Path, *, seed: int = 0, real_quirks: bool = False) -> None:
    """Write the extracted layout of the three archives under ``raw_dir``.

    ``real_quirks`` names the Rider case folders ``R<n> (AD)/``; the files inside keep the
    case id (``R1.nrrd``, ``R1.seg.nrrd``).
    """
    rng = np.random.default_rng(seed)
    origin = (-8.0, -6.4, -15.0)
    for stem, (parent, case_ids) in CASES.items():
        for case_id in case_ids:
            mask = vessel_mask(rng)
            image = rng.normal(40.0, 25.0, SHAPE) + 260.0 * mask
            quirk = RIDER_FOLDER_SUFFIX if real_quirks and stem == "Rider" else ""
            folder = raw_dir / parent / f"{case_id}{quirk}"
            grid: dict[str, Any] = {"spacing_mm": SPACING_MM, "origin_mm": origin}
            write_image(folder / f"{case_id}.nrrd", image.astype(np.int16), **grid)
            write_image(folder / f"{case_id}.seg.nrrd", mask, **grid)
