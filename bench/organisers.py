"""DENTEX, PUMA nuclei and ISLES'22: ReX-MLE against the organisers' computation, same inputs.

Not a test. For each row the organisers' computation and ReX-MLE's scoring get the same inputs;
every reported value must agree to 1e-12 (relative), and both are timed in turn (median and
range of ``--repeat`` rounds after a warm-up, as ``bench/panther.py``). Inputs are synthetic and
deterministic (seed 0).

* ``dentex``, whole test set: 140 panoramic X-rays of about 2000 x 1000 px with 28-32 tooth
  boxes each (4.2k boxes; quadrant 0-3, tooth 0-7, diagnosis 0-3), detections that jitter the
  boxes, mislabel some levels, add duplicates and false positives, scores rounded to 3
  decimals (ties). Official: pycocotools ``COCO`` / ``loadRes`` / ``COCOeval(gt, dt, "bbox")``
  with default parameters, ``evaluate(); accumulate(); summarize()`` once per level with
  ``category_id := category_id_k`` and the level's categories, ``stats[0, 1, 2, 8]`` and their
  means over the levels, as ``DentexChallenge.score`` in ibrahimethemhamamci/DENTEX
  (``DentexChallenge-AlgorithmPhases-Evaluation-Docker/evaluation.py``) runs it; its JSON round
  trip through ``/tmp`` is left out (the COCO objects are built from the same dictionaries).
  Ours: ``rexmle.challenges.dentex.metrics.dentex_scores``, what the grader's ``aggregate``
  calls, on the same per-image dictionaries.
* ``puma-track1-task2``, whole test set: 40 tiles of 1024 x 1024 px, 300-900 nuclei each
  (23.9k in all, clustered, at least 7 px apart, 3 classes), predictions jittered by
  N(0, 3 px), 8 % missed, 10 % relabelled, 10 % false positives, scores rounded to 2 decimals
  (ties). Official: written here from the definition of tueimage/PUMA-challenge-eval-track1
  ``eval_nuclei.py`` and ``evaluate.py main()``: per reference nucleus in file order, the not
  yet matched predictions of its class at ``np.linalg.norm`` distance < 15, the first after a
  stable sort by (-score, distance); the matched prediction leaves the pool as the official
  code removes it (the first of its class with an equal centroid; the inputs have no
  duplicated centroid, where ours, which removes by identity, would differ); per case and
  class F1 from ``np.unique`` counts; per class the sum over cases / number of cases;
  ``np.mean`` over the classes. The official code computes one ``np.linalg.norm`` per
  (reference, prediction) pair in Python; by default the distances of one reference to its
  candidates are one vectorised call here (same values, far faster than the organisers' loop);
  ``--puma-per-pair`` times the per-pair loop instead (about 25 s a call). Ours:
  ``nuclei_class_counts`` per case, ``nuclei_row`` rows and ``aggregate_nuclei``, what
  ``score_nuclei_case`` and the task's ``aggregate`` run once the JSON files are parsed; both
  start from parsed centroids, classes and scores.
* ``isles22``: ``score_case`` reads files, so each case is written once as NIfTI and both read
  the same files. Official: ``nibabel.load(...).get_fdata()`` and ``np.prod(zooms) / 1000``
  (as the organisers' notebook), then ezequieldlrosa/isles22 ``utils/eval_utils.py`` written
  here from its definitions (Dice with 1.0 for two empty masks; |ΣG·v − ΣP·v|;
  |#components(G) − #components(P)| and the lesion F1 from ``cc3d`` 26-connected components,
  one full-volume comparison per component, as there). nibabel's zooms are float32, so the
  official v is a float32 product (divided in float64 under the NumPy < 1.24 that the official
  ``np.bool`` needs); ours multiplies the zooms in float64, so for spacings whose float32
  product rounds (1.2 x 1.2 x 2.0 mm here) ``abs_volume_diff`` differs in the 8th digit and
  the row says so. Ours: ``rexmle.challenges.isles22.metrics.score_case``. Rows: one
  192 x 192 x 64 case with eight lesions (the prediction shifts, grows and misses some, adds
  false positives), and the whole mini test set (``prepare_task("isles22", mini=True)`` with
  the fixed fixture; each prediction is the gold mask shifted by one voxel plus a
  false-positive voxel pair), values averaged over the cases.

Run:  .venv/bin/python bench/organisers.py [--repeat N] [--puma-per-pair]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import os
import platform
import statistics
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import cc3d
import nibabel as nib
import numpy as np
from grade_3d import one_case
from panther import alternating_seconds, spread_ms
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

from rexmle.challenges.dentex.fixture import tooth_box
from rexmle.challenges.dentex.metrics import dentex_scores
from rexmle.challenges.isles22.metrics import score_case
from rexmle.challenges.puma.classes import track_classes
from rexmle.challenges.puma.metrics import aggregate_nuclei, nuclei_row
from rexmle.challenges.puma.submission import Nuclei
from rexmle.io import write_image
from rexmle.metrics.points import nuclei_class_counts
from rexmle.preparation import prepare_task
from rexmle.tasks.registry import get_task
from rexmle.tasks.rows import CaseRow

Values = dict[str, float]

# --------------------------------------------------------------------------------------- DENTEX

DENTEX_LEVELS = (("quadrant", "category_id_1", "categories_1", 4),
                 ("enumeration", "category_id_2", "categories_2", 8),
                 ("diagnosis", "category_id_3", "categories_3", 4))  # fmt: skip
DENTEX_STATS = (("ap", 0), ("ap50", 1), ("ap75", 2), ("ar", 8))


def dentex_inputs(
    n_images: int = 140, seed: int = 0
) -> tuple[list[dict[str, Any]], list[list[dict[str, Any]]], list[list[dict[str, Any]]]]:
    """(COCO images, per-image annotations, per-image detections), images in id order."""
    rng = np.random.default_rng(seed)
    images, truth, detections = [], [], []
    next_id = 1
    for image_id in range(1, n_images + 1):
        width, height = int(rng.integers(1900, 2101)), int(rng.integers(950, 1051))
        images.append({"id": image_id, "file_name": f"train_{image_id}.png",
                       "width": width, "height": height})  # fmt: skip
        teeth = rng.choice(32, size=int(rng.integers(28, 33)), replace=False)
        annotations = []
        for code in teeth:
            quadrant, tooth = divmod(int(code), 8)
            x, y, w, h = tooth_box(quadrant, tooth, height, width)
            w, h = w * rng.uniform(0.7, 1.3), h * rng.uniform(0.8, 1.2)
            box = [round(float(v), 1) for v in (x, y + rng.normal(0, 15), w, h)]
            annotations.append({
                "id": next_id, "image_id": image_id, "bbox": box, "area": box[2] * box[3],
                "iscrowd": 0, "category_id_1": quadrant, "category_id_2": tooth,
                "category_id_3": int(rng.choice(4, p=(0.15, 0.5, 0.15, 0.2))),
            })  # fmt: skip
            next_id += 1
        truth.append(annotations)
        detections.append(_dentex_detections(annotations, width, height, rng))
    return images, truth, detections


def _dentex_detections(
    annotations: list[dict[str, Any]], width: int, height: int, rng: np.random.Generator
) -> list[dict[str, Any]]:
    """Perturbed detections of one image, in a shuffled order."""
    found = []
    for a in annotations:
        if rng.uniform() < 0.08:
            continue
        for copy in range(1 + int(rng.uniform() < 0.2)):  # some boxes detected twice
            x, y, w, h = a["bbox"]
            labels = [a["category_id_1"], a["category_id_2"], a["category_id_3"]]
            if rng.uniform() < 0.03:
                labels[0] = int(rng.integers(0, 4))
            if rng.uniform() < 0.15:
                labels[1] = int(np.clip(labels[1] + rng.choice((-1, 1)), 0, 7))
            if rng.uniform() < 0.25:
                labels[2] = int(rng.integers(0, 4))
            found.append({
                "bbox": [x + rng.normal(0, 0.06 * w), y + rng.normal(0, 0.06 * h),
                         w * rng.normal(1, 0.06), h * rng.normal(1, 0.06)],
                "category_id_1": labels[0], "category_id_2": labels[1],
                "category_id_3": labels[2],
                "score": round(float(rng.beta(5, 2)) * (0.6 if copy else 1.0), 3),
            })  # fmt: skip
    for _ in range(3):  # false positives
        w, h = rng.uniform(60, 160), rng.uniform(200, 400)
        found.append({
            "bbox": [rng.uniform(0, width - w), rng.uniform(0, height - h), w, h],
            "category_id_1": int(rng.integers(0, 4)), "category_id_2": int(rng.integers(0, 8)),
            "category_id_3": int(rng.integers(0, 4)), "score": round(float(rng.beta(2, 5)), 3),
        })  # fmt: skip
    order = rng.permutation(len(found))
    return [found[i] for i in order]


def dentex_official(
    images: list[dict[str, Any]],
    truth: list[list[dict[str, Any]]],
    detections: list[list[dict[str, Any]]],
) -> Values:
    """COCO AP/AR with pycocotools per level as DENTEX's evaluation.py (see the module docstring)."""
    values: Values = {}
    for level, key, categories, n_categories in DENTEX_LEVELS:
        gt = COCO()
        gt.dataset = {
            "images": [dict(image) for image in images],
            "annotations": [{**a, "category_id": a[key]} for image in truth for a in image],
            "categories": [{"id": i, "name": str(i + 1), "supercategory": categories}
                           for i in range(n_categories)],
        }  # fmt: skip
        results = [
            {"image_id": image["id"], "category_id": d[key], "bbox": list(d["bbox"]),
             "score": d["score"]}
            for image, image_detections in zip(images, detections, strict=True)
            for d in image_detections
        ]  # fmt: skip
        with contextlib.redirect_stdout(io.StringIO()):
            gt.createIndex()
            evaluation = COCOeval(gt, gt.loadRes(results), "bbox")
            evaluation.evaluate()
            evaluation.accumulate()
            evaluation.summarize()
        for stat, index in DENTEX_STATS:
            values[f"{stat}_{level}"] = float(evaluation.stats[index])
    for stat, _ in DENTEX_STATS:
        values[f"{stat}_mean"] = sum(values[f"{stat}_{lv[0]}"] for lv in DENTEX_LEVELS) / 3
    return values


