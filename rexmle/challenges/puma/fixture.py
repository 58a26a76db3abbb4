"""Mini raw fixture of PUMA: the extracted Zenodo archives, 10 ROIs of 128 x 128 px.

Layout as in the release (record 14869398): ``01_training_dataset_tif_ROIs/<case>.tif`` (RGBA
TIFF), ``01_training_dataset_geojson_tissue/<case>_tissue.geojson`` and the nuclei files
``<case>_nuclei.geojson``, which sit directly in ``raw/`` as an archive without a top folder
extracts. Cases ``training_set_{primary,metastatic}_roi_001 ... 005``; the split sends
``training_set_primary_roi_004`` and ``training_set_metastatic_roi_002`` to test.

Tissue files: 5-6 features per ROI (every ROI holds all five scored classes): a stroma Polygon
with a hole, a tumour Polygon overlapping it, an epidermis band, a blood-vessel MultiPolygon, a
necrosis Polygon inside the tumour and, in some ROIs, a white-background Polygon painted last.
``training_set_primary_roi_002`` is stored as a bare list of features.

Nuclei files: 20-30 hexagonal Polygons with closed rings on a jittered 16 px grid; every ROI except
``training_set_metastatic_roi_002`` uses all ten classes (that one has no neutrophils and no
apoptotic cells, so a track-2 class is missing from one test case); ``training_set_primary_roi_004``
holds one MultiPolygon nucleus (two parts) and ``training_set_metastatic_roi_002`` two nuclei whose
centres are 10 px apart.

Pixels are drawn from the annotations (a colour per tissue class, a darker colour and a size per
nucleus class, plus noise), so a model can learn from the training ROIs.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import numpy.typing as npt

from .classes import NUCLEI_NAMES, TISSUE_VALUES
from .geojson import Feature
from .raster import paint_features, polygon_window

ROI_SIZE = 128
ROI_FOLDER = "01_training_dataset_tif_ROIs"
TISSUE_FOLDER = "01_training_dataset_geojson_tissue"
MULTIPOLYGON_NUCLEUS_CASE = "training_set_primary_roi_004"
CLOSE_PAIR_CASE = "training_set_metastatic_roi_002"
BARE_LIST_CASE = "training_set_primary_roi_002"
CLOSE_PAIR_DISTANCE_PX = 10.0
MIN_NUCLEUS_DISTANCE_PX = 14.0
GRID_PX = 16.0
MISSING_CLASSES = {CLOSE_PAIR_CASE: ("nuclei_neutrophil", "nuclei_apoptosis")}

TISSUE_RGB: dict[int, tuple[int, int, int]] = {
    0: (242, 240, 243),
    1: (232, 170, 200),
    2: (205, 70, 85),
    3: (175, 115, 180),
    4: (215, 140, 165),
    5: (150, 135, 120),
}
NUCLEUS_STYLE: dict[str, tuple[tuple[int, int, int], float]] = {
    "nuclei_tumor": ((95, 45, 120), 5.0),
    "nuclei_lymphocyte": ((40, 30, 80), 3.0),
    "nuclei_plasma_cell": ((70, 35, 95), 3.5),
    "nuclei_histiocyte": ((110, 70, 130), 4.5),
    "nuclei_melanophage": ((90, 60, 35), 4.5),
    "nuclei_neutrophil": ((60, 50, 140), 3.5),
    "nuclei_stroma": ((120, 60, 110), 3.0),
    "nuclei_epithelium": ((85, 55, 150), 4.0),
    "nuclei_endothelium": ((130, 40, 70), 3.0),
    "nuclei_apoptosis": ((30, 20, 40), 2.5),
}


def case_ids(n_per_kind: int = 5) -> list[str]:
    """Case ids: ``n_per_kind`` primary then ``n_per_kind`` metastatic ROIs."""
    return [
        f"training_set_{kind}_roi_{n:03d}"
        for kind in ("primary", "metastatic")
        for n in range(1, n_per_kind + 1)
    ]


def _blob(
    rng: np.random.Generator, centre: tuple[float, float], radius: float, n: int
) -> list[list[float]]:
    """A closed, jittered star-shaped ring around ``centre`` (first vertex repeated at the end).

    Vertices lie at evenly spread angles (jittered) and 0.75-1.15 x ``radius``: the ring is simple
    and contains the disc of radius 0.7 x ``radius`` around ``centre``.
    """
    angles = (np.arange(n) + rng.uniform(-0.3, 0.3, n)) * 2 * np.pi / n
    radii = radius * rng.uniform(0.75, 1.15, n)
    ring = [
        [round(centre[0] + r * math.cos(a), 2), round(centre[1] + r * math.sin(a), 2)]
        for a, r in zip(angles, radii, strict=True)
    ]
    return [*ring, ring[0]]


def _rectangle(x0: float, y0: float, x1: float, y1: float) -> list[list[float]]:
    ring = [[x0, y0], [x1, y0], [x1, y1], [x0, y1]]
    return [*ring, ring[0]]


def _feature(name: str, geometry_type: str, coordinates: list) -> dict[str, object]:
    return {
        "type": "Feature",
        "geometry": {"type": geometry_type, "coordinates": coordinates},
        "properties": {
            "objectType": "annotation",
            "classification": {"name": name, "color": [128, 128, 128]},
        },
    }


def _tissue_features(rng: np.random.Generator, index: int, scale: float) -> list[dict]:
    """Tissue features drawn on a 128 px canvas, coordinates multiplied by ``scale``."""

    def scaled(ring: list[list[float]]) -> list[list[float]]:
        return [[round(x * scale, 2), round(y * scale, 2)] for x, y in ring]

    centre = (64 + rng.uniform(-4, 4), 64 + rng.uniform(-4, 4))
    hole = (rng.uniform(37, 43), rng.uniform(77, 83))  # well inside the stroma outline
    stroma = [
        _blob(rng, centre, 60.0, 14),
        _rectangle(hole[0] - 6, hole[1] - 6, hole[0] + 6, hole[1] + 6)[::-1],
    ]
    tumour_centre = (rng.uniform(72, 84), rng.uniform(66, 80))
    tumour = [_blob(rng, tumour_centre, 24.0, 11)]
    band_top = rng.uniform(3, 8)
    epidermis = [_rectangle(6.0, band_top, 122.0, band_top + rng.uniform(10, 14))]
    vessels = [
        [_blob(rng, (rng.uniform(20, 40), rng.uniform(34, 50)), 6.0, 8)],
        [_blob(rng, (rng.uniform(44, 56), rng.uniform(100, 112)), 5.0, 8)],
    ]
    necrosis = [_blob(rng, (tumour_centre[0] + 6, tumour_centre[1] + 4), 7.0, 9)]
    features = [
        _feature("tissue_stroma", "Polygon", [scaled(r) for r in stroma]),
        _feature("tissue_tumor", "Polygon", [scaled(r) for r in tumour]),
        _feature("tissue_epidermis", "Polygon", [scaled(r) for r in epidermis]),
        _feature("tissue_blood_vessel", "MultiPolygon", [[scaled(r) for r in p] for p in vessels]),
        _feature("tissue_necrosis", "Polygon", [scaled(r) for r in necrosis]),
    ]
    if index % 2 == 0:
        corner = [_blob(rng, (rng.uniform(8, 14), rng.uniform(116, 122)), 12.0, 10)]
        features.append(_feature("tissue_white_background", "Polygon", [scaled(r) for r in corner]))
    return features


def _hexagon(rng: np.random.Generator, centre: tuple[float, float], radius: float) -> list:
    turn = rng.uniform(0, np.pi / 3)
    ring = [
        [
            round(centre[0] + radius * math.cos(turn + k * np.pi / 3), 2),
            round(centre[1] + radius * math.sin(turn + k * np.pi / 3), 2),
        ]
        for k in range(6)
    ]
    return [*ring, ring[0]]


def _nucleus_centres(
    rng: np.random.Generator, n: int, size: int, close_pair: bool
) -> list[tuple[float, float]]:
    """``n`` centres on a jittered 16 px grid (>= 14 px apart), optionally a 10 px pair first."""
    cells = np.arange(GRID_PX / 2, size - GRID_PX / 2 + 1e-9, GRID_PX)
    grid = [(float(x), float(y)) for y in cells for x in cells]
    order = rng.permutation(len(grid))
    centres: list[tuple[float, float]] = []
    if close_pair:
        x, y = grid[int(order[0])]
        centres += [(x - CLOSE_PAIR_DISTANCE_PX / 2, y), (x + CLOSE_PAIR_DISTANCE_PX / 2, y)]
    for k in order[1:]:
        if len(centres) == n:
            break
        x, y = grid[int(k)]
        candidate = (x + float(rng.uniform(-1, 1)), y + float(rng.uniform(-1, 1)))
        # grid points are >= 14 px apart already; only the close pair can be nearer
        if all(math.dist(candidate, c) >= MIN_NUCLEUS_DISTANCE_PX for c in centres[:2]):
            centres.append(candidate)
    return centres


def _nuclei_features(
    rng: np.random.Generator, case_id: str, size: int, n_nuclei: tuple[int, int]
) -> list[dict[str, object]]:
    missing = MISSING_CLASSES.get(case_id, ())
    names = [name for name in NUCLEI_NAMES if name not in missing]
    n = int(rng.integers(n_nuclei[0], n_nuclei[1] + 1))
    centres = _nucleus_centres(rng, n, size, close_pair=case_id == CLOSE_PAIR_CASE)
    classes = names + [str(c) for c in rng.choice(names, size=max(len(centres) - len(names), 0))]
    features = []
    for k, (centre, name) in enumerate(zip(centres, classes, strict=True)):
        radius = NUCLEUS_STYLE[name][1]
        if case_id == MULTIPOLYGON_NUCLEUS_CASE and k == len(centres) - 2:
            other = centres[-1]
            parts = [[_hexagon(rng, centre, radius)], [_hexagon(rng, other, radius)]]
            features.append(_feature(name, "MultiPolygon", parts))
            break
        features.append(_feature(name, "Polygon", [_hexagon(rng, centre, radius)]))
    return features


def _as_features(raw: list[dict]) -> list[Feature]:
    features = []
    for item in raw:
        geometry = item["geometry"]
        coordinates = geometry["coordinates"]
        polygons = [coordinates] if geometry["type"] == "Polygon" else coordinates
        features.append(
            Feature(
                class_name=str(item["properties"]["classification"]["name"]),
                geometry_type=str(geometry["type"]),
                polygons=[[np.asarray(r, dtype=np.float64) for r in p] for p in polygons],
            )
        )
    return features


def render_roi(
    rng: np.random.Generator, tissue: list[dict], nuclei: list[dict], size: int
) -> npt.NDArray[np.uint8]:
    """An RGBA image drawn from the annotations: tissue colours, darker nuclei, noise."""
    labels = paint_features(_as_features(tissue), TISSUE_VALUES, (size, size))
    palette = np.array([TISSUE_RGB[v] for v in range(len(TISSUE_RGB))], dtype=np.float32)
    rgb = palette[labels]
    # nuclei never overlap here, so the even-odd union of all outlines of one class is exact
    outlines: dict[str, list[np.ndarray]] = {}
    for feature in _as_features(nuclei):
        outlines.setdefault(feature.class_name, []).extend(p[0] for p in feature.polygons)
    for name, rings in outlines.items():
        window = polygon_window(rings, (size, size))
        if window is not None:
            rgb[window.slices][window.mask] = NUCLEUS_STYLE[name][0]
    rgb += rng.normal(0.0, 10.0, rgb.shape).astype(np.float32)
    rgba = np.full((size, size, 4), 255, dtype=np.uint8)
    rgba[..., :3] = np.clip(np.rint(rgb), 0, 255).astype(np.uint8)
    return rgba


def _write_json(path: Path, content: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content) + "\n", encoding="utf-8")


QUIRK_CASE = "training_set_metastatic_roi_103"
"""The ROI that record version 5 restores, stored as the only ``.tiff`` (declared out)."""


def make_fixture(raw_dir: Path, *, seed: int = 0, real_quirks: bool = False) -> None:
    """Write the 10 mini ROIs and their annotations in the extracted release layout.

    ``real_quirks`` adds the version-5 ROI ``training_set_metastatic_roi_103.tiff`` with its
    tissue and nuclei files (drawn from its own generator: the other ten are unchanged).
    """
    write_raw(raw_dir, seed=seed)
    if real_quirks:
        write_case(raw_dir, QUIRK_CASE, np.random.default_rng([seed, 103]), suffix=".tiff")


def write_case(
    raw_dir: Path,
    case_id: str,
    rng: np.random.Generator,
    *,
    index: int = 0,
    size: int = ROI_SIZE,
    n_nuclei: tuple[int, int] = (20, 30),
    suffix: str = ".tif",
) -> None:
    """Write one ROI (``<case_id><suffix>``) with its tissue and nuclei GeoJSON files."""
    import tifffile

    tissue = _tissue_features(rng, index, size / ROI_SIZE)
    nuclei = _nuclei_features(rng, case_id, size, n_nuclei)
    tissue_content: object = (
        tissue if case_id == BARE_LIST_CASE else {"type": "FeatureCollection", "features": tissue}
    )
    _write_json(raw_dir / TISSUE_FOLDER / f"{case_id}_tissue.geojson", tissue_content)
    _write_json(
        raw_dir / f"{case_id}_nuclei.geojson",
        {"type": "FeatureCollection", "features": nuclei},
    )
    image = render_roi(rng, tissue, nuclei, size)
    target = raw_dir / ROI_FOLDER / f"{case_id}{suffix}"
    target.parent.mkdir(parents=True, exist_ok=True)
    tifffile.imwrite(target, image, photometric="rgb", extrasamples=("unassalpha",))


def write_raw(
    raw_dir: Path,
    *,
    seed: int = 0,
    size: int = ROI_SIZE,
    n_per_kind: int = 5,
    n_nuclei: tuple[int, int] = (20, 30),
) -> None:
    """Write ``2 * n_per_kind`` ROIs of ``size`` x ``size`` px with their annotations.

    The mini fixture uses the defaults; benchmarks ask for real-size ROIs and nucleus counts.
    """
    rng = np.random.default_rng(seed)
    for index, case_id in enumerate(case_ids(n_per_kind)):
        write_case(raw_dir, case_id, rng, index=index, size=size, n_nuclei=n_nuclei)
