"""Timing and peak memory of the 2-D metric functions at benchmark scale.

Run: ``.venv/bin/python bench/metrics_2d.py`` (add ``--quick`` for a smaller run). Prints, per
scenario, wall-clock seconds and the peak of numpy/Python allocations (tracemalloc) during the
timed call. Inputs are synthetic and seeded; their generation is not timed.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import platform
import resource
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np

from rexmle.challenges.neurips_cellseg.metrics import image_scores
from rexmle.metrics.correlation import ldct_iqa_score
from rexmle.metrics.detection import ScoredBoxes, TruthBoxes, coco_box_stats
from rexmle.metrics.image import lncc, psnr, ssim
from rexmle.metrics.points import nuclei_class_counts, puma_macro_f1


def measure(
    label: str,
    fn: Callable[[], Any],
    *,
    trace_memory: bool = True,
    traced_fn: Callable[[], Any] | None = None,
) -> Any:
    """Time one call of ``fn``; then, unless disabled, trace a second call for its peak memory.

    The two are separate runs because tracemalloc slows Python-level code several times over.
    ``traced_fn`` (default ``fn``) is what is traced, e.g. a single pair of a long loop.
    """
    start = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - start
    peak_text = "not traced"
    if trace_memory:
        tracemalloc.start()
        (traced_fn or fn)()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        peak_text = f"{peak / 2**20:8.1f} MiB"
    print(f"{label:<58} {seconds:8.3f} s   peak {peak_text}")
    return result


def coco_case(
    rng: np.random.Generator, n_images: int, boxes_per_image: int, n_categories: int
) -> tuple[list[TruthBoxes], list[ScoredBoxes]]:
    truth, detections = [], []
    for _ in range(n_images):
        m = int(rng.poisson(boxes_per_image))
        boxes = np.hstack([rng.uniform(0, 2800, (m, 2)), rng.uniform(30, 250, (m, 2))])
        cats = rng.integers(0, n_categories, m)
        truth.append(TruthBoxes(boxes, cats))
        keep = rng.random(m) < 0.85
        moved = boxes[keep] + rng.normal(0, 10, (int(keep.sum()), 4))
        moved[:, 2:] = np.abs(moved[:, 2:]) + 1
        n_fp = int(rng.integers(0, 10))
        fps = np.hstack([rng.uniform(0, 2800, (n_fp, 2)), rng.uniform(30, 250, (n_fp, 2))])
        det_cats = np.concatenate([cats[keep], rng.integers(0, n_categories, n_fp)])
        scores = np.round(rng.random(det_cats.size), 2)  # two decimals: many ties
        detections.append(ScoredBoxes(np.vstack([moved, fps]), scores, det_cats))
    return truth, detections


def pycocotools_stats(truth: list[TruthBoxes], detections: list[ScoredBoxes]) -> np.ndarray:
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    annotations, results = [], []
    for i, t in enumerate(truth):
        for box, cat in zip(t.boxes_xywh, t.category_ids, strict=True):
            annotations.append(
                {
                    "id": len(annotations) + 1,
                    "image_id": i + 1,
                    "category_id": int(cat),
                    "bbox": box.tolist(),
                    "area": float(box[2] * box[3]),
                    "iscrowd": 0,
                }
            )
    for i, d in enumerate(detections):
        for box, score, cat in zip(d.boxes_xywh, d.scores, d.category_ids, strict=True):
            results.append(
                {"image_id": i + 1, "category_id": int(cat), "bbox": box.tolist(), "score": score}
            )
    categories = sorted({a["category_id"] for a in annotations})
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO()
        gt.dataset = {
            "images": [{"id": i + 1} for i in range(len(truth))],
            "annotations": annotations,
            "categories": [{"id": c} for c in categories],
        }
        gt.createIndex()
        evaluator = COCOeval(gt, gt.loadRes(results), iouType="bbox")
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
    return np.asarray(evaluator.stats)


def cell_maps(
    rng: np.random.Generator, side: int, spacing: int
) -> tuple[np.ndarray, np.ndarray, int]:
    """Discs on a jittered grid (truth) and a shifted, partly merged/dropped copy (prediction)."""
    truth = np.zeros((side, side), dtype=np.uint32)
    yy, xx = np.mgrid[-14:15, -14:15]
    cell_id = 0
    for r in range(spacing // 2, side - spacing // 2, spacing):
        for c in range(spacing // 2, side - spacing // 2, spacing):
            cell_id += 1
            radius = rng.uniform(8, 14)
            cy, cx = r + rng.integers(-4, 5), c + rng.integers(-4, 5)
            disc = (yy**2 + xx**2) <= radius**2
            window = truth[cy - 14 : cy + 15, cx - 14 : cx + 15]
            window[disc & (window == 0)] = cell_id
    pred = np.roll(truth, (1, 2), axis=(0, 1)).astype(np.int32)
    ids = np.arange(1, cell_id + 1)
    dropped = rng.choice(ids, cell_id // 20, replace=False)
    pred[np.isin(pred, dropped)] = 0
    merged = rng.choice(ids, cell_id // 20, replace=False)
    pred[np.isin(pred, merged)] = (pred[np.isin(pred, merged)] % 7) + 1
    return truth, pred, cell_id


def nuclei_case(
    rng: np.random.Generator, n_nuclei: int, classes: list[str]
) -> tuple[np.ndarray, list[str], np.ndarray, list[str], np.ndarray]:
    gt_xy = rng.uniform(0, 1024, (n_nuclei, 2))
    gt_cls = [str(c) for c in rng.choice(classes, n_nuclei)]
    keep = rng.random(n_nuclei) < 0.85
    pred_xy = np.vstack(
        [gt_xy[keep] + rng.normal(0, 5, (int(keep.sum()), 2)), rng.uniform(0, 1024, (30, 2))]
    )
    pred_cls = [
        c if rng.random() < 0.8 else str(rng.choice(classes)) for c in np.array(gt_cls)[keep]
    ]
    pred_cls += [str(c) for c in rng.choice(classes, 30)]
    scores = np.round(rng.random(pred_xy.shape[0]), 1)
    return gt_xy, gt_cls, pred_xy, pred_cls, scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller inputs")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    machine = platform.processor() or platform.machine()
    print(f"python {platform.python_version()}, numpy {np.__version__}, {machine}")

    # DENTEX scale: 141 images x ~30 boxes x 12 categories
    truth, detections = coco_case(rng, 141, 30, 12)
    n_boxes = sum(t.category_ids.size for t in truth)
    n_dets = sum(d.scores.size for d in detections)
    ours = measure(
        f"COCO AP native, 141 img, {n_boxes} GT, {n_dets} det, 12 cat",
        lambda: coco_box_stats(truth, detections),
    )
    reference = measure(
        "COCO AP pycocotools, same input",
        lambda: pycocotools_stats(truth, detections),
        trace_memory=False,
    )
    print(f"{'':<58} identical stats: {np.array_equal(ours.stats, reference)}")

    # NeurIPS-CellSeg: 2000 x 2000 with ~2000 cells (whole-image mode); image_scores is what
    # grading calls per image (rounded F1 at the five thresholds and the counts behind them)
    side = 1000 if args.quick else 2000
    truth_map, pred_map, n_cells = cell_maps(rng, side, 44)
    f1 = measure(
        f"CellSeg F1 x5 thresholds, {side}x{side}, {n_cells} cells",
        lambda: image_scores(pred_map, truth_map),
    )
    print(f"{'':<58} f1: {f1}")
    if not args.quick:
        big_truth, big_pred, big_cells = cell_maps(rng, 5000, 44)
        measure(
            f"CellSeg F1 tiled mode, 5000x5000, {big_cells} cells",
            lambda: image_scores(big_pred, big_truth),
        )

    # PUMA track 2: 41 tiles x ~300 nuclei, 10 classes
    classes = [f"class_{i}" for i in range(10)]
    cases = [nuclei_case(rng, int(rng.integers(250, 350)), classes) for _ in range(41)]

    def puma() -> float:
        counts = [nuclei_class_counts(*case) for case in cases]
        return puma_macro_f1(counts).f1

    value = measure("PUMA matching + macro F1, 41 tiles x ~300 nuclei", puma)
    print(f"{'':<58} macro f1: {value:.4f}")

    # USenhance: 300 pairs of 512 x 512 uint8
    n_pairs = 30 if args.quick else 300
    base = rng.integers(0, 256, (512, 512), dtype=np.uint8)
    noise = rng.normal(0, 20, (512, 512))
    pairs = [
        (base, np.clip(base + noise * (1 + i % 3), 0, 255).astype(np.uint8)) for i in range(n_pairs)
    ]
    for name, fn in (("PSNR", psnr), ("SSIM", ssim), ("LNCC", lncc)):
        measure(
            f"{name}, {n_pairs} pairs of 512x512 (peak: one pair)",
            lambda fn=fn: [fn(p, t) for t, p in pairs],
            traced_fn=lambda fn=fn: fn(pairs[0][1], pairs[0][0]),
        )

    # LDCT-IQA: 300 scores
    truth_scores = rng.integers(0, 21, 300) * 0.2
    measure(
        "LDCT-IQA PLCC+SROCC+KROCC, 300 scores",
        lambda: ldct_iqa_score(truth_scores + rng.normal(0, 0.5, 300), truth_scores),
    )

    usage = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"process max RSS: {usage:.0f} MiB")


if __name__ == "__main__":
    main()
