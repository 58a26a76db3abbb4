"""Mini raw fixture of TopCoW 2024: the extracted ``TopCoW2024_Data_Release.zip``, 6 CT + 6 MR cases.

Layout, names and formats follow the real release (``imagesTr/``, ``cow_seg_labelsTr/``,
``roi_loc_labelsTr/`` 3-line ``.txt``, ``antpos_edges_labelsTr/`` ``.yml``). Volumes are
32 x 28 x 20 voxels (x, y, z), int16 images, uint8 label maps, LPS+ (left labels at larger x);
spacing CT (0.45, 0.45, 0.6) mm, MR (0.3, 0.3, 0.6) mm. Vessels are 3-voxel-thick tubes arranged
like a Circle of Willis; each case is shifted by up to one voxel per axis and drops or detaches
segments so that several variant strings occur. The basilar artery runs below the ROI and a
fragment of label 5 lies outside it (both exercise the Task-1 crop). The split sends pids 001 and
002 to test in both tracks.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rexmle.io import write_image

from .labels import REGION_EDGES
from .raw import EDGE_LABELS, IMAGES, ROI_LABELS, SEG_LABELS, TOP_FOLDER
from .roi import Box, format_roi_text

SHAPE = (32, 28, 20)
SPACING_MM = {"ct": (0.45, 0.45, 0.6), "mr": (0.3, 0.3, 0.6)}
ORIGIN_MM = {"ct": (-7.2, -6.3, -6.0), "mr": (-4.8, -4.2, -6.0)}
INTENSITY = {"ct": ((40.0, 15.0), (350.0, 30.0)), "mr": ((60.0, 15.0), (400.0, 40.0))}
"""(background mean, sd), (vessel mean, sd) per modality."""
PIDS = ("001", "002", "003", "004", "005", "006")
Z_PLANE = 10
ROI_LOCATION = (3, 1, 5)
ROI_SIZE = (26, 24, 10)

Point = tuple[int, int, int]


@dataclass(frozen=True)
class Variant:
    """Which segments a case lacks or has detached."""

    no_3rd_a2: bool = False
    no_acom: bool = False
    no_l_pcom: bool = False
    no_r_pcom: bool = False
    detach_l_a1: bool = False
    detach_r_p1: bool = False

    def edges(self) -> dict[str, dict[str, int]]:
        """The edge lists this variant's label map is built to have."""
        anterior = (int(not self.detach_l_a1), int(not self.no_acom), int(not self.no_3rd_a2), 1)
        posterior = (int(not self.no_l_pcom), 1, int(not self.detach_r_p1), int(not self.no_r_pcom))
        return {
            "anterior": dict(zip(REGION_EDGES["anterior"], anterior, strict=True)),
            "posterior": dict(zip(REGION_EDGES["posterior"], posterior, strict=True)),
        }


VARIANTS: dict[str, Variant] = {
    "001": Variant(no_3rd_a2=True),
    "002": Variant(no_l_pcom=True),
    "003": Variant(no_3rd_a2=True),
    "004": Variant(no_l_pcom=True),
    "005": Variant(no_3rd_a2=True, detach_l_a1=True),
    "006": Variant(no_3rd_a2=True, no_acom=True, detach_r_p1=True),
}


def _paint(labels: np.ndarray, points: list[Point], value: int, shift: Point) -> None:
    """Paint a 3-voxel-thick tube along the polyline ``points`` (cubes of half-width 1)."""
    for start, end in itertools.pairwise(points):
        steps = max(abs(e - s) for s, e in zip(start, end, strict=True))
        for t in range(steps + 1):
            centre = [
                round(s + (e - s) * t / max(steps, 1)) + d
                for s, e, d in zip(start, end, shift, strict=True)
            ]
            box = tuple(
                slice(max(c - 1, 0), min(c + 2, n))
                for c, n in zip(centre, labels.shape, strict=True)
            )
            labels[box] = value


