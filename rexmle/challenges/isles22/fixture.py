"""Mini raw fixture of ISLES'22: the extracted BIDS tree of ``ISLES-2022.zip``, 10 small cases.

Layout and naming follow the real release (upper-case ``FLAIR``, masks under ``derivatives/``,
JSON sidecars). DWI/ADC are 16 x 16 x 8 voxels at (2, 2, 4) mm; FLAIR is 20 x 20 x 10 at
(1.6, 1.6, 3.2) mm with another affine. The split sends ``sub-strokecase0009`` (empty mask) and
``sub-strokecase0002`` (two blobs touching only at a corner: one lesion under 26-connectivity)
to test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from rexmle.io import write_image

N_CASES = 10
DWI_SHAPE = (16, 16, 8)
DWI_SPACING = (2.0, 2.0, 4.0)
FLAIR_SHAPE = (20, 20, 10)
FLAIR_SPACING = (1.6, 1.6, 3.2)
EMPTY_CASE = 9
DIAGONAL_CASE = 2


def case_key(n: int) -> str:
    """BIDS key of case ``n``: ``sub-strokecaseNNNN_ses-0001``."""
    return f"sub-strokecase{n:04d}_ses-0001"


def _blob(mask: np.ndarray, centre: tuple[int, int, int], radius: int) -> None:
    x, y, z = np.ogrid[: mask.shape[0], : mask.shape[1], : mask.shape[2]]
    cx, cy, cz = centre
    inside = (x - cx) ** 2 + (y - cy) ** 2 + (2 * (z - cz)) ** 2 <= radius**2
    mask[inside] = 1


def _mask_for(
    n: int, rng: np.random.Generator, diagonal_shift: tuple[int, int, int] = (0, 0, 0)
) -> np.ndarray:
    mask = np.zeros(DWI_SHAPE, dtype=np.uint8)
    if n == EMPTY_CASE:
        return mask
    if n == DIAGONAL_CASE:
        x, y, z = diagonal_shift
        mask[4 + x : 6 + x, 4 + y : 6 + y, 2 + z : 4 + z] = 1
        mask[6 + x : 8 + x, 6 + y : 8 + y, 4 + z : 6 + z] = 1  # touches at one corner only
        return mask
    for _ in range(int(rng.integers(1, 4))):
        centre = (
            int(rng.integers(3, 13)),
            int(rng.integers(3, 13)),
            int(rng.integers(2, 6)),
        )
        _blob(mask, centre, int(rng.integers(1, 4)))
    return mask


REAL_EMPTY_CASES = (150, 151, 170)
"""Cases of the real release whose lesion mask is empty (written by ``real_quirks``)."""


def make_fixture(raw_dir: Path, *, seed: int = 0, real_quirks: bool = False) -> None:
    """Write 10 cases of the real extracted layout under ``raw_dir/ISLES-2022/``.

    Seed 0 puts the diagonal case at its fixed place; any other seed (a prepare's secret)
    shifts it, so no test answer is fixed by the code alone (the empty case stays empty).
    ``real_quirks`` adds the real release's empty-mask cases 0150, 0151 and 0170.
    """
    rng = np.random.default_rng(seed)
    shift = (0, 0, 0)
    if seed != 0:  # a secret seed also moves the diagonal test case's blocks (x by 1 to 6)
        draw = np.random.default_rng([seed, 2])
        shift = (int(draw.integers(1, 7)), int(draw.integers(-4, 7)), int(draw.integers(-2, 3)))
    root = raw_dir / "ISLES-2022"
    for n in range(1, N_CASES + 1):
        _write_case(root, n, _mask_for(n, rng, shift), rng)
    if real_quirks:
        quirk_rng = np.random.default_rng([seed, 150])
        for n in REAL_EMPTY_CASES:
            _write_case(root, n, np.zeros(DWI_SHAPE, dtype=np.uint8), quirk_rng)


def _write_case(root: Path, n: int, mask: np.ndarray, rng: np.random.Generator) -> None:
    """Write case ``n``: DWI, ADC, FLAIR with JSON sidecars and the mask (drawn from ``rng``)."""
    dwi_origin = (-16.0, -16.0, -16.0)
    flair_origin = (-15.0, -17.0, -14.0)
    key = case_key(n)
    subject = key.split("_ses-")[0]
    lesion = mask.astype(bool)
    dwi = rng.normal(300, 40, DWI_SHAPE) + 500 * lesion
    adc = rng.normal(800, 60, DWI_SHAPE) - 400 * lesion
    flair = rng.normal(200, 30, FLAIR_SHAPE)
    dwi_dir = root / subject / "ses-0001" / "dwi"
    anat_dir = root / subject / "ses-0001" / "anat"
    mask_dir = root / "derivatives" / subject / "ses-0001"
    grid: dict[str, Any] = {"spacing_mm": DWI_SPACING, "origin_mm": dwi_origin}
    write_image(dwi_dir / f"{key}_dwi.nii.gz", dwi.astype(np.int16), **grid)
    write_image(dwi_dir / f"{key}_adc.nii.gz", adc.astype(np.float32), **grid)
    write_image(
        anat_dir / f"{key}_FLAIR.nii.gz",
        flair.astype(np.int16),
        spacing_mm=FLAIR_SPACING,
        origin_mm=flair_origin,
    )
    write_image(mask_dir / f"{key}_msk.nii.gz", mask, **grid)
    for path, modality in (
        (dwi_dir / f"{key}_dwi.json", "DWI"),
        (dwi_dir / f"{key}_adc.json", "ADC"),
        (anat_dir / f"{key}_FLAIR.json", "FLAIR"),
    ):
        sidecar = {"Modality": "MR", "SeriesDescription": modality, "MagneticFieldStrength": 3}
        path.write_text(json.dumps(sidecar) + "\n", encoding="utf-8")
