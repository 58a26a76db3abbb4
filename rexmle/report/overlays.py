"""Overlay images of a graded run: the case's input image with the gold and the predicted
outlines (segmentation), boxes (DENTEX, TopCoW) or nucleus points (PUMA) drawn on it.

Written at grade time by the harness (never by the agent, never into the workspace) into
``<run folder>/overlays/``, from the private gold and the public input image. Cases: the best,
median and worst by the per-case headline score (by id order when cases carry no score).
Views of a 3-D case, up to ``SLICES_PER_CASE`` axial slices (see :func:`choose_slices`): the
slice of largest disagreement between gold and prediction first, then the gold's and the
prediction's largest slices and the quartiles of the gold's extent; a 2-D case or a box
projection is one view. How the image is shown (file, channel, window or percentiles) is
:mod:`rexmle.report.viewing`.

Each view is one PNG of three panels: the gold (green) and predicted (red) outlines
superimposed on the image (yellow where they coincide), then the gold alone and the prediction
alone on the same image. Pixels are palette-coded (252 image levels plus the three outline
colours, which are therefore exact). ``overlays.json`` lists the views; the folder never
exceeds ``MAX_TOTAL_BYTES`` (each case's first view is written before any case's second).

Files are read as the grader reads them: a mask through
:func:`rexmle.tasks.checks.read_submitted_image`, its header checked against the pixel budget
of the input image before anything is decoded; box and point files only up to
``MAX_JSON_BYTES``.
"""

from __future__ import annotations

import io
import json
import shutil
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np
import numpy.typing as npt

from rexmle.analysis.cases import MASK_SUFFIXES, CasePair, case_pairs
from rexmle.report.viewing import (
    BOTH,
    GOLD,
    IMAGE_VIEWS,
    PRED,
    Box,
    ImageView,
    box_edges,
    display_grey,
    display_shape,
    label_outline,
    point_rings,
    resample,
    thicken,
)
from rexmle.tasks.rows import CaseRow, is_finite_number

OVERLAY_DIR = "overlays"
MANIFEST = "overlays.json"
SLICES_PER_CASE = 5
MAX_TOTAL_BYTES = 4 * 1024 * 1024
MAX_JSON_BYTES = 32 * 1024 * 1024
MAX_INPUT_VALUES = 1 << 29
"""The most values an input image may declare to be drawn (a larger one is not drawn)."""
GAP_PX = 6
_WHITE = (255, 255, 255)
_IMAGE_LEVELS = 252


@dataclass(frozen=True)
class Overlay:
    """One overlay image and what it shows."""

    file: str
    case_id: str
    rank: str
    """``best``, ``median`` or ``worst`` by the per-case score; ``first``, ``middle`` or
    ``last`` by case id when the cases carry no score."""
    score_key: str
    score: float | None
    view: str
    """``2-D``, ``z = <index> of <n>`` (axis 2, the image's third index axis) or a projection."""
    note: str = ""
    """Why this view was chosen (e.g. ``largest disagreement``)."""
    image: str = ""
    """The image under the outlines and its grey-level mapping, in words."""


@dataclass(frozen=True)
class View:
    """One drawn view of a case before it is written."""

    label: str
    note: str
    png: bytes


