"""PUMA conversions: polygon rasterisation, GeoJSON reading, nuclei conversion (spec puma.md)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from skimage.draw import polygon as skimage_polygon

from rexmle.challenges.puma.classes import NUCLEI_NAMES, TISSUE_VALUES
from rexmle.challenges.puma.geojson import Feature, read_features
from rexmle.challenges.puma.prepare import RawCases, nuclei_document
from rexmle.challenges.puma.raster import feature_mask, paint_features, polygon_mask
from rexmle.errors import DataError


def _ring(*points: tuple[float, float]) -> np.ndarray:
    return np.asarray([*points, points[0]], dtype=np.float64)


def _reference_mask(rings: list[np.ndarray], shape: tuple[int, int]) -> np.ndarray:
    """Independent: skimage tests integer points, so shift by half a pixel; holes subtracted."""
    mask = np.zeros(shape, dtype=bool)
    for k, ring in enumerate(rings):
        rr, cc = skimage_polygon(ring[:, 1] - 0.5, ring[:, 0] - 0.5, shape)
        part = np.zeros(shape, dtype=bool)
        part[rr, cc] = True
        mask = mask | part if k == 0 else mask & ~part
    return mask


def test_square_with_hole_by_hand() -> None:
    outer = _ring((1.0, 1.0), (7.0, 1.0), (7.0, 7.0), (1.0, 7.0))
    hole = _ring((3.0, 3.0), (3.0, 5.0), (5.0, 5.0), (5.0, 3.0))
    mask = polygon_mask([outer, hole], (8, 8))
    # centres 1.5 .. 6.5 lie inside the outer square: rows/cols 1..6 (36 pixels);
    # centres 3.5 and 4.5 lie inside the hole: rows/cols 3..4 (4 pixels) -> 32 pixels
    expected = np.zeros((8, 8), dtype=bool)
    expected[1:7, 1:7] = True
    expected[3:5, 3:5] = False
    np.testing.assert_array_equal(mask, expected)


def test_centres_on_an_edge_follow_the_half_open_rule() -> None:
    # x from 0.5 to 2.5: centre 0.5 lies on the left edge (inside), 2.5 on the right edge (out)
    square = _ring((0.5, 0.5), (2.5, 0.5), (2.5, 2.5), (0.5, 2.5))
    mask = polygon_mask([square], (4, 4))
    expected = np.zeros((4, 4), dtype=bool)
    expected[0:2, 0:2] = True
    np.testing.assert_array_equal(mask, expected)


def test_polygons_sharing_an_edge_through_centres_cover_each_pixel_once() -> None:
    left = _ring((0.0, 0.0), (2.5, 0.0), (2.5, 4.0), (0.0, 4.0))
    right = _ring((2.5, 0.0), (5.0, 0.0), (5.0, 4.0), (2.5, 4.0))
    a, b = polygon_mask([left], (4, 5)), polygon_mask([right], (4, 5))
    assert not (a & b).any()
    assert (a | b).all()
    assert a[:, :2].all()
    assert b[:, 2:].all()


def test_polygon_partly_outside_the_grid_is_clipped() -> None:
    big = _ring((-10.0, -10.0), (3.0, -10.0), (3.0, 3.0), (-10.0, 3.0))
    mask = polygon_mask([big], (5, 5))
    assert mask[:3, :3].all()
    assert mask.sum() == 9
    assert not polygon_mask([_ring((20.0, 20.0), (30.0, 20.0), (30.0, 30.0))], (5, 5)).any()


def test_matches_skimage_on_random_polygons_and_holes() -> None:
    rng = np.random.default_rng(7)
    for _ in range(200):
        shape = (int(rng.integers(4, 30)), int(rng.integers(4, 30)))
        n = int(rng.integers(3, 12))
        outer = rng.uniform(-3, 33, (n, 2))
        got = polygon_mask([outer], shape)
        np.testing.assert_array_equal(got, _reference_mask([outer], shape))
    for _ in range(100):
        centre = rng.uniform(8, 16, 2)
        # evenly spread angles keep both rings star-shaped around the centre: the hole is inside
        angles = np.arange(9) * 2 * np.pi / 9 + rng.uniform(0, 0.5, 9)
        outer = centre + np.c_[np.cos(angles), np.sin(angles)] * rng.uniform(6, 8, (9, 1))
        inner = centre + np.c_[np.cos(angles), np.sin(angles)] * rng.uniform(2, 4, (9, 1))
        got = polygon_mask([outer, inner[::-1]], (24, 24))
        np.testing.assert_array_equal(got, _reference_mask([outer, inner], (24, 24)))


def test_multipolygon_is_the_union_and_file_order_decides_overlaps() -> None:
    a = [_ring((0.0, 0.0), (3.0, 0.0), (3.0, 3.0), (0.0, 3.0))]
    b = [_ring((2.0, 2.0), (5.0, 2.0), (5.0, 5.0), (2.0, 5.0))]
    multi = Feature("tissue_tumor", "MultiPolygon", [a, b])
    # even-odd applies within one polygon only: the overlap pixel (2, 2) stays covered
    union = feature_mask(multi, (5, 5))
    assert union[2, 2]
    assert union.sum() == 9 + 9 - 1
    stroma = Feature("tissue_stroma", "Polygon", [a])
    background = Feature("tissue_white_background", "Polygon", [b])
    labels = paint_features([stroma, multi, background], TISSUE_VALUES, (5, 5))
    assert labels[0, 0] == TISSUE_VALUES["tissue_tumor"]  # tumour painted over stroma
    assert labels[2, 2] == 0
    assert labels[4, 4] == 0
    assert labels.dtype == np.uint8


def _write(path: Path, content: object) -> Path:
    path.write_text(json.dumps(content), encoding="utf-8")
    return path


def _feature(name: str, kind: str, coordinates: list) -> dict:
    return {
        "type": "Feature",
        "geometry": {"type": kind, "coordinates": coordinates},
        "properties": {"classification": {"name": name}},
    }


SQUARE = [[[0, 0], [4, 0], [4, 4], [0, 4], [0, 0]]]


def test_read_features_accepts_a_collection_and_a_bare_list(tmp_path) -> None:
    features = [_feature("tissue_stroma", "Polygon", SQUARE)]
    collection = _write(tmp_path / "a.geojson", {"type": "FeatureCollection", "features": features})
    bare = _write(tmp_path / "b.geojson", features)
    for path in (collection, bare):
        (feature,) = read_features(path, allowed_classes=TISSUE_VALUES)
        assert feature.class_name == "tissue_stroma"
        assert feature.polygons[0][0].shape == (5, 2)


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ({"type": "Feature"}, "FeatureCollection"),
        ([_feature("stroma", "Polygon", SQUARE)], "unknown class name 'stroma'"),
        ([_feature("tissue_stroma", "Point", [1, 2])], "'Point' is not Polygon"),
        ([_feature("tissue_stroma", "Polygon", [[[0, "a"], [1, 1], [2, 0]]])], "position"),
        ([{"geometry": SQUARE}], "feature 0"),
        ([{"geometry": {"type": "Polygon", "coordinates": SQUARE}}], "no class name"),
    ],
)
def test_read_features_rejects_what_the_spec_does_not_allow(tmp_path, content, needle) -> None:
    path = _write(tmp_path / "x_tissue.geojson", content)
    with pytest.raises(DataError, match=r"x_tissue\.geojson") as err:
        read_features(path, allowed_classes=TISSUE_VALUES)
    assert needle in str(err.value)


def test_nuclei_conversion_drops_the_closing_vertex_and_splits_multipolygons(tmp_path) -> None:
    hexagon = [[[10, 10], [12, 10], [13, 12], [12, 14], [10, 14], [9, 12], [10, 10]]]
    triangle = [[[20, 20], [23, 20], [20, 23]]]  # not closed: kept as is
    features = [
        _feature("nuclei_plasma_cell", "Polygon", hexagon),
        _feature("nuclei_stroma", "MultiPolygon", [hexagon, triangle]),
    ]
    path = _write(
        tmp_path / "c_nuclei.geojson", {"type": "FeatureCollection", "features": features}
    )
    cases = RawCases(rois={"c": tmp_path / "c.tif"}, tissue={}, nuclei={"c": path})
    track1 = nuclei_document("c", cases, 1)["polygons"]
    track2 = nuclei_document("c", cases, 2)["polygons"]
    assert [p["name"] for p in track1] == ["TILs", "other", "other"]
    assert [p["name"] for p in track2] == ["plasma_cells", "stromal_cells", "stromal_cells"]
    assert track1[0]["path_points"] == hexagon[0][:-1]
    assert track1[2]["path_points"] == triangle[0]
    assert all(p["score"] == 1.0 for p in track1)


def test_a_nucleus_with_two_vertices_fails_preparation(tmp_path) -> None:
    line = [[[1, 1], [5, 5], [1, 1]]]
    path = _write(tmp_path / "d_nuclei.geojson", [_feature("nuclei_tumor", "Polygon", line)])
    cases = RawCases(rois={"d": tmp_path / "d.tif"}, tissue={}, nuclei={"d": path})
    with pytest.raises(DataError, match="2 vertices"):
        nuclei_document("d", cases, 1)
    assert set(NUCLEI_NAMES) >= {"nuclei_tumor"}