# ----------------------------------------------------------------------------------------- PUMA

PUMA_CLASSES = ("tumor", "TILs", "other")
PUMA_RADIUS = 15


def _spread_points(n: int, rng: np.random.Generator, min_gap: float = 7.0) -> np.ndarray:
    """``n`` points in a 1024 x 1024 tile: clusters plus background, at least ``min_gap`` apart."""
    centres = rng.uniform(100, 924, size=(int(rng.integers(3, 7)), 2))
    points: list[np.ndarray] = []
    while len(points) < n:
        if rng.uniform() < 0.7:
            p = centres[rng.integers(len(centres))] + rng.normal(0, 90, size=2)
        else:
            p = rng.uniform(0, 1024, size=2)
        if not (0 <= p[0] < 1024 and 0 <= p[1] < 1024):
            continue
        if points and np.min(np.hypot(*(np.asarray(points) - p).T)) < min_gap:
            continue
        points.append(p)
    return np.asarray(points)


def puma_inputs(
    n_tiles: int = 40, n_nuclei: int = 23_900, seed: int = 0
) -> list[tuple[Nuclei, Nuclei]]:
    """(reference, prediction) nuclei per tile; tile counts drawn in 300-900, scaled to the total."""
    rng = np.random.default_rng(seed)
    drawn = rng.integers(300, 901, size=n_tiles)
    counts = np.round(drawn * (n_nuclei / drawn.sum())).astype(int)
    cases = []
    for count in counts:
        xy = _spread_points(int(count), rng)
        classes = [PUMA_CLASSES[i] for i in rng.choice(3, size=len(xy), p=(0.55, 0.25, 0.2))]
        truth = Nuclei(xy=xy, classes=classes, scores=np.ones(len(xy)))
        kept = np.flatnonzero(rng.uniform(size=len(xy)) >= 0.08)
        pred_xy = xy[kept] + rng.normal(0, 3, size=(len(kept), 2))
        pred_classes = [
            PUMA_CLASSES[int(rng.integers(3))] if rng.uniform() < 0.1 else classes[i] for i in kept
        ]
        n_false = len(xy) // 10
        pred_xy = np.vstack([pred_xy, rng.uniform(0, 1024, size=(n_false, 2))])
        pred_classes += [PUMA_CLASSES[i] for i in rng.choice(3, size=n_false)]
        order = rng.permutation(len(pred_xy))
        pred = Nuclei(
            xy=pred_xy[order],
            classes=[pred_classes[i] for i in order],
            scores=np.round(rng.beta(4, 2, size=len(order)), 2),
        )
        if len(np.unique(pred.xy, axis=0)) != len(pred.xy):
            raise RuntimeError("duplicated predicted centroids: the official removal differs")
        cases.append((truth, pred))
    return cases


