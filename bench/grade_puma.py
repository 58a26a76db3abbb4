"""End-to-end grading speed of the four PUMA tasks at the real test-set size.

Run: ``.venv/bin/python bench/grade_puma.py [--workers 2] [--nuclei 1500]``. A synthetic raw
dataset in the release layout is written once (204 ROIs of 1024 x 1024 RGBA -> 41 test ROIs, as
the real split) and prepared for each task (not timed); then gold and a perturbed submission are
graded (validation + scoring + ranking) in a fresh process, which reports wall-clock seconds and
peak resident memory (the grading process and its largest worker).

Perturbations: tissue maps rolled by 3 px with 5 % of pixels set to a random class; nuclei
written as polygons (the heavier format), centres jittered by N(0, 3 px), 10 % dropped, 10 % of
the rest given another class, and 10 % extra false positives.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import tifffile

from rexmle.preparation import RAW_COMPLETE_MARKER, prepare_task

TASKS = ("puma-track1-task1", "puma-track2-task1", "puma-track1-task2", "puma-track2-task2")
N_PER_KIND = 102  # 204 ROIs -> ceil(0.2 * 204) = 41 test ROIs


def build_raw(data_dir: Path, n_nuclei: int) -> None:
    """Write the shared raw folder at real size."""
    from rexmle.challenges.puma.fixture import write_raw

    raw = data_dir / "puma-shared" / "raw"
    write_raw(raw, seed=0, size=1024, n_per_kind=N_PER_KIND, n_nuclei=(n_nuclei, n_nuclei + 200))
    (raw / RAW_COMPLETE_MARKER).write_text(json.dumps({"kind": "bench"}) + "\n", "utf-8")


def perturb_tissue(gold: Path, target: Path, rng: np.random.Generator) -> None:
    """Rolled gold maps with 5 % random labels."""
    shutil.copytree(gold, target)
    for path in (target / "predictions").glob("*.tif"):
        labels = np.roll(tifffile.imread(path), 3, axis=1)
        noise = rng.random(labels.shape) < 0.05
        labels[noise] = rng.integers(0, 6, int(noise.sum()))
        tifffile.imwrite(path, labels.astype(np.uint8))


def perturb_nuclei(gold: Path, target: Path, classes: tuple[str, ...], rng: np.random.Generator):
    """Jittered, partly dropped, partly misclassified gold polygons plus false positives."""
    shutil.copytree(gold, target)
    for path in (target / "predictions").glob("*.json"):
        polygons = json.loads(path.read_text(encoding="utf-8"))["polygons"]
        out = []
        for item in polygons:
            if rng.random() < 0.1:
                continue
            points = np.asarray(item["path_points"]) + rng.normal(0, 3, 2)
            name = str(rng.choice(classes)) if rng.random() < 0.1 else item["name"]
            out.append({"name": name, "path_points": points.tolist(), "score": float(rng.random())})
        for _ in range(len(polygons) // 10):
            centre = rng.uniform(0, 1024, 2)
            ring = centre + 4 * np.c_[np.cos(np.arange(6)), np.sin(np.arange(6))]
            out.append({"name": str(rng.choice(classes)), "path_points": ring.tolist()})
        path.write_text(json.dumps({"polygons": out}), encoding="utf-8")


def grade_in_child(task: str, data_dir: Path, submission: Path, workers: int) -> dict:
    """Grade in a fresh interpreter; returns its timing and peak-memory report."""
    out = subprocess.run(
        [sys.executable, __file__, "--child", task, str(data_dir), str(submission), str(workers)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def child(task: str, data_dir: str, submission: str, workers: str) -> None:
    """Grade once and print seconds, peak RSS (self and largest worker) and the headline."""
    from rexmle.grading.grader import grade_submission
    from rexmle.tasks.registry import get_task

    start = time.perf_counter()
    report = grade_submission(task, Path(submission), data_dir=Path(data_dir), workers=int(workers))
    seconds = time.perf_counter() - start
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
    headline = get_task(task).headline.key
    print(
        json.dumps(
            {
                "seconds": seconds,
                "peak_rss_gib_main": own,
                "peak_rss_gib_worker": kids,
                "valid": report.valid,
                "reasons": report.reasons[:3],
                "headline": report.metrics.get(headline),
                "n_cases": len(report.cases),
            }
        )
    )


def main() -> None:
    """Build the data once, grade gold and a perturbed submission per task in fresh processes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--nuclei", type=int, default=1500, help="nuclei per ROI (min)")
    parser.add_argument("--only", choices=TASKS, action="append", help="tasks to grade")
    args = parser.parse_args()
    print(
        f"machine: {platform.machine()} {platform.processor()} python {platform.python_version()}"
    )
    from rexmle.challenges.puma.classes import track_classes
    from rexmle.tasks.registry import get_task

    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory(prefix="rexmle-bench-puma-") as tmp:
        data_dir = Path(tmp)
        started = time.perf_counter()
        build_raw(data_dir, args.nuclei)
        print(f"  (raw: {time.perf_counter() - started:.1f} s)")
        for task in args.only or TASKS:
            started = time.perf_counter()
            dirs, _ = prepare_task(task, data_dir=data_dir, mini=True)
            print(f"  ({task} prepare: {time.perf_counter() - started:.1f} s)")
            submission = data_dir / f"sub-{task}"
            params = get_task(task).params
            if "track" not in params:  # the tissue tasks declare no nuclei track
                perturb_tissue(dirs.gold, submission, rng)
            else:
                perturb_nuclei(dirs.gold, submission, track_classes(params), rng)
            for name, folder in (("gold", dirs.gold), ("perturbed", submission)):
                result = grade_in_child(task, data_dir, folder, args.workers)
                print(
                    f"{task:<18} {name:<10} {result['seconds']:7.2f} s  peak RSS main "
                    f"{result['peak_rss_gib_main']:.2f} GiB, worker "
                    f"{result['peak_rss_gib_worker']:.2f} GiB  valid={result['valid']}  "
                    f"cases={result['n_cases']}  headline={result['headline']}"
                )
            shutil.rmtree(submission)
            shutil.rmtree(dirs.public)


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--child":
        child(*sys.argv[2:])
    else:
        main()
