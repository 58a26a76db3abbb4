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

Nuclei files: 20-40 hexagonal Polygons with closed rings; every ROI except
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

from rexmle.challenges.puma.classes import NUCLEI_NAMES, TISSUE_VALUES
from rexmle.challenges.puma.geojson import Feature
from rexmle.challenges.puma.raster import feature_mask, paint_features

ROI_SIZE = 128
ROI_FOLDER = "01_training_dataset_tif_ROIs"
TISSUE_FOLDER = "01_training_dataset_geojson_tissue"
MULTIPOLYGON_NUCLEUS_CASE = "training_set_primary_roi_004"
CLOSE_PAIR_CASE = "training_set_metastatic_roi_002"
BARE_LIST_CASE = "training_set_primary_roi_002"
CLOSE_PAIR_DISTANCE_PX = 10.0
MIN_NUCLEUS_DISTANCE_PX = 14.0
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


def case_ids() -> list[str]:
    """The 10 case ids of the fixture."""
    return [
        f"training_set_{kind}_roi_{n:03d}"
        for kind in ("primary", "metastatic")
        for n in range(1, 6)
    ]


def _blob(
    rng: np.random.Generator, centre: tuple[float, float], radius: float, n: int
) -> list[list[float]]:
    """A closed, jittered ring around ``centre`` (first vertex repeated at the end)."""
    angles = np.sort(rng.uniform(0, 2 * np.pi, n))
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


def _tissue_features(rng: np.random.Generator, index: int) -> list[dict[str, object]]:
    size = ROI_SIZE
    centre = (size / 2 + rng.uniform(-4, 4), size / 2 + rng.uniform(-4, 4))
    hole_centre = (rng.uniform(26, 34), rng.uniform(82, 92))
    stroma = [
        _blob(rng, centre, 60.0, 14),
        _rectangle(
            round(hole_centre[0] - 6, 2),
            round(hole_centre[1] - 6, 2),
            round(hole_centre[0] + 6, 2),
            round(hole_centre[1] + 6, 2),
        )[::-1],
    ]
    tumour_centre = (rng.uniform(72, 84), rng.uniform(66, 80))
    tumour = [_blob(rng, tumour_centre, 24.0, 11)]
    band_top = round(rng.uniform(3, 8), 2)
    epidermis = [_rectangle(6.0, band_top, 122.0, round(band_top + rng.uniform(10, 14), 2))]
    vessels = [
        [_blob(rng, (rng.uniform(20, 40), rng.uniform(34, 50)), 6.0, 8)],
        [_blob(rng, (rng.uniform(44, 56), rng.uniform(100, 112)), 5.0, 8)],
    ]
    necrosis = [_blob(rng, (tumour_centre[0] + 6, tumour_centre[1] + 4), 7.0, 9)]
    features = [
        _feature("tissue_stroma", "Polygon", stroma),
        _feature("tissue_tumor", "Polygon", tumour),
        _feature("tissue_epidermis", "Polygon", epidermis),
        _feature("tissue_blood_vessel", "MultiPolygon", vessels),
        _feature("tissue_necrosis", "Polygon", necrosis),
    ]
    if index % 2 == 0:
        corner = [_blob(rng, (rng.uniform(8, 14), rng.uniform(116, 122)), 12.0, 10)]
        features.append(_feature("tissue_white_background", "Polygon", corner))
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
    rng: np.random.Generator, n: int, close_pair: bool
) -> list[tuple[float, float]]:
    centres: list[tuple[float, float]] = []
    if close_pair:
        x, y = rng.uniform(30, 90), rng.uniform(30, 90)
        centres += [(x, y), (x + CLOSE_PAIR_DISTANCE_PX, y)]
    while len(centres) < n:
        candidate = (float(rng.uniform(8, ROI_SIZE - 8)), float(rng.uniform(8, ROI_SIZE - 8)))
        if all(math.dist(candidate, c) >= MIN_NUCLEUS_DISTANCE_PX for c in centres):
            centres.append(candidate)
    return centres


def _nuclei_features(rng: np.random.Generator, case_id: str) -> list[dict[str, object]]:
    missing = MISSING_CLASSES.get(case_id, ())
    names = [name for name in NUCLEI_NAMES if name not in missing]
    n = int(rng.integers(20, 31))
    centres = _nucleus_centres(rng, n, close_pair=case_id == CLOSE_PAIR_CASE)
    classes = names + [str(c) for c in rng.choice(names, size=n - len(names))]
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


def _as_features(raw: list[dict[str, object]]) -> list[Feature]:
    features = []
    for item in raw:
        geometry = item["geometry"]
        assert isinstance(geometry, dict)
        name = item["properties"]["classification"]["name"]  # type: ignore[index]
        coords = geometry["coordinates"]
        polygons = [coords] if geometry["type"] == "Polygon" else coords
        features.append(
            Feature(
                class_name=str(name),
                geometry_type=str(geometry["type"]),
                polygons=[[np.asarray(r, dtype=np.float64) for r in p] for p in polygons],
            )
        )
    return features


def render_roi(
    rng: np.random.Generator,
    tissue: list[dict[str, object]],
    nuclei: list[dict[str, object]],
    size: int = ROI_SIZE,
) -> npt.NDArray[np.uint8]:
    """An RGBA image drawn from the annotations: tissue colours, darker nuclei, noise."""
    shape = (size, size)
    labels = paint_features(_as_features(tissue), TISSUE_VALUES, shape)
    rgb = np.zeros((*shape, 3), dtype=np.float64)
    for value, colour in TISSUE_RGB.items():
        rgb[labels == value] = colour
    for feature in _as_features(nuclei):
        rgb[feature_mask(feature, shape)] = NUCLEUS_STYLE[feature.class_name][0]
    rgb += rng.normal(0.0, 10.0, rgb.shape)
    rgba = np.full((*shape, 4), 255, dtype=np.uint8)
    rgba[..., :3] = np.clip(np.rint(rgb), 0, 255).astype(np.uint8)
    return rgba


def _write_json(path: Path, content: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content, indent=1) + "\n", encoding="utf-8")


def make_fixture(raw_dir: Path, *, seed: int = 0) -> None:
    """Write the 10 mini ROIs and their annotations in the extracted release layout."""
    import tifffile

    rng = np.random.default_rng(seed)
    for index, case_id in enumerate(case_ids()):
        tissue = _tissue_features(rng, index)
        nuclei = _nuclei_features(rng, case_id)
        tissue_content: object = (
            tissue
            if case_id == BARE_LIST_CASE
            else {"type": "FeatureCollection", "features": tissue}
        )
        _write_json(raw_dir / TISSUE_FOLDER / f"{case_id}_tissue.geojson", tissue_content)
        _write_json(
            raw_dir / f"{case_id}_nuclei.geojson",
            {"type": "FeatureCollection", "features": nuclei},
        )
        image = render_roi(rng, tissue, nuclei)
        target = raw_dir / ROI_FOLDER / f"{case_id}.tif"
        target.parent.mkdir(parents=True, exist_ok=True)
        tifffile.imwrite(target, image, photometric="rgb", extrasamples=("unassalpha",))