def features(nuclei: Nuclei) -> list[dict[str, Any]]:
    """The official per-nucleus records: category, centroid (list), score."""
    return [
        {"category": c, "centroid": xy.tolist(), "score": float(s)}
        for c, xy, s in zip(nuclei.classes, nuclei.xy, nuclei.scores, strict=True)
    ]


def _matched_categories_per_pair(gt: list[dict[str, Any]], pred: list[dict[str, Any]]) -> list[str]:
    """Official matching, one ``np.linalg.norm`` per (reference, prediction) pair."""
    pools: dict[str, list[dict[str, Any]]] = {}
    for p in pred:
        pools.setdefault(p["category"], []).append(p)
    matched = []
    for g in gt:
        pool = pools.get(g["category"], [])
        candidates = []
        for p in pool:
            distance = np.linalg.norm(np.array(g["centroid"]) - np.array(p["centroid"]))
            if distance < PUMA_RADIUS:
                candidates.append((-p["score"], distance, p))
        if not candidates:
            continue
        candidates.sort(key=lambda c: (c[0], c[1]))
        best = candidates[0][2]
        matched.append(best["category"])
        for i, p in enumerate(pool):
            if np.array_equal(p["centroid"], best["centroid"]):
                del pool[i]
                break
    return matched


def _matched_categories_vectorised(
    gt: list[dict[str, Any]], pred: list[dict[str, Any]]
) -> list[str]:
    """Official matching with one vectorised distance call per reference nucleus."""
    pools: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for name in {p["category"] for p in pred}:
        members = [p for p in pred if p["category"] == name]
        xy = np.array([p["centroid"] for p in members])
        score = np.array([p["score"] for p in members])
        pools[name] = (xy, score, np.ones(len(members), dtype=bool))
    matched = []
    for g in gt:
        if g["category"] not in pools:
            continue
        xy, score, alive = pools[g["category"]]
        distance = np.linalg.norm(xy - np.array(g["centroid"]), axis=1)
        candidates = np.flatnonzero(alive & (distance < PUMA_RADIUS))
        if candidates.size == 0:
            continue
        # stable sort by (-score, distance) over the pool in its order, as list.sort
        best = candidates[np.lexsort((distance[candidates], -score[candidates]))[0]]
        matched.append(g["category"])
        equal = np.flatnonzero(alive & np.all(xy == xy[best], axis=1))
        alive[equal[0]] = False
    return matched


