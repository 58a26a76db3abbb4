"""PANTHER per-case scoring: ReX-MLE against the organisers' computation, same masks, same values.

Not a test. The organisers' evaluation (DIAGNijmegen/PANTHER_baseline ``evaluate_local.py``)
scores a case with google-deepmind ``surface-distance`` (the package this project depends on):
``compute_surface_distances(G, P, spacing)`` on the whole arrays, then surface Dice at 5 mm, the
95th-percentile Hausdorff distance and the MASD, plus the voxel Dice and volumes with numpy. Here
that computation is run as written there (one spacing pairing, the one it ranks) and timed against
``rexmle.challenges.panther.metrics.score_arrays``, which computes the ranked keys AND the
physically paired ``*_physical`` keys. Both get the same boolean arrays in memory (file reading is
the same SimpleITK call in both and is left out); the ranked values must agree to 1e-12.

Cases (x, y, z) at (0.8, 0.8, 3.0) mm: a small tumour in a 256 x 256 x 80 volume (task 1 size),
a large one, and a prediction missing half of the tumour. After one warm-up each, ``--repeat``
rounds (default 9) that time the organisers' computation and ours one after the other, so that
both see the same load; printed: the median and the range (min-max) of each.

Run:  .venv/bin/python bench/panther.py [--repeat N]
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import time
from collections.abc import Callable

import numpy as np
import surface_distance as deepmind

from rexmle.challenges.panther.metrics import official_spacing, score_arrays

SPACING_XYZ = (0.8, 0.8, 3.0)


def ellipsoid(
    shape: tuple[int, int, int], centre: tuple[float, ...], radii: tuple[float, ...]
) -> np.ndarray:
    """A boolean ellipsoid of the given centre and radii (voxels)."""
    x, y, z = np.ogrid[: shape[0], : shape[1], : shape[2]]
    (cx, cy, cz), (rx, ry, rz) = centre, radii
    return ((x - cx) / rx) ** 2 + ((y - cy) / ry) ** 2 + ((z - cz) / rz) ** 2 <= 1


def cases() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(prediction, truth) pairs."""
    shape = (256, 256, 80)
    small_truth = ellipsoid(shape, (128, 120, 40), (18, 15, 5))
    small_pred = ellipsoid(shape, (131, 121, 41), (17, 16, 5))
    large_truth = ellipsoid(shape, (128, 128, 40), (60, 50, 18))
    large_pred = ellipsoid(shape, (126, 131, 41), (58, 53, 17))
    half = large_truth.copy()
    half[:128] = False
    return {
        "small tumour (12k voxels)": (small_pred, small_truth),
        "large tumour (220k voxels)": (large_pred, large_truth),
        "half missed": (half, large_truth),
    }


def official_case(pred: np.ndarray, truth: np.ndarray) -> dict[str, float]:
    """The organisers' per-case computation with their spacing pairing (see the docstring)."""
    spacing = official_spacing(SPACING_XYZ)
    distances = deepmind.compute_surface_distances(truth, pred, spacing)
    intersection = np.count_nonzero(truth & pred)
    voxel = math.prod(SPACING_XYZ)
    return {
        "dsc": 2.0 * intersection / (np.count_nonzero(truth) + np.count_nonzero(pred)),
        "msd": deepmind.compute_surface_dice_at_tolerance(distances, 5.0),
        "hd95": deepmind.compute_robust_hausdorff(distances, 95),
        "masd": float(np.mean(deepmind.compute_average_surface_distance(distances))),
        "volume_gt_mm3": np.count_nonzero(truth) * voxel,
        "volume_pred_mm3": np.count_nonzero(pred) * voxel,
    }


def alternating_seconds(
    first: Callable[[], object], second: Callable[[], object], repeat: int
) -> tuple[list[float], list[float]]:
    """Wall times of ``first`` and ``second`` timed in turn, ``repeat`` rounds after a warm-up."""
    first()
    second()
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeat):
        for fn, into in ((first, times[0]), (second, times[1])):
            started = time.perf_counter()
            fn()
            into.append(time.perf_counter() - started)
    return times


def spread_ms(times: list[float]) -> str:
    """'median (min-max)' in ms."""
    return f"{statistics.median(times) * 1e3:7.2f} ({min(times) * 1e3:.1f}-{max(times) * 1e3:.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"python {platform.python_version()}, load {os.getloadavg()[0]:.2f}"
    )
    print(f"{'case':28s} {'official ms':>21s} {'ReX-MLE ms':>21s} {'ratio':>6s}  values")
    for name, (pred, truth) in cases().items():
        official = official_case(pred, truth)
        ours = score_arrays(pred, truth, SPACING_XYZ)
        agree = all(
            math.isclose(float(ours[key]), value, rel_tol=1e-12) for key, value in official.items()
        )
        official_s, ours_s = alternating_seconds(
            lambda p=pred, t=truth: official_case(p, t),
            lambda p=pred, t=truth: score_arrays(p, t, SPACING_XYZ),
            args.repeat,
        )
        ratio = statistics.median(official_s) / statistics.median(ours_s)
        print(
            f"{name:28s} {spread_ms(official_s):>21s} {spread_ms(ours_s):>21s} {ratio:5.1f}x  "
            f"{'equal' if agree else 'DIFFER'} "
            f"(hd95 {ours['hd95']:.4g} mm, hd95_physical {ours['hd95_physical']:.4g} mm)"
        )


if __name__ == "__main__":
    main()
