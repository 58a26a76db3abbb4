"""Reading the PUMA GeoJSON annotation files (spec puma.md, "Source").

A file holds a FeatureCollection (or a bare list of features). Each feature has a ``Polygon`` or
``MultiPolygon`` geometry in pixel coordinates of its ROI (x = column, y = row, origin top-left)
and a class in ``properties.classification.name``. Anything else is a :class:`DataError`: an
unknown class name would otherwise empty a whole ground-truth class without notice.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from rexmle.errors import DataError

Ring = npt.NDArray[np.float64]
"""Array of shape (n, 2): the (x, y) vertices of one linear ring, as stored (closing vertex kept)."""


@dataclass(frozen=True)
class Feature:
    """One annotated region: its raw class name and its polygons.

    ``polygons`` holds one entry for a Polygon and one per part for a MultiPolygon; each entry is
    the list of its rings, exterior first, then the holes.
    """

    class_name: str
    geometry_type: str
    polygons: list[list[Ring]]


def _ring(raw: object, where: str) -> Ring:
    if not isinstance(raw, list) or not raw:
        msg = f"{where}: a ring must be a non-empty list of positions, got {type(raw).__name__}"
        raise DataError(msg)
    points: list[tuple[float, float]] = []
    for position in raw:
        if (
            not isinstance(position, list)
            or len(position) < 2
            or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in position)
        ):
            msg = f"{where}: a position must be a list of at least 2 numbers, got {position!r}"
            raise DataError(msg)
        x, y = float(position[0]), float(position[1])
        if not (math.isfinite(x) and math.isfinite(y)):
            msg = f"{where}: position {position!r} is not finite"
            raise DataError(msg)
        points.append((x, y))
    return np.asarray(points, dtype=np.float64)


def _polygon(raw: object, where: str) -> list[Ring]:
    if not isinstance(raw, list) or not raw:
        msg = f"{where}: polygon coordinates must be a non-empty list of rings"
        raise DataError(msg)
    return [_ring(ring, f"{where} ring {k}") for k, ring in enumerate(raw)]


def _class_name(feature: dict[str, object], where: str) -> str:
    properties = feature.get("properties")
    classification = properties.get("classification") if isinstance(properties, dict) else None
    name = classification.get("name") if isinstance(classification, dict) else None
    if not isinstance(name, str):
        msg = f"{where}: no class name in properties.classification.name"
        raise DataError(msg)
    return name


def read_features(path: Path, *, allowed_classes: Collection[str]) -> list[Feature]:
    """Read every feature of a PUMA GeoJSON file, in file order.

    Args:
        path: the ``*_tissue.geojson`` or ``*_nuclei.geojson`` file.
        allowed_classes: the raw class names this kind of file may use.

    Returns:
        The features in file order.

    Raises:
        DataError: the file is not JSON, not a FeatureCollection or list of features, a feature
            has another geometry type, malformed coordinates, or a class name not allowed.
    """
    try:
        content = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        msg = f"{path.name}: cannot be read as JSON ({err})"
        raise DataError(msg) from err
    if isinstance(content, dict) and isinstance(content.get("features"), list):
        raw_features = content["features"]
    elif isinstance(content, list):
        raw_features = content
    else:
        msg = f"{path.name}: expected a FeatureCollection with 'features' or a list of features"
        raise DataError(msg)
    features: list[Feature] = []
    for index, raw in enumerate(raw_features):
        where = f"{path.name} feature {index}"
        if not isinstance(raw, dict) or not isinstance(raw.get("geometry"), dict):
            msg = f"{where}: not a feature with a 'geometry' object"
            raise DataError(msg)
        name = _class_name(raw, where)
        if name not in allowed_classes:
            msg = f"{where}: unknown class name {name!r}; expected one of {sorted(allowed_classes)}"
            raise DataError(msg)
        geometry = raw["geometry"]
        kind = geometry.get("type")
        coordinates = geometry.get("coordinates")
        if kind == "Polygon":
            polygons = [_polygon(coordinates, where)]
        elif kind == "MultiPolygon":
            if not isinstance(coordinates, list) or not coordinates:
                msg = f"{where}: MultiPolygon coordinates must be a non-empty list of polygons"
                raise DataError(msg)
            polygons = [_polygon(p, f"{where} part {k}") for k, p in enumerate(coordinates)]
        else:
            msg = f"{where}: geometry type {kind!r} is not Polygon or MultiPolygon"
            raise DataError(msg)
        features.append(Feature(class_name=name, geometry_type=str(kind), polygons=polygons))
    return features