def puma_official(
    cases: Sequence[tuple[list[dict[str, Any]], list[dict[str, Any]]]], *, per_pair: bool
) -> Values:
    """PUMA macro F1 of the official definition (see the module docstring)."""
    match = _matched_categories_per_pair if per_pair else _matched_categories_vectorised
    sums: dict[str, float] = {}
    for gt, pred in cases:
        tp = dict(zip(*np.unique(match(gt, pred), return_counts=True), strict=True))
        n_gt = dict(zip(*np.unique([f["category"] for f in gt], return_counts=True), strict=True))
        n_pred = dict(
            zip(*np.unique([f["category"] for f in pred], return_counts=True), strict=True)
        )
        for name in np.unique(list(n_gt) + list(n_pred)):
            true_pos = tp.get(name, 0)
            false_pos, false_neg = n_pred.get(name, 0) - true_pos, n_gt.get(name, 0) - true_pos
            precision = true_pos / (true_pos + false_pos) if true_pos + false_pos > 0 else 0
            recall = true_pos / (true_pos + false_neg) if true_pos + false_neg > 0 else 0
            both = precision + recall
            f1 = 2 * precision * recall / both if both > 0 else 0
            sums[str(name)] = sums.get(str(name), 0) + f1
    per_class = {name: total / len(cases) for name, total in sums.items()}
    return {"f1": float(np.mean(list(per_class.values()))),
            **{f"f1_{name}": float(v) for name, v in per_class.items()}}  # fmt: skip


