"""Time and peak memory of the 3-D metrics on 256×256×200 masks, spacing (0.4, 0.4, 0.6) mm.

Run: `.venv/bin/python bench/metrics.py [--repeat N]`. Three mask pairs:
(a) volume-filling: two overlapping ellipsoids that fill most of the array;
(b) organ-sized: two overlapping ellipsoids of about 60×50×40 voxels;
(c) vessel-like: a tree of tubes (radius 2–3 voxels) spanning the array, the shape clDice,
    Betti-0 and the TopCoW/TopBrain metrics see.
For each metric: the best wall and CPU time over `--repeat` runs without tracing, and the peak memory
allocated above the inputs in one more run under tracemalloc (numpy buffers are traced; the
C++ internals of `edt`, `cc3d` and the k-d tree are not), also as a multiple of the bytes of
one input mask.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import tracemalloc
from collections.abc import Callable

import numpy as np

from rexmle.metrics.lesions import lesion_f1
from rexmle.metrics.overlap import class_average_dice, dice
from rexmle.metrics.surface import (
    class_average_hd95,
    hausdorff_distance,
    surface_distances,
    surfel_scores,
)
from rexmle.metrics.topology import class_average_b0_error, cldice, connected_components

SHAPE = (256, 256, 200)
SPACING_MM = (0.4, 0.4, 0.6)


def ellipsoid(centre: tuple[float, ...], radii: tuple[float, ...]) -> np.ndarray:
    grid = np.ogrid[tuple(slice(0, n) for n in SHAPE)]
    inside = np.zeros(SHAPE, dtype=np.float32)
    for axis_grid, c, r in zip(grid, centre, radii, strict=True):
        inside = inside + ((axis_grid - c) / r).astype(np.float32) ** 2
    return inside <= 1.0


def vessel_tree(seed: int) -> np.ndarray:
    """Tubes between random points, drawn as balls along each segment."""
    rng = np.random.default_rng(seed)
    mask = np.zeros(SHAPE, dtype=bool)
    nodes = [np.array([128.0, 128.0, 100.0])]
    for _ in range(24):
        start = nodes[rng.integers(len(nodes))]
        end = np.clip(start + rng.normal(0, 45, size=3), 4, np.array(SHAPE) - 5)
        nodes.append(end)
        radius = rng.uniform(2.0, 3.0)
        steps = int(np.linalg.norm(end - start)) + 1
        r = int(np.ceil(radius))
        offsets = np.argwhere(np.ones((2 * r + 1,) * 3, dtype=bool)) - r
        ball = offsets[(offsets**2).sum(axis=1) <= radius**2]
        for t in np.linspace(0.0, 1.0, steps):
            centre = np.rint(start + t * (end - start)).astype(int)
            points = centre + ball
            mask[points[:, 0], points[:, 1], points[:, 2]] = True
    return mask


def measure(fn: Callable[[], object], repeat: int) -> tuple[float, float, int]:
    """Best wall and CPU time over `repeat` untraced runs, then the traced peak of one more run.

    CPU time (this process, all threads) is shown because a busy machine inflates wall time;
    the metrics are single-threaded, so on an idle machine both agree.
    """
    best_wall = best_cpu = float("inf")
    for _ in range(repeat):
        start_wall, start_cpu = time.perf_counter(), time.process_time()
        fn()
        best_wall = min(best_wall, time.perf_counter() - start_wall)
        best_cpu = min(best_cpu, time.process_time() - start_cpu)
    tracemalloc.start()
    tracemalloc.reset_peak()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return best_wall, best_cpu, peak


def hd95_and_assd(pred: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    distances = surface_distances(pred, truth, spacing_mm=SPACING_MM, surface_connectivity=26)
    return distances.hausdorff_mm(95.0), distances.average_symmetric_mm()


def run_case(name: str, pred: np.ndarray, truth: np.ndarray, repeat: int) -> None:
    volume_bytes = truth.nbytes
    pred_labels = pred.astype(np.uint8) * 3
    truth_labels = truth.astype(np.uint8) * 3
    metrics: dict[str, Callable[[], object]] = {
        "dice": lambda: dice(pred, truth),
        "connected components (26)": lambda: connected_components(truth, connectivity=26),
        "lesion F1 (26)": lambda: lesion_f1(pred, truth),
        "HD95 + ASSD (26-surface)": lambda: hd95_and_assd(pred, truth),
        "HD max (SEG.A, 6-surface)": lambda: hausdorff_distance(pred, truth, spacing_mm=SPACING_MM),
        "surfel scores (PANTHER)": lambda: surfel_scores(pred, truth, spacing_mm=SPACING_MM),
        "class-average Dice (labels)": lambda: class_average_dice(pred_labels, truth_labels),
        "class-average HD95 (labels)": lambda: class_average_hd95(
            pred_labels, truth_labels, spacing_mm=SPACING_MM
        ),
        "class-average B0 error": lambda: class_average_b0_error(pred_labels, truth_labels),
        "clDice": lambda: cldice(pred, truth),
    }
    print(f"\n({name})  foreground voxels: pred {int(pred.sum())}, truth {int(truth.sum())}")
    print(f"{'metric':32s} {'wall s':>8s} {'CPU s':>8s} {'peak MB':>8s} {'x input':>8s}")
    for label, fn in metrics.items():
        wall, cpu, peak = measure(fn, repeat)
        print(f"{label:32s} {wall:8.3f} {cpu:8.3f} {peak / 1e6:8.1f} {peak / volume_bytes:8.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    print(f"python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}")
    print(f"cpus available: {len(os.sched_getaffinity(0))}; shape {SHAPE}, spacing {SPACING_MM}")
    print(f"one input mask: {np.prod(SHAPE) / 1e6:.1f} MB (bool)")
    cases = {
        "a: volume-filling": (
            ellipsoid((128, 128, 100), (120, 118, 95)),
            ellipsoid((125, 131, 102), (118, 120, 92)),
        ),
        "b: organ-sized": (
            ellipsoid((100, 120, 90), (30, 25, 20)),
            ellipsoid((102, 118, 91), (29, 26, 21)),
        ),
        "c: vessel-like": (vessel_tree(1), vessel_tree(1) ^ (ellipsoid((90, 90, 80), (6, 6, 6)))),
    }
    for name, (pred, truth) in cases.items():
        run_case(name, pred, truth, args.repeat)


if __name__ == "__main__":
    main()
