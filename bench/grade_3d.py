"""Grading speed and peak memory of one 3-D case at realistic size: TopBrain, PANTHER, SEG.A.

Not a test. For each family a synthetic gold label volume and a perturbed prediction are
written to a temporary folder in the task's file format; the family's ``score_case`` is then
timed in a fresh subprocess (one worker, as in ``map_cases`` with one case). Peak memory is the
larger of the resident-set growth during scoring (``getrusage`` ru_maxrss after minus before; 0
when an earlier phase, e.g. imports, already peaked higher) and the peak of Python/numpy
allocations traced by ``tracemalloc`` (misses memory that C extensions allocate themselves).

Sizes (x, y, z), spacing in mm:
  topbrain  512 x 512 x 300 @ (0.45, 0.45, 0.45), 40 vessel labels (tubes of radius 1-3 voxels)
  panther   256 x 256 x 80  @ (0.8, 0.8, 3.0), one tumour of ~12 000 voxels
  seg_a     512 x 512 x 250 @ (0.8, 0.8, 2.5), an aortic tree of ~0.8 M voxels

Run:  .venv/bin/python bench/grade_3d.py [topbrain panther seg_a] [--repeat N]
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

FAMILIES = ("topbrain", "panther", "seg_a")


def _ball_along(labels: np.ndarray, points: np.ndarray, radius: float, value: int) -> None:
    """Paint a tube of `radius` voxels along the polyline `points` (n, 3) into `labels`."""
    r = int(np.ceil(radius))
    offsets = np.argwhere(np.ones((2 * r + 1,) * 3, bool)) - r
    offsets = offsets[(offsets**2).sum(axis=1) <= radius**2]
    for a, b in itertools.pairwise(points):
        steps = max(int(np.abs(b - a).max()), 1)
        centres = np.round(a + (b - a) * np.linspace(0, 1, steps + 1)[:, None]).astype(int)
        voxels = (centres[:, None, :] + offsets[None, :, :]).reshape(-1, 3)
        inside = np.all((voxels >= 0) & (voxels < labels.shape), axis=1)
        voxels = voxels[inside]
        labels[voxels[:, 0], voxels[:, 1], voxels[:, 2]] = value


def topbrain_pair(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    shape = (512, 512, 300)
    truth = np.zeros(shape, np.uint8)
    centre = np.asarray(shape) / 2
    for label in range(1, 41):
        start = centre + rng.uniform(-120, 120, 3) * np.asarray([1, 1, 0.5])
        n = int(rng.integers(3, 7))
        steps = rng.normal(0, 25, (n, 3))
        points = np.clip(start + np.cumsum(steps, axis=0), 3, np.asarray(shape) - 4)
        _ball_along(truth, points, float(rng.uniform(1.0, 3.0)), label)
    pred = truth.copy()
    for label in rng.choice(np.arange(1, 41), 10, replace=False):  # shift ten labels by 1 voxel
        mask = truth == label
        pred[mask] = 0
        pred[np.roll(mask, 1, axis=int(rng.integers(0, 3)))] = label
    pred[truth == 17] = 0  # one label missed
    pred[pred == 33] = 34  # one label confused
    return truth, pred


def panther_pair() -> tuple[np.ndarray, np.ndarray]:
    shape = (256, 256, 80)
    x, y, z = np.ogrid[: shape[0], : shape[1], : shape[2]]
    truth = (((x - 128) / 18) ** 2 + ((y - 120) / 15) ** 2 + ((z - 40) / 5) ** 2 <= 1).astype(
        np.uint8
    )
    pred = (((x - 131) / 17) ** 2 + ((y - 121) / 16) ** 2 + ((z - 41) / 5) ** 2 <= 1).astype(
        np.uint8
    )
    return truth, pred


def seg_a_pair() -> tuple[np.ndarray, np.ndarray]:
    shape = (512, 512, 250)
    truth = np.zeros(shape, np.uint8)
    aorta = np.stack(
        [256 + 30 * np.sin(np.linspace(0, 2, 12)), np.full(12, 260.0), np.linspace(10, 240, 12)],
        axis=1,
    )
    _ball_along(truth, aorta, 12.0, 1)
    for side in (-1, 1):  # iliac branches and two side branches
        _ball_along(truth, np.array([[256, 260, 20], [256 + side * 60, 250, 5]]), 6.0, 1)
        _ball_along(truth, np.array([[256, 260, 120], [256 + side * 90, 280, 110]]), 4.0, 1)
    pred = np.roll(truth, 1, axis=2)
    pred[:, :, 200:] = 0  # the upper part missed
    return truth, pred


def write_case(family: str, folder: Path) -> tuple[Path, Path, int]:
    """Write gold and prediction files of one family; returns their paths and the label bytes."""
    from rexmle.io import write_image

    rng = np.random.default_rng(0)
    if family == "topbrain":
        truth, pred = topbrain_pair(rng)
        spacing, suffix = (0.45, 0.45, 0.45), ".nii.gz"
    elif family == "panther":
        truth, pred = panther_pair()
        spacing, suffix = (0.8, 0.8, 3.0), ".mha"
    else:
        truth, pred = seg_a_pair()
        spacing, suffix = (0.8, 0.8, 2.5), ".seg.nrrd"
    gold_path, pred_path = folder / f"gold{suffix}", folder / f"pred{suffix}"
    write_image(gold_path, truth, spacing_mm=spacing)
    write_image(pred_path, pred, spacing_mm=spacing)
    return gold_path, pred_path, truth.nbytes


def one_case(gold: Path, pred: Path, params: dict[str, object]) -> object:
    """The ScoreCase a family's ``score_case`` gets for the case (gold, pred)."""
    from rexmle.tasks.jobs import ScoreCase
    from rexmle.tasks.submission import SubmissionCase

    column = "predicted_mask_path"
    return ScoreCase(
        case_id="case",
        submitted=SubmissionCase("case", {}, {column: pred}),
        gold=SubmissionCase("case", {}, {column: gold}),
        public=gold.parent,
        private=gold.parent,
        params=params,
    )


