"""PUMA submission rules (spec puma.md, "Submission format", "Validity rules"), public data only.

Tissue tasks: one single-channel integer TIFF/PNG per test case (the suffixes are declared in the
task's YAML), the ROI's height x width, values in {0, ..., 5}. Nuclei tasks: one UTF-8 JSON
object per test case with exactly one of ``"polygons"`` or ``"nuclei"``, class names of the
task's track. Nothing is repaired: no resizing, no channel picking, no renaming of classes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from rexmle.errors import SpecError
from rexmle.metrics.points import polygon_centroid
from rexmle.tasks.checks import check_allowed_values, check_shape, read_submitted_image
from rexmle.tasks.jobs import CheckContext
from rexmle.tasks.submission import SubmissionCase

from .classes import TISSUE_ALLOWED_VALUES, track_classes

MAX_ITEMS = 50_000
MAX_REASONS_PER_FILE = 5


def roi_size(path: Path) -> tuple[int, int]:
    """(height, width) of an ROI TIFF, read from its header."""
    import tifffile

    with tifffile.TiffFile(path) as tif:
        page = tif.pages[0]
        return int(page.imagelength), int(page.imagewidth)  # type: ignore[union-attr]


def _map_suffixes(context: CheckContext) -> tuple[str, ...]:
    """The file name endings the tissue map column declares (``submission.columns[0].file``).

    Raises:
        SpecError: the task declares no file rule for its map column.
    """
    submission = context.task.submission
    rule = submission.columns[0].file if submission is not None else None
    if rule is None:
        msg = f"{context.task.id}: the map column declares no file rule (submission.columns)"
        raise SpecError(msg)
    return tuple(rule.suffixes)


def check_tissue_case(case: SubmissionCase, context: CheckContext) -> list[str]:
    """Reasons why the case's file is not a valid tissue map of its test ROI (empty: valid).

    The map must be a 2-D single-channel integer image of the ROI's height x width whose every
    value is one of 0-5 (background and the five tissue classes).
    """
    (path,) = case.paths.values()
    suffixes = _map_suffixes(context)
    expected = roi_size(context.public / "test" / "images" / f"{case.case_id}.tif")
    image, problem = read_submitted_image(path, suffixes=suffixes, expected_shape=expected)
    if image is None:
        return [str(problem)]
    array = image.array
    if array.ndim != 2:
        return [
            f"{path.name}: the map has shape {tuple(array.shape)}; write a single-channel 2-D "
            f"label map (RGB/RGBA or multi-page files are not accepted, no channel is picked)"
        ]
    if array.dtype.kind not in "iu":
        return [
            f"{path.name}: data type {array.dtype} is not an integer type; write uint8 labels 0-5"
        ]
    shape_problem = check_shape(array.shape, expected, what=path.name)
    if shape_problem:
        return [shape_problem]
    value_problem = check_allowed_values(array, TISSUE_ALLOWED_VALUES)
    if value_problem:
        return [f"{path.name}: {value_problem}"]
    return []


def check_nuclei_case(case: SubmissionCase, context: CheckContext) -> list[str]:
    """Reasons why the case's file is not a valid nuclei JSON of the task's track (empty: valid).

    The rules are those of :func:`read_nuclei_file` with the class names of ``params.track``.
    """
    (path,) = case.paths.values()
    _, reasons = read_nuclei_file(path, track_classes(context.params))
    return reasons


@dataclass(frozen=True)
class Nuclei:
    """Nuclei of one case: positions (x, y), class names and scores, in file order."""

    xy: npt.NDArray[np.float64]
    classes: list[str]
    scores: npt.NDArray[np.float64]


class _NonFinite(ValueError):
    pass


def _reject_constant(name: str) -> float:
    msg = f"{name} is not a number JSON allows"
    raise _NonFinite(msg)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_finite_number(value: object) -> bool:
    if not _is_number(value):
        return False
    try:
        return math.isfinite(float(value))  # type: ignore[arg-type]
    except OverflowError:  # an integer beyond the float range
        return False


def _point_problem(point: object, sizes: tuple[int, ...]) -> str | None:
    if not isinstance(point, list) or len(point) not in sizes:
        wanted = " or ".join(str(s) for s in sizes)
        return f"a point must be a list of {wanted} numbers, got {point!r:.60}"
    if not all(_is_finite_number(v) for v in point):
        return f"point {point!r:.60} holds a value that is not a finite number"
    return None


def _score_problem(item: dict, key: str) -> str | None:
    if key not in item:
        return None
    value = item[key]
    if not _is_finite_number(value) or not 0.0 <= float(value) <= 1.0:
        return f"'{key}' must be a number in [0, 1], got {value!r:.40}"
    return None


def _parse_polygon(item: object, allowed: Collection[str]) -> tuple[tuple, str | None]:
    if not isinstance(item, dict):
        return (), f"expected an object, got {type(item).__name__}"
    name = item.get("name")
    if not isinstance(name, str) or name not in allowed:
        return (), f"'name' {name!r:.40} is not one of {sorted(allowed)}"
    points = item.get("path_points")
    if not isinstance(points, list) or len(points) < 3:
        n = len(points) if isinstance(points, list) else "no"
        return (), f"'path_points' must be a list of at least 3 points, got {n} point(s)"
    for point in points:
        problem = _point_problem(point, (2, 3))
        if problem:
            return (), f"'path_points': {problem}"
    problem = _score_problem(item, "score")
    if problem:
        return (), problem
    x, y = polygon_centroid(points)
    return (x, y, name, float(item.get("score", 1.0))), None


def _parse_centroid(item: object, allowed: Collection[str]) -> tuple[tuple, str | None]:
    if not isinstance(item, dict):
        return (), f"expected an object, got {type(item).__name__}"
    name = item.get("class")
    if not isinstance(name, str) or name not in allowed:
        return (), f"'class' {name!r:.40} is not one of {sorted(allowed)}"
    if "centroid" not in item:
        return (), "'centroid' is missing"
    problem = _point_problem(item["centroid"], (2,))
    if problem:
        return (), f"'centroid': {problem}"
    problem = _score_problem(item, "confidence")
    if problem:
        return (), problem
    x, y = item["centroid"]
    return (float(x), float(y), name, float(item.get("confidence", 1.0))), None


_NUMBER_TYPES = frozenset((int, float))


def _finite_floats(values: list[object]) -> npt.NDArray[np.float64] | None:
    """``values`` as floats when every one is a finite int/float (no bool), else None."""
    if not set(map(type, values)) <= _NUMBER_TYPES:
        return None
    try:
        array = np.asarray(values, dtype=np.float64)
    except OverflowError:
        return None
    return array if bool(np.isfinite(array).all()) else None


def _scores(items: list[dict], key: str) -> npt.NDArray[np.float64] | None:
    raw = [item.get(key, 1.0) for item in items]
    scores = _finite_floats(raw)
    if scores is None or not ((scores >= 0.0) & (scores <= 1.0)).all():
        return None
    return scores.reshape(-1)


def _fast_polygons(items: list[object], allowed: frozenset[str]) -> Nuclei | None:
    """Parse a valid ``polygons`` list in bulk; None when anything is off (then the item-wise
    parser finds and words the problems). Positions equal :func:`polygon_centroid` exactly:
    the same ``numpy.mean`` over the points of each polygon, grouped by point count.
    """
    names: list[str] = []
    xs: list[object] = []
    ys: list[object] = []
    thirds: list[object] = []
    counts: list[int] = []
    for item in items:
        if type(item) is not dict:
            return None
        name = item.get("name")
        points = item.get("path_points")
        if type(name) is not str or name not in allowed:
            return None
        if type(points) is not list or len(points) < 3:
            return None
        for point in points:
            if type(point) is not list:
                return None
            size = len(point)
            if size == 3:
                thirds.append(point[2])
            elif size != 2:
                return None
            xs.append(point[0])
            ys.append(point[1])
        names.append(name)
        counts.append(len(points))
    x, y, third = _finite_floats(xs), _finite_floats(ys), _finite_floats(thirds)
    scores = _scores(items, "score")  # type: ignore[arg-type]
    if x is None or y is None or third is None or scores is None:
        return None
    n_points = np.asarray(counts, dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(n_points)[:-1])).astype(np.int64)
    xy = np.zeros((len(names), 2), dtype=np.float64)
    points_xy = np.stack([x, y], axis=1) if x.size else np.zeros((0, 2))
    for size in np.unique(n_points):
        chosen = np.flatnonzero(n_points == size)
        index = starts[chosen][:, None] + np.arange(size)[None, :]
        xy[chosen] = np.mean(points_xy[index], axis=1)
    return Nuclei(xy=xy, classes=names, scores=scores)


def _fast_centroids(items: list[object], allowed: frozenset[str]) -> Nuclei | None:
    """Parse a valid ``nuclei`` list in bulk; None when anything is off (see above)."""
    names: list[str] = []
    xs: list[object] = []
    ys: list[object] = []
    for item in items:
        if type(item) is not dict:
            return None
        name = item.get("class")
        centroid = item.get("centroid")
        if type(name) is not str or name not in allowed:
            return None
        if type(centroid) is not list or len(centroid) != 2:
            return None
        names.append(name)
        xs.append(centroid[0])
        ys.append(centroid[1])
    x, y = _finite_floats(xs), _finite_floats(ys)
    scores = _scores(items, "confidence")  # type: ignore[arg-type]
    if x is None or y is None or scores is None:
        return None
    xy = np.stack([x, y], axis=1) if x.size else np.zeros((0, 2))
    return Nuclei(xy=xy, classes=names, scores=scores)


def read_nuclei_file(path: Path, classes: Collection[str]) -> tuple[Nuclei | None, list[str]]:
    """Parse and check one nuclei JSON file; (nuclei, []) when valid, else (None, reasons).

    A polygon's position is the mean of its listed points (x, y; a third coordinate is ignored);
    a missing score or confidence is 1.0.
    """
    name = path.name
    try:
        text = path.read_bytes().decode("utf-8-sig")
        content = json.loads(text, parse_constant=_reject_constant)
    except UnicodeDecodeError as err:
        return None, [f"{name}: not UTF-8 text ({err.reason} at byte {err.start})"]
    except _NonFinite as err:
        return None, [f"{name}: {err} (NaN and Infinity are not valid)"]
    except (ValueError, RecursionError) as err:  # JSONDecodeError, over-long integers
        return None, [f"{name}: malformed JSON ({err})"]
    except OSError as err:
        return None, [f"{name}: cannot be read ({err})"]
    if not isinstance(content, dict):
        return None, [f"{name}: the top level must be a JSON object, got {type(content).__name__}"]
    present = [key for key in ("polygons", "nuclei") if key in content]
    if len(present) != 1:
        found = "both" if present else "neither"
        return None, [f"{name}: must hold exactly one of 'polygons' or 'nuclei', found {found}"]
    key = present[0]
    items = content[key]
    if not isinstance(items, list):
        return None, [f"{name}: '{key}' must be a list, got {type(items).__name__}"]
    if len(items) > MAX_ITEMS:
        return None, [f"{name}: {len(items)} items in '{key}', at most {MAX_ITEMS} are accepted"]
    allowed = frozenset(classes)
    fast = _fast_polygons(items, allowed) if key == "polygons" else _fast_centroids(items, allowed)
    if fast is not None:
        return fast, []
    parse = _parse_polygon if key == "polygons" else _parse_centroid
    parsed: list[tuple] = []
    reasons: list[str] = []
    n_bad = 0
    for index, item in enumerate(items):
        values, problem = parse(item, allowed)
        if problem is None:
            parsed.append(values)
            continue
        n_bad += 1
        if len(reasons) < MAX_REASONS_PER_FILE:
            reasons.append(f"{name}: {key}[{index}]: {problem}")
    if n_bad:
        if n_bad > len(reasons):
            reasons.append(f"{name}: {n_bad - len(reasons)} more invalid item(s) in '{key}'")
        return None, reasons
    xy = np.asarray([v[:2] for v in parsed], dtype=np.float64).reshape(-1, 2)
    return Nuclei(
        xy=xy,
        classes=[v[2] for v in parsed],
        scores=np.asarray([v[3] for v in parsed], dtype=np.float64),
    ), []