def make_label_map(variant: Variant, shift: Point) -> np.ndarray:
    """The CoW label map of one case, (x, y, z) order, uint8."""
    z = Z_PLANE
    labels = np.zeros(SHAPE, dtype=np.uint8)
    tubes: list[tuple[int, list[Point]]] = []
    if not variant.no_3rd_a2:
        tubes.append((15, [(16, 4, z), (16, 3, z)]))
    if not variant.no_acom:
        tubes.append((10, [(16, 7, z), (16, 7, z)]))
    r_aca_start = (12, 12, z)
    l_aca_start = (19, 11, z) if variant.detach_l_a1 else (20, 12, z)
    r_pca_start = (12, 22, z) if variant.detach_r_p1 else (13, 22, z)
    tubes += [
        (11, [r_aca_start, (14, 10, z), (14, 4, z)]),
        (12, [l_aca_start, (18, 10, z), (18, 4, z)]),
        (4, [(9, 14, 1), (9, 14, z)]),
        (6, [(23, 14, 1), (23, 14, z)]),
        (5, [(6, 14, z), (2, 14, z)]),
        (7, [(26, 14, z), (30, 14, z)]),
        (1, [(16, 22, 1), (16, 22, z)]),
        (2, [r_pca_start, (5, 22, z)]),
        (3, [(19, 22, z), (27, 22, z)]),
    ]
    if not variant.no_r_pcom:
        tubes.append((8, [(9, 17, z), (9, 19, z)]))
    if not variant.no_l_pcom:
        tubes.append((9, [(23, 17, z), (23, 19, z)]))
    for value, points in tubes:
        _paint(labels, points, value, shift)
    labels[1:3, 26:28, 17:19] = 5  # a distal fragment outside the ROI
    return labels


def _edges_yaml(edges: dict[str, dict[str, int]]) -> str:
    lines = []
    for region, values in edges.items():
        lines.append(f"{region}:")
        lines.extend(f"  {name}: {value}" for name, value in values.items())
    return "\n".join(lines) + "\n"


def make_fixture(raw_dir: Path, *, seed: int = 0) -> None:
    """Write both modalities under ``raw_dir/TopCoW2024_Data_Release/`` (the extracted archive).

    Seed 0 gives each case its fixed variant; any other seed (a prepare's secret) draws the
    variants too, so the test cases' edge answers cannot be known without it.
    """
    root = raw_dir / TOP_FOLDER
    variant_of = dict(VARIANTS)
    if seed != 0:  # a secret seed also draws which variant each case has (the edge answers)
        draw = np.random.default_rng([seed, 3])
        names = sorted(VARIANTS)
        variant_of = {pid: VARIANTS[names[int(draw.integers(len(names)))]] for pid in PIDS}
    for offset, modality in enumerate(("ct", "mr")):
        rng = np.random.default_rng(seed * 2 + offset)
        (bg_mean, bg_sd), (vessel_mean, vessel_sd) = INTENSITY[modality]
        grid: dict[str, Any] = {
            "spacing_mm": SPACING_MM[modality],
            "origin_mm": ORIGIN_MM[modality],
        }
        for pid in PIDS:
            dx, dy, dz = (int(v) for v in rng.integers(-1, 2, size=3))
            labels = make_label_map(variant_of[pid], (dx, dy, dz))
            vessel = labels > 0
            image = np.where(
                vessel,
                rng.normal(vessel_mean, vessel_sd, SHAPE),
                rng.normal(bg_mean, bg_sd, SHAPE),
            )
            stem = f"topcow_{modality}_{pid}"
            write_image(root / IMAGES / f"{stem}_0000.nii.gz", image.astype(np.int16), **grid)
            write_image(root / SEG_LABELS / f"{stem}.nii.gz", labels, **grid)
            box = Box(
                size=ROI_SIZE,
                location=(ROI_LOCATION[0] + dx, ROI_LOCATION[1] + dy, ROI_LOCATION[2] + dz),
            )
            (root / ROI_LABELS).mkdir(parents=True, exist_ok=True)
            (root / ROI_LABELS / f"{stem}.txt").write_text(format_roi_text(box), encoding="utf-8")
            (root / EDGE_LABELS).mkdir(parents=True, exist_ok=True)
            (root / EDGE_LABELS / f"{stem}.yml").write_text(
                _edges_yaml(variant_of[pid].edges()), encoding="utf-8"
            )
