"""Grading speed and peak memory of the TopCoW graders at realistic sizes (not a test).

Task 1: a 512 x 512 x 256 uint8 label map with the 13 CoW labels (the mini fixture's vessel tree
upsampled 4x: tubes 12 voxels thick) and a prediction shifted by one voxel with Acom removed and a
spurious blob, both written as .nii.gz. One case = validation of the file (read, size, values)
plus scoring (read, ROI crop, every per-case metric). Timed with the ROI of the real data's size
(104 x 96 x 40 voxels) and with an ROI covering the whole volume (worst case). Peak memory is the
largest traced allocation (numpy buffers included) during the case, in a fresh process.
Task 2 / task 3: validation + scoring of one JSON file, averaged over 200 cases.

Run: ``.venv/bin/python bench/grade_topcow.py [--workdir DIR]``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import platform
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

from rexmle.challenges.topcow import fixture, metrics, submission
from rexmle.challenges.topcow.roi import Box, format_roi_text
from rexmle.io import read_geometry, write_image
from rexmle.tasks.checks import SubmissionWarning, check_declared_file
from rexmle.tasks.jobs import CheckContext, ScoreCase
from rexmle.tasks.registry import get_task
from rexmle.tasks.submission import SubmissionCase

SEG, BOX, EDGES = "topcow-track1-task1", "topcow-track1-task2", "topcow-track1-task3"

SHAPE = (512, 512, 256)
SPACING = (0.45, 0.45, 0.6)
SCALE = 4
OFFSET = (192, 200, 88)


def _make_case(folder: Path) -> tuple[Path, Path, Path, Path]:
    small = fixture.make_label_map(fixture.Variant(no_3rd_a2=False), (0, 0, 0))
    big = small.repeat(SCALE, 0).repeat(SCALE, 1).repeat(SCALE, 2)
    truth = np.zeros(SHAPE, np.uint8)
    x, y, z = OFFSET
    truth[x : x + big.shape[0], y : y + big.shape[1], z : z + big.shape[2]] = big
    pred = np.roll(truth, 1, axis=0)
    pred[pred == 10] = 0
    pred[300:310, 300:310, 100:110] = 5
    public = folder / "public"
    write_image(public / "test" / "images" / "topcow_ct_001_0000.nii.gz", truth, spacing_mm=SPACING)
    gold = folder / "gold.nii.gz"
    write_image(gold, truth, spacing_mm=SPACING)
    pred_path = folder / "pred.nii.gz"
    write_image(pred_path, pred, spacing_mm=SPACING)
    location = tuple(o + fixture.ROI_LOCATION[i] * SCALE for i, o in enumerate(OFFSET))
    size = tuple(s * SCALE for s in fixture.ROI_SIZE)
    private = folder / "private"
    private_whole = folder / "private_whole"
    for where, box in ((private, Box(size, location)), (private_whole, Box(SHAPE, (0, 0, 0)))):
        roi = where / "roi" / "topcow_ct_001.txt"
        roi.parent.mkdir(parents=True)
        roi.write_text(format_roi_text(box), encoding="utf-8")
    return public, gold, pred_path, private


def _case(task_id: str, pred: Path, gold: Path, public: Path, private: Path) -> ScoreCase:
    """One case of ``task_id`` as grading hands it to the family's functions."""
    (column,) = get_task(task_id).submission.columns
    return ScoreCase(
        case_id="001",
        submitted=SubmissionCase("001", {}, {column.name: pred}),
        gold=SubmissionCase("001", {}, {column.name: gold}),
        public=public,
        private=private,
        params=get_task(task_id).params,
    )


def _one_case(args: tuple[Path, Path, Path, Path]) -> tuple[float, float, float, dict]:
    public, gold, pred, private = args
    case = _case(SEG, pred, gold, public, private)
    (column,) = get_task(SEG).submission.columns
    tracemalloc.start()
    started = time.perf_counter()
    reasons = check_declared_file(pred, column.file, public, "001")
    checked = time.perf_counter()
    scores = metrics.score_segmentation_case(case).values
    done = time.perf_counter()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert not [r for r in reasons if not isinstance(r, SubmissionWarning)], reasons
    return checked - started, done - checked, peak / 2**20, scores


def _bench_task1(folder: Path) -> None:
    public, gold, pred, private = _make_case(folder)
    volume_mb = np.prod(SHAPE) / 2**20
    context = multiprocessing.get_context("spawn")
    for label, private_dir in (
        ("ROI 104x96x40", private),
        ("ROI = whole volume", folder / "private_whole"),
    ):
        with context.Pool(1) as pool:
            check_s, score_s, peak_mb, scores = pool.apply(
                _one_case, ((public, gold, pred, private_dir),)
            )
        shown = {k: round(v, 3) for k, v in scores.items() if isinstance(v, float)}
        print(
            f"task 1, {label}: validate {check_s:.2f} s + score {score_s:.2f} s = "
            f"{check_s + score_s:.2f} s; peak {peak_mb:.0f} MiB "
            f"= {peak_mb / volume_mb:.1f} x the label volume ({volume_mb:.0f} MiB); {shown}"
        )


def _bench_json_tasks(folder: Path) -> None:
    public = folder / "public"
    shape = read_geometry(public / "test" / "images" / "topcow_ct_001_0000.nii.gz").shape
    assert shape == SHAPE
    box_path, gold_box = folder / "box.json", folder / "gold_box.json"
    box_path.write_text(json.dumps({"size": [96, 68, 36], "location": [200, 190, 100]}))
    gold_box.write_text(json.dumps({"size": [100, 70, 40], "location": [198, 192, 98]}))
    n = 200
    box_case = _case(BOX, box_path, gold_box, public, folder)
    box_context = CheckContext(task=get_task(BOX), public=public)
    started = time.perf_counter()
    for _ in range(n):
        assert not submission.check_box(box_case.submitted, box_context)
        metrics.score_box_case(box_case)
    per_box = (time.perf_counter() - started) / n
    edges_path, gold_edges = folder / "edges.json", folder / "gold_edges.json"
    edges_path.write_text(json.dumps(fixture.VARIANTS["001"].edges()))
    gold_edges.write_text(json.dumps(fixture.VARIANTS["002"].edges()))
    edges_case = _case(EDGES, edges_path, gold_edges, public, folder)
    edges_context = CheckContext(task=get_task(EDGES), public=public)
    started = time.perf_counter()
    for _ in range(n):
        assert not submission.check_edges(edges_case.submitted, edges_context)
        metrics.score_edges_case(edges_case)
    per_edges = (time.perf_counter() - started) / n
    print(f"task 2: {per_box * 1000:.2f} ms per case; task 3: {per_edges * 1000:.2f} ms per case")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    print(
        f"machine: {platform.processor() or platform.machine()}, {multiprocessing.cpu_count()} CPUs"
    )
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        folder = Path(tmp)
        _bench_task1(folder)
        _bench_json_tasks(folder)


if __name__ == "__main__":
    main()
