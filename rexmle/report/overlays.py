"""Overlay images of a graded segmentation or box-detection run: ground truth and prediction
outlines side by side.

Written at grade time by the harness (never by the agent, never into the workspace) into
``<run folder>/overlays/``: for the best, median and worst case by the per-case headline score,
up to ``SLICES_PER_CASE`` slices of a 3-D mask (or the 2-D image), each one PNG with the gold
outline (green) on the left and the prediction outline (red) on the right, each panel at most
``PANEL_PX`` pixels a side. ``overlays.json`` lists them; the folder never exceeds
``MAX_TOTAL_BYTES``.

Detection tasks whose files are boxes get the same layout with the boxes drawn as rectangles on
a canvas that spans every box of the case (no image underneath): COCO-style lists of
``{"bbox": [x, y, w, h]}`` (DENTEX) and ``{"size": [...], "location": [...]}`` boxes (TopCoW,
drawn as their x-y projection). Point detections (PUMA nuclei) have no overlays.
"""

from __future__ import annotations

import io
import json
import math
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from rexmle.analysis.cases import CasePair, case_pairs, read_pair
from rexmle.tasks.rows import CaseRow, is_finite_number

OVERLAY_DIR = "overlays"
MANIFEST = "overlays.json"
PANEL_PX = 256
SLICES_PER_CASE = 3
MAX_TOTAL_BYTES = 3 * 1024 * 1024
_GOLD = (40, 200, 90)
_PRED = (230, 60, 50)


@dataclass(frozen=True)
class Overlay:
    """One overlay image and what it shows."""

    file: str
    case_id: str
    rank: str
    """``best``, ``median`` or ``worst`` (by the per-case score)."""
    score_key: str
    score: float | None
    view: str
    """``2-D`` or ``z = <index>`` (axis 2, the image's third index axis)."""


