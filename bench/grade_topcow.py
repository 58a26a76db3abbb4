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
    roi = folder / "roi.txt"
    location = tuple(o + fixture.ROI_LOCATION[i] * SCALE for i, o in enumerate(OFFSET))
    size = tuple(s * SCALE for s in fixture.ROI_SIZE)
    roi.write_text(format_roi_text(Box(size=size, location=location)), encoding="utf-8")
    whole = folder / "roi_whole.txt"
    whole.write_text(format_roi_text(Box(size=SHAPE, location=(0, 0, 0))), encoding="utf-8")
    return public, gold, pred_path, roi


def _one_case(args: tuple[Path, Path, Path, Path]) -> tuple[float, float, float, dict]:
    public, gold, pred, roi = args
    tracemalloc.start()
    started = time.perf_counter()
    reasons = submission.check_mask_file("001", pred, public, "ct")
    checked = time.perf_counter()
    scores = metrics.score_segmentation_case(("001", pred, gold, roi))
    done = time.perf_counter()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert not [r for r in reasons if not isinstance(r, submission.SubmissionWarning)], reasons
    return checked - started, done - checked, peak / 2**20, scores


def _bench_task1(folder: Path) -> None:
    public, gold, pred, roi = _make_case(folder)
    volume_mb = np.prod(SHAPE) / 2**20
    context = multiprocessing.get_context("spawn")
    for label, roi_path in (
        ("ROI 104x96x40", roi),
        ("ROI = whole volume", folder / "roi_whole.txt"),
    ):
        with context.Pool(1) as pool:
            check_s, score_s, peak_mb, scores = pool.apply(
                _one_case, ((public, gold, pred, roi_path),)
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
    box_path = folder / "box.json"
    box_path.write_text(json.dumps({"size": [96, 68, 36], "location": [200, 190, 100]}))
    truth = Box(size=(100, 70, 40), location=(198, 192, 98))
    n = 200
    started = time.perf_counter()
    for _ in range(n):
        submission.check_box_file("001", box_path, public, "ct")
        payload = json.loads(box_path.read_text())
        metrics.score_box(Box(tuple(payload["size"]), tuple(payload["location"])), truth)
    per_box = (time.perf_counter() - started) / n
    edges = fixture.VARIANTS["001"].edges()
    edges_path = folder / "edges.json"
    edges_path.write_text(json.dumps(edges))
    started = time.perf_counter()
    for _ in range(n):
        submission.check_edges_file(edges_path)
        metrics.score_edges(json.loads(edges_path.read_text()), edges)
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
