"""Mini raw fixture of TopBrain 2025, shared by both tracks: the extracted release archive.

``TopBrain_Data_Release_Batches1n2_081425.zip`` is extracted into ``raw/``; it holds a top folder
of the same name with four sub-folders::

    imagesTr_topbrain_ct/topcow_ct_<pid>_0000.nii.gz    labelsTr_topbrain_ct/topcow_ct_<pid>.nii.gz
    imagesTr_topbrain_mr/topcow_mr_<pid>_0000.nii.gz    labelsTr_topbrain_mr/topcow_mr_<pid>.nii.gz

Six cases per modality with pids 001, 002, 004, 007, 010, 012. Volumes are 24 x 20 x 16 voxels
(x, y, z), int16 images, spacing CT (0.5, 0.5, 0.8) mm and MR (0.4, 0.4, 0.6) mm. Labels (uint8)
are one-voxel-thick tubes for labels 1-12, 15, 25, 31 and (MR) 41, laid out like the circle of
Willis with left-side labels at larger x (LPS+). Tubes touch only where the vendored
valid-neighbour table allows (the test suite checks this). Per case the whole tree is shifted by
up to one voxel per axis, and the side-road labels 8, 9, 15 and 31 are each left out at random.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from rexmle.io import write_image

TOP_FOLDER = "TopBrain_Data_Release_Batches1n2_081425"
SHAPE = (24, 20, 16)
SPACING_MM = {"ct": (0.5, 0.5, 0.8), "mr": (0.4, 0.4, 0.6)}
PIDS = ("001", "002", "004", "007", "010", "012")
OPTIONAL_LABELS = (8, 9, 15, 31)

Point = tuple[int, int, int]
TUBES: dict[int, tuple[Point, ...]] = {
    1: ((12, 13, 2), (12, 13, 7)),  # BA
    2: ((11, 13, 8), (5, 13, 8), (5, 16, 8)),  # R-P1P2
    3: ((13, 13, 8), (19, 13, 8), (19, 16, 8)),  # L-P1P2
    4: ((6, 9, 3), (6, 9, 10)),  # R-ICA
    5: ((5, 9, 11), (1, 9, 11)),  # R-M1
    6: ((18, 9, 3), (18, 9, 10)),  # L-ICA
    7: ((19, 9, 11), (22, 9, 11)),  # L-M1
    8: ((6, 12, 8), (6, 10, 8)),  # R-Pcom
    9: ((18, 12, 8), (18, 10, 8)),  # L-Pcom
    10: ((11, 4, 12), (13, 4, 12)),  # Acom
    11: ((7, 8, 11), (10, 8, 11), (10, 4, 11), (10, 4, 14)),  # R-A1A2
    12: ((17, 8, 11), (14, 8, 11), (14, 4, 11), (14, 4, 14)),  # L-A1A2
    15: ((12, 4, 13), (12, 4, 14)),  # 3rd-A2
    25: ((11, 13, 5), (8, 13, 5), (8, 15, 5)),  # R-SCA
    31: ((5, 9, 7), (3, 9, 7), (3, 11, 7)),  # R-AChA
}
MR_TUBES: dict[int, tuple[Point, ...]] = {41: ((2, 3, 4), (2, 3, 7))}  # R-MMA, touches nothing


def _draw_path(labels: np.ndarray, points: tuple[Point, ...], value: int, shift: Point) -> None:
    """Draw a 6-connected voxel path through ``points`` (axis by axis between consecutive points)."""
    current = np.asarray(points[0]) + shift
    labels[tuple(current)] = value
    for target in points[1:]:
        goal = np.asarray(target) + shift
        for axis in range(3):
            while current[axis] != goal[axis]:
                current[axis] += 1 if goal[axis] > current[axis] else -1
                labels[tuple(current)] = value


def label_map(modality: str, rng: np.random.Generator) -> np.ndarray:
    """One case's label map (uint8, (x, y, z))."""
    labels = np.zeros(SHAPE, dtype=np.uint8)
    shift = tuple(int(s) for s in rng.integers(-1, 2, size=3))
    tubes = dict(TUBES)
    if modality == "mr":
        tubes.update(MR_TUBES)
    for label in OPTIONAL_LABELS:
        if rng.random() < 0.3:
            tubes.pop(label)
    for label, points in tubes.items():
        _draw_path(labels, points, label, shift)  # type: ignore[arg-type]
    return labels


QUIRK_LABEL_FOLDERS = ("5groups", "binary")
"""Derived label folders (``labelsTr_topbrain_<mod>_<suffix>``) seen beside the real ones."""


def make_fixture(raw_dir: Path, *, seed: int = 0, real_quirks: bool = False) -> None:
    """Write both modalities' extracted layout under ``raw_dir/<top folder>/``.

    ``real_quirks`` adds, per modality, the sibling folders ``labelsTr_topbrain_<mod>_5groups``
    and ``_binary`` with label files of the same names (vessel groups and a binary mask), which
    prepare must leave aside by folder name.
    """
    rng = np.random.default_rng(seed)
    root = raw_dir / TOP_FOLDER
    if real_quirks:
        write_derived_label_folders(root, seed)
    for modality, (vessel, background) in (("ct", (300.0, 30.0)), ("mr", (400.0, 100.0))):
        spacing = SPACING_MM[modality]
        origin = tuple(-n * s / 2 for n, s in zip(SHAPE, spacing, strict=True))
        for pid in PIDS:
            labels = label_map(modality, rng)
            image = rng.normal(background, 20.0, SHAPE) + (vessel - background) * (labels > 0)
            grid: dict[str, Any] = {"spacing_mm": spacing, "origin_mm": origin}
            write_image(
                root / f"imagesTr_topbrain_{modality}" / f"topcow_{modality}_{pid}_0000.nii.gz",
                image.astype(np.int16),
                **grid,
            )
            write_image(
                root / f"labelsTr_topbrain_{modality}" / f"topcow_{modality}_{pid}.nii.gz",
                labels,
                **grid,
            )


def write_derived_label_folders(root: Path, seed: int) -> None:
    """The ``_5groups`` and ``_binary`` sibling label folders, one file per case and modality."""
    rng = np.random.default_rng([seed, 5])
    for modality in SPACING_MM:
        spacing = SPACING_MM[modality]
        origin = tuple(-n * s / 2 for n, s in zip(SHAPE, spacing, strict=True))
        for pid in PIDS:
            labels = label_map(modality, rng)
            derived = {"5groups": np.minimum(labels, 5), "binary": (labels > 0)}
            for suffix in QUIRK_LABEL_FOLDERS:
                folder = root / f"labelsTr_topbrain_{modality}_{suffix}"
                write_image(
                    folder / f"topcow_{modality}_{pid}.nii.gz",
                    derived[suffix].astype(np.uint8),
                    spacing_mm=spacing,
                    origin_mm=origin,
                )