def _outline(mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
    """Foreground pixels with a 4-neighbour in the background (the mask's inner boundary)."""
    padded = np.pad(mask, 1)
    inner = padded[:-2, 1:-1] & padded[2:, 1:-1] & padded[1:-1, :-2] & padded[1:-1, 2:] & mask
    return mask & ~inner


def _panel(mask: npt.NDArray[np.generic], colour: tuple[int, int, int]) -> npt.NDArray[np.uint8]:
    fg = np.asarray(mask) > 0
    rgb = np.full((*fg.shape, 3), 24, dtype=np.uint8)
    rgb[fg] = (70, 70, 70)
    rgb[_outline(fg)] = colour
    scale = max(1, min(PANEL_PX // max(fg.shape), 16))
    rgb = np.repeat(np.repeat(rgb, scale, axis=0), scale, axis=1)
    if max(rgb.shape[:2]) > PANEL_PX:
        step = math.ceil(max(rgb.shape[:2]) / PANEL_PX)
        rgb = rgb[::step, ::step]
    return rgb


def overlay_png(gold: npt.NDArray[np.generic], pred: npt.NDArray[np.generic]) -> bytes:
    """A PNG: the gold outline (green) left, the prediction outline (red) right, 2-D arrays."""
    from PIL import Image as PILImage

    left, right = _panel(gold, _GOLD), _panel(pred, _PRED)
    height = max(left.shape[0], right.shape[0])
    gap = np.full((height, 6, 3), 255, dtype=np.uint8)
    canvas = np.full((height, left.shape[1] + right.shape[1] + 6, 3), 255, dtype=np.uint8)
    canvas[: left.shape[0], : left.shape[1]] = left
    canvas[:, left.shape[1] : left.shape[1] + 6] = gap
    canvas[: right.shape[0], left.shape[1] + 6 :] = right
    buffer = io.BytesIO()
    PILImage.fromarray(canvas).save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


def _slices(gold: npt.NDArray[np.generic], pred: npt.NDArray[np.generic]) -> list[int]:
    """Up to SLICES_PER_CASE z indices: the gold's largest slice and its occupied range's
    quartiles (the prediction's when the gold is empty; the middle when both are).
    """
    source = gold if np.any(gold) else pred
    area = (np.asarray(source) > 0).sum(axis=(0, 1))
    occupied = np.flatnonzero(area)
    if occupied.size == 0:
        return [gold.shape[2] // 2]
    picks = [int(np.argmax(area))]
    for q in (0.25, 0.75):
        picks.append(int(occupied[round(q * (occupied.size - 1))]))
    return sorted(dict.fromkeys(picks))[:SLICES_PER_CASE]


def _ranked_cases(
    rows: list[CaseRow], pairs: dict[str, CasePair], key: str, higher_is_better: bool
) -> list[tuple[str, str, float | None]]:
    scored = []
    for row in rows:
        if row.case_id in pairs and is_finite_number(row.values.get(key)):
            scored.append((row.number(key), row.case_id))
    if not scored:
        ids = sorted(pairs)
        picks = dict.fromkeys([ids[0], ids[len(ids) // 2], ids[-1]])
        return [("case", i, None) for i in picks]
    scored.sort(reverse=higher_is_better)
    chosen = {"best": scored[0], "median": scored[len(scored) // 2], "worst": scored[-1]}
    seen: set[str] = set()
    ranked: list[tuple[str, str, float | None]] = []
    for rank, (value, case_id) in chosen.items():
        if case_id not in seen:
            seen.add(case_id)
            ranked.append((rank, case_id, value))
    return ranked


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


Box = tuple[float, float, float, float]
"""(x, y, width, height) in pixels or voxels."""


def read_boxes(path: Path) -> list[Box] | None:
    """Boxes of a detection file (see the module docstring) as (x, y, w, h); None when the
    file holds another layout (points, polygons), which has no box overlay.

    Raises:
        OSError, ValueError: the file cannot be read or is not JSON.
    """
    loaded = json.loads(path.read_text(encoding="utf-8"))
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


def _mask_views(pair: CasePair) -> list[tuple[str, bytes]]:
    gold, predicted = read_pair(pair)
    truth, pred = gold.array, predicted.array
    if truth.shape != pred.shape or truth.ndim not in (2, 3):
        return []
    if truth.ndim == 2:
        return [("2-D", overlay_png(truth, pred))]
    return [(f"z = {z}", overlay_png(truth[:, :, z], pred[:, :, z])) for z in _slices(truth, pred)]


def _box_views(pair: CasePair) -> list[tuple[str, bytes]]:
    gold, pred = read_boxes(pair.gold), read_boxes(pair.pred)
    if gold is None or pred is None:
        return []
    return [("boxes (x-y)", boxes_png(gold, pred))]


def _box_panel(
    boxes: list[Box], extent: tuple[int, int], colour: tuple[int, int, int]
) -> npt.NDArray[np.uint8]:
    width, height = extent
    scale = min(PANEL_PX / max(width, height), 16.0)
    cols, rows = max(1, round(width * scale)), max(1, round(height * scale))
    rgb = np.full((rows, cols, 3), 24, dtype=np.uint8)
    for x, y, w, h in boxes:
        c0, r0 = round(x * scale), round(y * scale)
        c1 = min(cols - 1, max(c0, round((x + w) * scale) - 1))
        r1 = min(rows - 1, max(r0, round((y + h) * scale) - 1))
        c0, r0 = min(max(c0, 0), cols - 1), min(max(r0, 0), rows - 1)
        rgb[r0 : r1 + 1, [c0, c1]] = colour
        rgb[[r0, r1], c0 : c1 + 1] = colour
    return rgb


def boxes_png(gold: list[Box], pred: list[Box]) -> bytes:
    """A PNG: gold boxes (green) left, predicted boxes (red) right, on one shared canvas size."""
    from PIL import Image as PILImage

    every = [*gold, *pred] or [(0.0, 0.0, 1.0, 1.0)]
    extent = (
        max(2, math.ceil(max(x + w for x, _, w, _ in every)) + 2),
        max(2, math.ceil(max(y + h for _, y, _, h in every)) + 2),
    )
    left, right = _box_panel(gold, extent, _GOLD), _box_panel(pred, extent, _PRED)
    gap = np.full((left.shape[0], 6, 3), 255, dtype=np.uint8)
    buffer = io.BytesIO()
    PILImage.fromarray(np.concatenate([left, gap, right], axis=1)).save(buffer, format="PNG")
    return buffer.getvalue()


def write_overlays(task_id: str, submission: Path, gold: Path, run_folder: Path) -> list[Overlay]:
    """Write the overlays of a graded run into ``run_folder/overlays`` (replacing old ones).

    Reads ``run_folder/grade.json`` for the per-case scores. Nothing is written for a
    submission that is not valid, nor for tasks other than segmentation and box detection.

    Raises:
        OSError, ValueError, rexmle.io.ImageReadError: a file cannot be read or written.
        RexmleError: grade.json is not a grade report.
    """
    from rexmle.grading.report import read_grade_report
    from rexmle.tasks.registry import get_task

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
        views = _box_views
    else:
        found, views = case_pairs(task_id, submission, gold), _mask_views
    pairs = {p.case_id: p for p in found}
    if not pairs:
        return []
    rows = [CaseRow.from_json(case) for case in grade.cases]
    key = score_key(task_id, rows) or ""
    written: list[Overlay] = []
    total = 0
    for rank, case_id, value in _ranked_cases(rows, pairs, key, spec.headline.higher_is_better):
        for view, png in views(pairs[case_id]):
            if total + len(png) > MAX_TOTAL_BYTES:
                break
            target.mkdir(exist_ok=True)
            name = f"{len(written):02d}-{rank}.png"
            (target / name).write_bytes(png)
            total += len(png)
            written.append(Overlay(name, case_id, rank, key, value, view))
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
    found = []
    for item in items if isinstance(items, list) else []:
        try:
            overlay = Overlay(**item)
        except TypeError:
            continue
        path = run_folder / OVERLAY_DIR / Path(overlay.file).name
        if path.is_file() and not path.is_symlink():
            found.append(overlay)
    return found
