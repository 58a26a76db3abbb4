"""End-to-end grading speed of the 2-D detection/instance tasks at real test-set sizes.

Run: ``.venv/bin/python bench/grade_2d.py [--workers 2] [--whole-slide]``. For each scenario a
synthetic raw dataset in the real layout is written and prepared (not timed), then a submission
is graded (validation + scoring + ranking) in a fresh process, which reports wall-clock seconds
and peak resident memory (the grading process and its largest worker). Scenarios:

* ``dentex``: 705 X-rays -> 141 test images, ~5 GT boxes and ~30 detections per test image.
* ``neurips-cellseg``: 50 pairs -> 10 test images of 2000 x 2000 with ~1900 cells each.
* ``--whole-slide``: 5 pairs -> 1 test image of 10 000 x 10 000 (tiled mode), ~50 000 cells.
* ``usenhance``: 1500 pairs of 512 x 512 -> 300 test images (LNCC, SSIM, PSNR per image).
* ``ldct-iqa``: 300 test scores (three correlations over the whole test set).
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
from rexmle.tasks.folders import TaskDirs


def _mark_raw(raw_dir: Path) -> None:
    (raw_dir / RAW_COMPLETE_MARKER).write_text(json.dumps({"kind": "bench"}) + "\n", "utf-8")


def _prepare(task_id: str, data_dir: Path) -> TaskDirs:
    """Prepare the bench's raw data as a mini task; no fixture secret, so the raw data is kept
    (a fresh secret would replace it with the seeded mini fixture).
    """
    dirs, _ = prepare_task(task_id, data_dir=data_dir, mini=True, fixture_secret=None)
    return dirs


def build_dentex(data_dir: Path, rng: np.random.Generator) -> Path:
    """Prepare a 705-image DENTEX and write a ~30-detections-per-image submission."""
    from rexmle.challenges.dentex import fixture

    raw = data_dir / "dentex" / "raw"
    fixture.write_dataset(raw, n_images=705, seed=0)
    _mark_raw(raw)
    dirs = _prepare("dentex", data_dir)
    submission = data_dir / "sub-dentex"
    shutil.copytree(dirs.gold, submission)
    for path in (submission / "predictions").glob("*.json"):
        gold = json.loads(path.read_text(encoding="utf-8"))
        detections = []
        for d in gold:
            for _ in range(2):
                x, y, w, h = d["bbox"]
                detections.append(
                    {
                        **d,
                        "bbox": [x + rng.normal(0, 2), y + rng.normal(0, 2), w, h],
                        "score": float(rng.uniform()),
                    }
                )
        while len(detections) < 30:
            detections.append(
                {
                    "bbox": [float(rng.uniform(0, 170)), float(rng.uniform(0, 60)), 10.7, 32.0],
                    "category_id_1": int(rng.integers(0, 4)),
                    "category_id_2": int(rng.integers(0, 8)),
                    "category_id_3": int(rng.integers(0, 4)),
                    "score": float(rng.uniform()),
                }
            )
        path.write_text(json.dumps(detections), encoding="utf-8")
    return submission


def build_cellseg(data_dir: Path, *, whole_slide: bool) -> Path:
    """Prepare a CellSeg set with large test images and write a shifted-gold submission."""
    from rexmle.challenges.neurips_cellseg import fixture

    if whole_slide:
        training = tuple(f"cell_{i:05d}.png" for i in range(1, 5))
        tuning = ("cell_00101.tif",)
        test_shape, test_cells = (10_000, 10_000), 50_000
    else:
        training = tuple(f"cell_{i:05d}.png" for i in range(1, 41))
        tuning = tuple(f"cell_{i:05d}.tif" for i in range(1, 11))
        test_shape, test_cells = (2000, 2000), 2000
    raw = data_dir / "neurips-cellseg" / "raw"
    fixture.write_dataset(
        raw,
        training=training,
        tuning=tuning,
        seed=0,
        shape_for=lambda _key, is_test: test_shape if is_test else (64, 64),
        cells_for=lambda _key, is_test, _rng: test_cells if is_test else 4,
    )
    _mark_raw(raw)
    dirs = _prepare("neurips-cellseg", data_dir)
    submission = data_dir / "sub-cellseg"
    shutil.copytree(dirs.gold, submission)
    for path in (submission / "predictions").glob("*.tiff"):
        labels = tifffile.imread(str(path)).astype(np.uint32)
        tifffile.imwrite(str(path), np.roll(labels, 1, axis=1), compression="zlib")
    return submission


def build_usenhance(data_dir: Path, rng: np.random.Generator) -> Path:
    """Prepare 1500 pairs of 512 x 512 and submit the low-quality test images as "enhanced"."""
    from PIL import Image
    from scipy import ndimage

    from rexmle.challenges.usenhance.fixture import ORGANS

    raw = data_dir / "usenhance" / "raw"
    for organ in ORGANS:
        for quality in ("high_quality", "low_quality"):
            (raw / "train_datasets" / organ / quality).mkdir(parents=True)
        for n in range(300):
            high = ndimage.uniform_filter(rng.integers(0, 256, (512, 512)).astype(float), 5)
            low = ndimage.uniform_filter(high, 7) + rng.normal(0, 10, high.shape)
            for quality, array in (("high_quality", high), ("low_quality", low)):
                image = Image.fromarray(np.clip(array, 0, 255).astype(np.uint8))
                image.save(raw / "train_datasets" / organ / quality / f"{n}.png", compress_level=1)
    _mark_raw(raw)
    dirs = _prepare("usenhance", data_dir)
    submission = data_dir / "sub-usenhance"
    shutil.copytree(dirs.gold, submission)
    for path in (submission / "enhanced").glob("*.png"):
        shutil.copyfile(dirs.public / "test" / "low_quality" / path.name, path)
    return submission


def build_ldct(data_dir: Path, rng: np.random.Generator) -> Path:
    """Prepare 10 train / 300 test slices and submit noisy scores."""
    raw = data_dir / "ldct-iqa" / "raw"
    for folder, images, suffix, count in (
        ("LDCTIQAG2023_train", "image", ".tif", 10),
        ("LDCTIQAC_test", "images", ".tiff", 300),
    ):
        (raw / folder / images).mkdir(parents=True)
        scores = {}
        for n in range(count):
            name = f"{n:04d}{suffix}"
            tifffile.imwrite(raw / folder / images / name, rng.normal(size=(64, 64)).astype("f4"))
            scores[name] = round(float(rng.uniform(0, 4)), 1)
        label_file = "train.json" if count == 10 else "test.json"
        (raw / folder / label_file).write_text(json.dumps(scores), encoding="utf-8")
    _mark_raw(raw)
    dirs = _prepare("ldct-iqa", data_dir)
    submission = data_dir / "sub-ldct"
    submission.mkdir()
    lines = (dirs.gold / "submission.csv").read_text(encoding="utf-8").splitlines()
    noisy = [lines[0]] + [
        f"{row.split(',')[0]},{float(row.split(',')[1]) + rng.normal(0, 1):.4f}"
        for row in lines[1:]
    ]
    (submission / "submission.csv").write_text("\n".join(noisy) + "\n", encoding="utf-8")
    return submission


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

    start = time.perf_counter()
    report = grade_submission(task, Path(submission), data_dir=Path(data_dir), workers=int(workers))
    seconds = time.perf_counter() - start
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
    headline = {
        "dentex": "ap_mean",
        "neurips-cellseg": "f1_0.5",
        "usenhance": "lncc",
        "ldct-iqa": "score",
    }[task]
    print(
        json.dumps(
            {
                "seconds": seconds,
                "peak_rss_gib_main": own,
                "peak_rss_gib_worker": kids,
                "valid": report.valid,
                "reasons": report.reasons[:3],
                headline: report.metrics.get(headline),
                "n_cases": len(report.cases),
            }
        )
    )


def main() -> None:
    """Build the scenarios, grade each in a fresh process, print one line per scenario."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--whole-slide", action="store_true")
    parser.add_argument("--only", choices=("dentex", "neurips-cellseg", "usenhance", "ldct-iqa"))
    args = parser.parse_args()
    print(
        f"machine: {platform.machine()} {platform.processor()} python {platform.python_version()}"
    )
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory(prefix="rexmle-bench-") as tmp:
        data_dir = Path(tmp)
        scenarios: list[tuple[str, str, Path]] = []
        if args.only in (None, "dentex"):
            started = time.perf_counter()
            scenarios.append(("dentex 141 images", "dentex", build_dentex(data_dir, rng)))
            print(f"  (dentex raw + prepare: {time.perf_counter() - started:.1f} s)")
        if args.only in (None, "neurips-cellseg"):
            started = time.perf_counter()
            label = (
                "neurips-cellseg 1 x 10000^2" if args.whole_slide else "neurips-cellseg 10 x 2000^2"
            )
            submission = build_cellseg(data_dir, whole_slide=args.whole_slide)
            scenarios.append((label, "neurips-cellseg", submission))
            print(f"  (cellseg raw + prepare: {time.perf_counter() - started:.1f} s)")
        builders = (("usenhance", "usenhance 300 images", build_usenhance),
                    ("ldct-iqa", "ldct-iqa 300 scores", build_ldct))  # fmt: skip
        for task, label, build in builders:
            if args.only in (None, task):
                started = time.perf_counter()
                scenarios.append((label, task, build(data_dir, rng)))
                print(f"  ({task} raw + prepare: {time.perf_counter() - started:.1f} s)")
        for label, task, submission in scenarios:
            for name, folder in (
                ("gold", data_dir / task / "private" / "gold"),
                ("perturbed", submission),
            ):
                result = grade_in_child(task, data_dir, folder, args.workers)
                print(
                    f"{label:<30} {name:<10} {result['seconds']:7.2f} s  peak RSS main "
                    f"{result['peak_rss_gib_main']:.2f} GiB, worker {result['peak_rss_gib_worker']:.2f} "
                    f"GiB  valid={result['valid']}  cases={result['n_cases']}  "
                    + " ".join(
                        f"{k}={v}"
                        for k, v in result.items()
                        if k in ("ap_mean", "f1_0.5", "lncc", "score")
                    )
                )


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--child":
        child(*sys.argv[2:])
    else:
        main()