def puma_ours(cases: Sequence[tuple[Nuclei, Nuclei]], task: Any) -> Values:
    """ReX-MLE: per-case counts and rows, then the task's aggregate."""
    classes = track_classes(task.params)
    rows = []
    for i, (truth, pred) in enumerate(cases):
        counts = nuclei_class_counts(truth.xy, truth.classes, pred.xy, pred.classes, pred.scores)
        rows.append(CaseRow(case_id=str(i), values=nuclei_row(counts, classes)))
    return aggregate_nuclei(rows, task)


# -------------------------------------------------------------------------------------- ISLES'22

ISLES_SPACING = (1.2, 1.2, 2.0)


def _ball(shape: tuple[int, ...], centre: Sequence[float], radius: float) -> np.ndarray:
    x, y, z = np.ogrid[: shape[0], : shape[1], : shape[2]]
    cx, cy, cz = centre
    return (x - cx) ** 2 + (y - cy) ** 2 + (2 * (z - cz)) ** 2 <= radius**2


def isles_case(shape: tuple[int, int, int] = (192, 192, 64)) -> tuple[np.ndarray, np.ndarray]:
    """(truth, prediction): eight lesions; the prediction moves, grows and misses some, adds FPs."""
    rng = np.random.default_rng(0)
    truth = np.zeros(shape, dtype=bool)
    pred = np.zeros(shape, dtype=bool)
    for k in range(8):
        centre = rng.uniform((30, 30, 10), (162, 162, 54))
        radius = 22.0 if k == 0 else float(rng.uniform(2, 8))
        truth |= _ball(shape, centre, radius)
        if k % 4 != 3:  # two lesions missed
            pred |= _ball(shape, centre + rng.normal(0, 1.5, 3), radius * rng.uniform(0.8, 1.2))
    for _ in range(3):  # false positives
        pred |= _ball(shape, rng.uniform((20, 20, 5), (172, 172, 59)), float(rng.uniform(1, 3)))
    return truth, pred


def _clusters(mask: np.ndarray) -> int:
    """Number of 26-connected components (the official ``compute_number_of_clusters``)."""
    return int(cc3d.connected_components(mask, connectivity=26).max())


def _official_lesion_f1(truth: np.ndarray, prediction: np.ndarray) -> float:
    """Lesion F1 with one full-volume comparison per component, as the official loop."""
    truth, prediction = np.asarray(truth).astype(bool), np.asarray(prediction).astype(bool)
    intersection = np.logical_and(truth, prediction)
    tp = fp = fn = 0
    labels, n = cc3d.connected_components(truth, connectivity=26, return_N=True)
    for k in range(1, n + 1):
        if np.logical_and(labels == k, intersection).any():
            tp += 1
        else:
            fn += 1
    labels, n = cc3d.connected_components(prediction, connectivity=26, return_N=True)
    fp = sum(1 for k in range(1, n + 1) if not np.logical_and(labels == k, truth).any())
    return 1.0 if tp + fp + fn == 0 else tp / (tp + (fp + fn) / 2)


def isles_official_case(gold: Path, pred: Path) -> Values:
    """The four ISLES'22 values of one case from its files (see the module docstring).

    Each official function converts its inputs with ``astype(bool)`` itself, and the lesion
    count and the lesion F1 label the masks separately; so here. The voxel volume is the
    product of nibabel's float32 zooms (a float32) divided by 1000 in float64, as NumPy < 1.24
    (which the official ``np.bool`` and ``np.float`` need) evaluates ``np.prod(zooms) / 1000``.
    """
    gold_image = nib.load(gold)
    truth = gold_image.get_fdata()
    prediction = nib.load(pred).get_fdata()
    voxel_size = float(np.prod(gold_image.header.get_zooms()[:3])) / 1000
    g, p = np.asarray(truth).astype(bool), np.asarray(prediction).astype(bool)
    total = g.sum() + p.sum()
    dice = 1.0 if total == 0 else 2.0 * np.logical_and(g, p).sum() / total
    g, p = np.asarray(truth).astype(bool), np.asarray(prediction).astype(bool)
    volume_difference = np.abs(np.sum(g) * voxel_size - np.sum(p) * voxel_size)
    g, p = np.asarray(truth).astype(bool), np.asarray(prediction).astype(bool)
    return {
        "dice": float(dice),
        "lesion_f1": _official_lesion_f1(truth, prediction),
        "lesion_count_diff": float(abs(_clusters(g) - _clusters(p))),
        "abs_volume_diff": float(volume_difference),
    }