def score_one(family: str, gold: Path, pred: Path) -> dict[str, object]:
    """Score one case in this process; timing and peak memory growth included."""
    if family == "topbrain":
        from rexmle.challenges.topbrain.metrics import score_case

        item: object = one_case(gold, pred, {"scan": "ct"})
    elif family == "panther":
        from rexmle.challenges.panther.metrics import score_case

        item = one_case(gold, pred, {"task": 1})
    else:
        from rexmle.challenges.seg_a.metrics import score_case

        item = one_case(gold, pred, {})
    before_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    started, cpu_started = time.perf_counter(), time.process_time()
    result = score_case(item)
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    traced_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    after_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    row = result.values
    values = {k: v for k, v in row.items() if isinstance(v, float)}
    return {
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "peak_growth_mb": (after_kb - before_kb) / 1024,
        "traced_peak_mb": traced_peak / 2**20,
        "values": values,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("families", nargs="*", default=list(FAMILIES))
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument(
        "--one", nargs=3, metavar=("FAMILY", "GOLD", "PRED"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.one:
        family, gold, pred = args.one
        print(json.dumps(score_one(family, Path(gold), Path(pred))))
        return
    print(
        f"machine: {platform.processor() or platform.machine()}, python {platform.python_version()}"
    )
    for family in args.families:
        with tempfile.TemporaryDirectory() as tmp:
            gold, pred, label_bytes = write_case(family, Path(tmp))
            for _ in range(args.repeat):
                done = subprocess.run(
                    [sys.executable, __file__, "--one", family, str(gold), str(pred)],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                result = json.loads(done.stdout.strip().splitlines()[-1])
                peak_mb = max(result["peak_growth_mb"], result["traced_peak_mb"])
                ratio = peak_mb * 2**20 / label_bytes
                print(
                    f"{family:9s} {result['seconds']:6.2f} s wall {result['cpu_seconds']:6.2f} s CPU"
                    f"  peak {peak_mb:6.1f} MB (rss +{result['peak_growth_mb']:.1f},"
                    f" traced {result['traced_peak_mb']:.1f})"
                    f" = {ratio:4.1f} x label volume ({label_bytes / 2**20:.1f} MB)\n    "
                    + ", ".join(f"{k}={v:.4g}" for k, v in result["values"].items())
                )


if __name__ == "__main__":
    main()
