"""Overlay images of a graded segmentation run: ground truth and prediction outlines side by side.

Written at grade time by the harness (never by the agent, never into the workspace) into
``<run folder>/overlays/``: for the best, median and worst case by the per-case headline score,
up to ``SLICES_PER_CASE`` slices of a 3-D mask (or the 2-D image), each one PNG with the gold
outline (green) on the left and the prediction outline (red) on the right, each panel at most
``PANEL_PX`` pixels a side. ``overlays.json`` lists them; the folder never exceeds
``MAX_TOTAL_BYTES``.
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

from rexmle.analysis.cases import CasePair, case_pairs

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
    quartiles (the prediction's when the gold is empty; the middle when both are)."""
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
    cases: list[dict[str, object]], pairs: dict[str, CasePair], key: str, higher_is_better: bool
) -> list[tuple[str, str, float | None]]:
    scored = []
    for case in cases:
        value = case.get(key)
        case_id = str(case.get("case_id", ""))
        if case_id in pairs and isinstance(value, int | float) and math.isfinite(value):
            scored.append((float(value), case_id))
    if not scored:
        ids = sorted(pairs)
        return [("case", i, None) for i in ids[:1]]
    scored.sort(reverse=higher_is_better)
    chosen = {"best": scored[0], "median": scored[len(scored) // 2], "worst": scored[-1]}
    seen: set[str] = set()
    ranked = []
    for rank, (value, case_id) in chosen.items():
        if case_id not in seen:
            seen.add(case_id)
            ranked.append((rank, case_id, value))
    return ranked


def score_key(task_id: str, cases: list[dict[str, object]]) -> str | None:
    """The per-case column that ranks cases: the headline key when present, else the first
    numeric column."""
    from rexmle.challenges.registry import get_task

    headline = get_task(task_id).headline.key
    if not cases:
        return None
    if headline in cases[0]:
        return headline
    for key, value in cases[0].items():
        if key != "case_id" and isinstance(value, int | float):
            return key
    return None


def write_overlays(task_id: str, submission: Path, gold: Path, run_folder: Path) -> list[Overlay]:
    """Write the overlays of a graded run into ``run_folder/overlays`` (replacing old ones).

    Reads ``run_folder/grade.json`` for the per-case scores. Nothing is written for a task that
    is not a segmentation task or a submission that is not valid.

    Raises:
        OSError, ValueError, rexmle.io.ImageReadError: a file cannot be read or written.
    """
    from rexmle.challenges.registry import get_task
    from rexmle.io import read_image

    target = run_folder / OVERLAY_DIR
    shutil.rmtree(target, ignore_errors=True)
    grade_path = run_folder / "grade.json"
    grade = json.loads(grade_path.read_text(encoding="utf-8")) if grade_path.is_file() else {}
    if not grade.get("valid"):
        return []
    pairs = {p.case_id: p for p in case_pairs(task_id, submission, gold)}
    if not pairs:
        return []
    cases = [c for c in grade.get("cases", []) if isinstance(c, dict)]
    key = score_key(task_id, cases) or ""
    higher = get_task(task_id).headline.higher_is_better
    target.mkdir(parents=True)
    written: list[Overlay] = []
    total = 0
    for rank, case_id, value in _ranked_cases(cases, pairs, key, higher):
        pair = pairs[case_id]
        truth, pred = read_image(pair.gold).array, read_image(pair.pred).array
        if truth.shape != pred.shape or truth.ndim not in (2, 3):
            continue
        views = [("2-D", truth, pred)] if truth.ndim == 2 else [
            (f"z = {z}", truth[:, :, z], pred[:, :, z]) for z in _slices(truth, pred)
        ]  # fmt: skip
        for view, gold_2d, pred_2d in views:
            png = overlay_png(gold_2d, pred_2d)
            if total + len(png) > MAX_TOTAL_BYTES:
                break
            name = f"{len(written):02d}-{rank}.png"
            (target / name).write_bytes(png)
            total += len(png)
            written.append(Overlay(name, case_id, rank, key, value, view))
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