def case_mean(rows: list[Values]) -> Values:
    """Per-key arithmetic mean over the cases."""
    return {key: statistics.fmean(row[key] for row in rows) for key in rows[0]}


def isles_mini_pairs(data_dir: Path, work: Path) -> list[tuple[Path, Path]]:
    """(gold, prediction) files of the mini test set: gold rolled one voxel plus a FP pair."""
    dirs, _ = prepare_task("isles22", data_dir=data_dir, mini=True, fixture_secret=None)
    pairs = []
    for gold in sorted((dirs.gold / "predictions").glob("*.nii.gz")):
        image = nib.load(gold)
        mask = np.asarray(image.get_fdata()) > 0
        pred = np.roll(mask, 1, axis=0)
        pred[0, 0, :2] = True
        path = work / gold.name
        nib.save(nib.Nifti1Image(pred.astype(np.uint8), image.affine, image.header), path)
        pairs.append((gold, path))
    return pairs


# ----------------------------------------------------------------------------------------- table


def agree(official: Values, ours: Values) -> tuple[bool, str]:
    """Whether every official key agrees with ours to 1e-12 (relative); the differences if not."""
    differ = []
    for key, value in official.items():
        mine = float(ours[key]) if key in ours else math.nan
        if not math.isclose(mine, value, rel_tol=1e-12):
            relative = abs(mine - value) / abs(value) if value else math.inf
            differ.append(f"{key}: official {value!r}, ours {mine!r}, rel {relative:.1e}")
    if differ:
        return False, "; ".join(differ)
    return True, f"{len(official)} values equal"


def row(name: str, official: Callable[[], Values], ours: Callable[[], Values], repeat: int) -> None:
    """Check the values, time both in turn, print one table row."""
    same, note = agree(official(), ours())
    official_s, ours_s = alternating_seconds(official, ours, repeat)
    ratio = statistics.median(official_s) / statistics.median(ours_s)
    print(
        f"{name:48s} {spread_ms(official_s):>25s} {spread_ms(ours_s):>25s} {ratio:6.1f}x  "
        f"{'equal' if same else 'DIFFER'} ({note})",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--puma-per-pair", action="store_true",
                        help="time the official PUMA matching with one norm per pair (slow)")  # fmt: skip
    args = parser.parse_args()
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"python {platform.python_version()}, load {os.getloadavg()[0]:.2f}"
    )
    print(f"{'row':48s} {'official ms':>25s} {'ReX-MLE ms':>25s} {'ratio':>7s}  values")

    images, truth, detections = dentex_inputs()
    n_boxes, n_found = sum(map(len, truth)), sum(map(len, detections))
    row(
        f"dentex {len(images)} images, {n_boxes} GT, {n_found} det",
        lambda: dentex_official(images, truth, detections),
        lambda: dentex_scores(truth, detections),
        args.repeat,
    )

    cases = puma_inputs()
    records = [(features(t), features(p)) for t, p in cases]
    task = get_task("puma-track1-task2")
    kind = "per pair" if args.puma_per_pair else "vectorised"
    row(
        f"puma-t1t2 {len(cases)} tiles, {sum(len(t.classes) for t, _ in cases)} nuclei ({kind})",
        lambda: puma_official(records, per_pair=args.puma_per_pair),
        lambda: puma_ours(cases, task),
        args.repeat,
    )

    with tempfile.TemporaryDirectory(prefix="rexmle-organisers-") as tmp:
        folder = Path(tmp)
        gold, pred = folder / "gold.nii.gz", folder / "pred.nii.gz"
        case_truth, case_pred = isles_case()
        write_image(gold, case_truth.astype(np.uint8), spacing_mm=ISLES_SPACING)
        write_image(pred, case_pred.astype(np.uint8), spacing_mm=ISLES_SPACING)
        row(
            "isles22 one case 192x192x64 (files)",
            lambda: isles_official_case(gold, pred),
            lambda: dict(score_case(one_case(gold, pred, {})).values),
            args.repeat,
        )
        (folder / "work").mkdir()
        pairs = isles_mini_pairs(folder / "data", folder / "work")
        row(
            f"isles22 mini test set, {len(pairs)} cases 16x16x8 (files)",
            lambda: case_mean([isles_official_case(g, p) for g, p in pairs]),
            lambda: case_mean([dict(score_case(one_case(g, p, {})).values) for g, p in pairs]),
            args.repeat,
        )


if __name__ == "__main__":
    main()