def choose_slices(
    gold: npt.NDArray[np.generic], pred: npt.NDArray[np.generic], limit: int = SLICES_PER_CASE
) -> list[tuple[int, str]]:
    """Up to ``limit`` (z index, reason) of a 3-D case, most telling first.

    Order: the slice with the most voxels where gold and prediction differ (``largest
    disagreement``; skipped when they agree everywhere), the gold's largest slice, the
    prediction's largest slice, then the 25th and 75th percentile slices of the gold's occupied
    z range (the prediction's when the gold is empty); the middle slice when both are empty.
    """
    differ = (np.asarray(gold) != np.asarray(pred)).sum(axis=(0, 1))
    gold_area = (np.asarray(gold) > 0).sum(axis=(0, 1))  # type: ignore[operator]
    pred_area = (np.asarray(pred) > 0).sum(axis=(0, 1))  # type: ignore[operator]
    picks: dict[int, str] = {}
    if differ.any():
        picks[int(np.argmax(differ))] = "largest disagreement"
    if gold_area.any():
        picks.setdefault(int(np.argmax(gold_area)), "largest gold area")
    if pred_area.any():
        picks.setdefault(int(np.argmax(pred_area)), "largest predicted area")
    occupied = np.flatnonzero(gold_area if gold_area.any() else pred_area)
    for q in (0.25, 0.75):
        if occupied.size:
            picks.setdefault(int(occupied[round(q * (occupied.size - 1))]), f"{q:.0%} of extent")
    if not picks:
        picks[gold.shape[2] // 2] = "middle slice, both empty"
    return list(picks.items())[:limit]


def _encode(
    bases: list[npt.NDArray[np.uint8]],
    golds: list[npt.NDArray[np.bool_] | None],
    preds: list[npt.NDArray[np.bool_] | None],
) -> bytes:
    """A palette PNG of the panels side by side (``GAP_PX`` white between them)."""
    from PIL import Image as PILImage

    height = max(b.shape[0] for b in bases)
    colour = any(b.ndim == 3 for b in bases)
    width = sum(b.shape[1] for b in bases) + GAP_PX * (len(bases) - 1)
    canvas = np.full((height, width, 3) if colour else (height, width), 255, dtype=np.uint8)
    gap = np.ones((height, width), dtype=bool)
    gold = np.zeros((height, width), dtype=bool)
    pred = np.zeros((height, width), dtype=bool)
    col = 0
    for base, g, p in zip(bases, golds, preds, strict=True):
        rows, cols = base.shape[:2]
        panel = np.repeat(base[:, :, None], 3, axis=2) if colour and base.ndim == 2 else base
        canvas[:rows, col : col + cols] = panel
        gap[:rows, col : col + cols] = False
        if g is not None:
            gold[:rows, col : col + cols] = g
        if p is not None:
            pred[:rows, col : col + cols] = p
        col += cols + GAP_PX
    if colour:
        quantised = PILImage.fromarray(canvas).quantize(
            colors=_IMAGE_LEVELS, method=PILImage.Quantize.MEDIANCUT, dither=PILImage.Dither.NONE
        )
        index = np.asarray(quantised).copy()
        palette = list(quantised.getpalette() or [])[: 3 * _IMAGE_LEVELS]
        palette += [0] * (3 * _IMAGE_LEVELS - len(palette))
    else:
        index = (canvas.astype(np.uint16) * (_IMAGE_LEVELS - 1) // 255).astype(np.uint8)
        palette = [
            round(i * 255 / (_IMAGE_LEVELS - 1)) for i in range(_IMAGE_LEVELS) for _ in "rgb"
        ]
    palette += [*GOLD, *PRED, *BOTH, *_WHITE]
    index[gold & ~pred] = _IMAGE_LEVELS
    index[pred & ~gold] = _IMAGE_LEVELS + 1
    index[gold & pred] = _IMAGE_LEVELS + 2
    index[gap] = _IMAGE_LEVELS + 3
    image = PILImage.new("P", (index.shape[1], index.shape[0]))
    image.frombytes(np.ascontiguousarray(index).tobytes())
    image.putpalette(palette)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


def triptych(
    base: npt.NDArray[np.uint8],
    gold: npt.NDArray[np.bool_],
    pred: npt.NDArray[np.bool_],
) -> bytes:
    """The three-panel PNG of one view: display-size ``base`` (grey or colour) and the gold and
    predicted edge pixels on it (see the module docstring).
    """
    return _encode([base, base, base], [gold, gold, None], [pred, None, pred])


def mask_triptych(
    image: npt.NDArray[np.generic] | None,
    gold: npt.NDArray[np.generic],
    pred: npt.NDArray[np.generic],
    view: ImageView | None,
) -> bytes:
    """The view of one 2-D slice: the image slice (None: a flat grey background) with the gold
    and predicted label outlines.
    """
    shape = display_shape((int(gold.shape[0]), int(gold.shape[1])))
    if image is None or view is None:
        base = np.full(shape, 96, dtype=np.uint8)
    else:
        base = resample(display_grey(image, view), shape).astype(np.uint8)
    source = (int(gold.shape[0]), int(gold.shape[1]))
    gold_edges = thicken(label_outline(resample(gold, shape)), source)
    pred_edges = thicken(label_outline(resample(pred, shape)), source)
    return triptych(base, gold_edges, pred_edges)


def score_key(task_id: str, rows: list[CaseRow]) -> str | None:
    """The per-case column that ranks cases: the headline key when present, else the first
    leaderboard metric present; None when cases carry no metric (cases are then taken in id
    order).
    """
    from rexmle.tasks.registry import get_task

    spec = get_task(task_id)
    if not rows:
        return None
    for key in (spec.headline.key, *(m.key for m in spec.metrics)):
        value = rows[0].values.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return key
    return None


def _ranked_cases(
    rows: list[CaseRow], pairs: dict[str, CasePair], key: str, higher_is_better: bool
) -> list[tuple[str, str, float | None]]:
    scored = []
    for row in rows:
        if row.case_id in pairs and is_finite_number(row.values.get(key)):
            scored.append((row.number(key), row.case_id))
    if not scored:
        ids = sorted(pairs)
        chosen_ids = {"first": ids[0], "middle": ids[len(ids) // 2], "last": ids[-1]}
        seen_ids: dict[str, str] = {}
        for rank, case_id in chosen_ids.items():
            seen_ids.setdefault(case_id, rank)
        return [(rank, case_id, None) for case_id, rank in seen_ids.items()]
    scored.sort(reverse=higher_is_better)
    # a case that is both the median and the worst (two cases) is called the worst
    picks = [("best", scored[0]), ("worst", scored[-1]), ("median", scored[len(scored) // 2])]
    seen: dict[str, tuple[str, float]] = {}
    for rank, (value, case_id) in picks:
        seen.setdefault(case_id, (rank, value))
    order = {"best": 0, "median": 1, "worst": 2}
    ranked = [(rank, case_id, value) for case_id, (rank, value) in seen.items()]
    return sorted(ranked, key=lambda item: order[item[0]])


def _read_json(path: Path) -> object:
    if path.stat().st_size > MAX_JSON_BYTES:
        msg = f"{path.name} is larger than {MAX_JSON_BYTES} bytes; not drawn"
        raise ValueError(msg)
    return json.loads(path.read_text(encoding="utf-8"))


def read_boxes(path: Path) -> list[Box] | None:
    """Boxes of a detection file as (x, y, w, h): COCO-style lists of ``{"bbox": [x, y, w,
    h]}`` (DENTEX) or ``{"size": [...], "location": [...]}`` (TopCoW, its x-y projection);
    None when the file holds another layout (points, polygons).

    Raises:
        OSError, ValueError: the file cannot be read, is too large or is not JSON.
    """
    loaded = _read_json(path)
    items = loaded if isinstance(loaded, list) else [loaded]
    boxes: list[Box] = []
    for item in items:
        if not isinstance(item, dict):
            return None
        if isinstance(item.get("bbox"), list) and len(item["bbox"]) == 4:
            x, y, w, h = (float(v) for v in item["bbox"])
        elif isinstance(item.get("size"), list) and isinstance(item.get("location"), list):
            x, y = float(item["location"][0]), float(item["location"][1])
            w, h = float(item["size"][0]), float(item["size"][1])
        else:
            return None
        boxes.append((x, y, w, h))
    return boxes


def read_points(path: Path) -> list[tuple[float, float]] | None:
    """Nucleus positions of a PUMA detection file (``{"polygons": [{"path_points": [[x, y],
    ...]}, ...]}``): each polygon's vertex mean; None for another layout.

    Raises:
        OSError, ValueError: the file cannot be read, is too large or is not JSON.
    """
    loaded = _read_json(path)
    polygons = loaded.get("polygons") if isinstance(loaded, dict) else None
    if not isinstance(polygons, list):
        return None
    points = []
    for item in polygons:
        vertices = item.get("path_points") if isinstance(item, dict) else None
        if not isinstance(vertices, list) or not vertices:
            return None
        array = np.asarray(vertices, dtype=np.float64)
        if array.ndim != 2 or array.shape[1] != 2:
            return None
        x, y = array.mean(axis=0)
        points.append((float(x), float(y)))
    return points


def input_image_path(task_id: str, public: Path, case_id: str) -> Path | None:
    """The case's input image under ``public`` (:data:`rexmle.report.viewing.IMAGE_VIEWS`), or
    None when the task has no view or the file is not there.
    """
    view = IMAGE_VIEWS.get(task_id)
    if view is None:
        return None
    relative = view.template.replace("{case_id}", case_id)
    if "*" not in relative:
        path = public / relative
        return path if path.is_file() and not path.is_symlink() else None
    found = sorted(p for p in public.glob(relative) if p.is_file() and not p.is_symlink())
    return found[0] if found else None


def _input_array(task_id: str, public: Path, case_id: str) -> npt.NDArray[np.generic] | None:
    from rexmle.io import read_image

    path = input_image_path(task_id, public, case_id)
    if path is None:
        return None
    return read_image(path, max_pixels=MAX_INPUT_VALUES).array


def _read_mask(path: Path, expected_shape: tuple[int, ...]) -> npt.NDArray[np.generic]:
    from rexmle.tasks.checks import read_submitted_image

    image, problem = read_submitted_image(
        path, suffixes=MASK_SUFFIXES, expected_shape=expected_shape
    )
    if image is None:
        raise ValueError(str(problem))
    return image.array


def _mask_views(task_id: str, pair: CasePair, public: Path) -> list[View]:
    from rexmle.io import read_geometry

    view = IMAGE_VIEWS.get(task_id)
    image = _input_array(task_id, public, pair.case_id)
    gold_shape = read_geometry(pair.gold).shape
    truth = _read_mask(pair.gold, gold_shape)
    pred = _read_mask(pair.pred, truth.shape)
    if truth.shape != pred.shape or truth.ndim not in (2, 3):
        return []
    if image is not None and image.shape[: truth.ndim] != truth.shape:
        image = None  # not on the mask's grid: outlines on a plain background
    if truth.ndim == 2:
        return [View("2-D", "whole image", mask_triptych(image, truth, pred, view))]
    views = []
    for z, why in choose_slices(truth, pred):
        slice_image = None if image is None else np.swapaxes(image[:, :, z], 0, 1)
        png = mask_triptych(slice_image, truth[:, :, z].T, pred[:, :, z].T, view)
        views.append(View(f"z = {z} of {truth.shape[2]}", why, png))
    return views


def _marked_views(task_id: str, pair: CasePair, public: Path) -> list[View]:
    """The one view of a box or point detection: the boxes' x-y projection or the points on
    the input image (its maximum-intensity projection along z for a 3-D image).
    """
    view = IMAGE_VIEWS.get(task_id)
    image = _input_array(task_id, public, pair.case_id)
    gold_boxes, pred_boxes = read_boxes(pair.gold), read_boxes(pair.pred)
    boxes = gold_boxes is not None and pred_boxes is not None
    gold_points = None if boxes else read_points(pair.gold)
    pred_points = None if boxes else read_points(pair.pred)
    if image is not None and image.ndim == 3 and not (view is not None and view.colour):
        image = np.swapaxes(image.max(axis=2), 0, 1)  # MIP along z, rows = y
    if image is not None and view is not None:
        source = (int(image.shape[0]), int(image.shape[1]))
        shape = display_shape(source)
        base = resample(display_grey(image, view), shape).astype(np.uint8)
    else:
        marks = [(x, y, 1.0, 1.0) for x, y in (gold_points or []) + (pred_points or [])]
        every = [*(gold_boxes or []), *(pred_boxes or []), *marks] or [(0.0, 0.0, 1.0, 1.0)]
        source = (
            max(2, int(max(y + h for _, y, _, h in every)) + 2),
            max(2, int(max(x + w for x, _, w, _ in every)) + 2),
        )
        shape = display_shape(source)
        base = np.full(shape, 96, dtype=np.uint8)
    if gold_boxes is not None and pred_boxes is not None:
        gold = thicken(box_edges(gold_boxes, source, shape), source)
        pred = thicken(box_edges(pred_boxes, source, shape), source)
        mip = image is not None and view is not None and view.projection == "mip"
        note = "on the maximum-intensity projection along z" if mip else ""
        return [View("boxes (x-y)", note, triptych(base, gold, pred))]
    if gold_points is None or pred_points is None:
        return []
    gold, pred = point_rings(gold_points, source, shape), point_rings(pred_points, source, shape)
    note = f"{len(gold_points)} gold and {len(pred_points)} predicted nuclei"
    return [View("points", note, triptych(base, gold, pred))]


def write_overlays(
    task_id: str, submission: Path, gold: Path, run_folder: Path, *, public: Path | None = None
) -> list[Overlay]:
    """Write the overlays of a graded run into ``run_folder/overlays`` (replacing old ones).

    Reads ``run_folder/grade.json`` for the per-case scores. ``public`` is the task's public
    folder (the input images); by default the ``public`` beside ``gold``'s ``private``
    (:class:`rexmle.tasks.folders.TaskDirs`). Nothing is written for a submission that is not
    valid, nor for tasks other than segmentation and detection by boxes or points.

    Raises:
        OSError, ValueError, rexmle.io.ImageReadError: a file cannot be read or written.
        RexmleError: grade.json is not a grade report.
    """
    from rexmle.grading.report import read_grade_report
    from rexmle.tasks.registry import get_task

    public = public if public is not None else gold.parent.parent / "public"
    target = run_folder / OVERLAY_DIR
    shutil.rmtree(target, ignore_errors=True)
    grade_path = run_folder / "grade.json"
    if not grade_path.is_file():
        return []
    grade = read_grade_report(grade_path)
    if not grade.valid:
        return []
    spec = get_task(task_id)
    if spec.task_type == "detection":
        found = case_pairs(
            task_id, submission, gold, task_types=("detection",), suffixes=(".json",)
        )
        draw = _marked_views
    else:
        found, draw = case_pairs(task_id, submission, gold), _mask_views
    pairs = {p.case_id: p for p in found}
    if not pairs:
        return []
    rows = [CaseRow.from_json(case) for case in grade.cases]
    key = score_key(task_id, rows) or ""
    view = IMAGE_VIEWS.get(task_id)
    image_words = f"{view.what}, {view.scaling}" if view is not None else "no input image"
    ranked = _ranked_cases(rows, pairs, key, spec.headline.higher_is_better)
    drawn = [
        (rank, case_id, value, draw(task_id, pairs[case_id], public))
        for rank, case_id, value in ranked
    ]
    # each case's first view before any case's second, so the cap cuts the least telling ones
    order = sorted((n, i) for i, case in enumerate(drawn) for n in range(len(case[3])))
    written: list[Overlay] = []
    total = 0
    for view_index, case_index in order:
        rank, case_id, value, views = drawn[case_index]
        shown = views[view_index]
        if total + len(shown.png) > MAX_TOTAL_BYTES:
            continue
        target.mkdir(exist_ok=True)
        name = f"{case_index}-{rank}-{view_index:02d}.png"
        (target / name).write_bytes(shown.png)
        total += len(shown.png)
        written.append(
            Overlay(name, case_id, rank, key, value, shown.label, shown.note, image_words)
        )
    written.sort(key=lambda o: o.file)
    if written:
        (target / MANIFEST).write_text(
            json.dumps([asdict(o) for o in written], indent=2) + "\n", encoding="utf-8"
        )
    return written


def read_overlays(run_folder: Path) -> list[Overlay]:
    """The overlays listed in a run folder's manifest (files that are missing are left out)."""
    manifest = run_folder / OVERLAY_DIR / MANIFEST
    if not manifest.is_file():
        return []
    try:
        items = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return []
    known = {f.name for f in fields(Overlay)}
    found = []
    for item in items if isinstance(items, list) else []:
        try:
            overlay = Overlay(**{k: v for k, v in item.items() if k in known})
        except (TypeError, AttributeError):
            continue
        path = run_folder / OVERLAY_DIR / Path(overlay.file).name
        if path.is_file() and not path.is_symlink():
            found.append(overlay)
    return found
