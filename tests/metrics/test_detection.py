"""COCO box AP/AR: hand-computed cases and exact agreement with pycocotools COCOeval."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rexmle.metrics.detection import (
    COCO_IOU_THRESHOLDS,
    ScoredBoxes,
    TruthBoxes,
    box_iou_matrix,
    coco_box_stats,
)

pycocotools_coco = pytest.importorskip("pycocotools.coco")
pycocotools_eval = pytest.importorskip("pycocotools.cocoeval")


def _truth(boxes, cats, areas=None, crowd=None) -> TruthBoxes:
    return TruthBoxes(np.asarray(boxes, float).reshape(-1, 4), np.asarray(cats, int), areas, crowd)


def _dets(boxes, scores, cats) -> ScoredBoxes:
    return ScoredBoxes(
        np.asarray(boxes, float).reshape(-1, 4), np.asarray(scores, float), np.asarray(cats, int)
    )


def _pycocotools_stats(truth: list[TruthBoxes], dets: list[ScoredBoxes]) -> np.ndarray:
    """Run COCOeval on the same images (image ids 1..n in list order, annotation ids from 1)."""
    images = [{"id": i + 1, "width": 4096, "height": 4096} for i in range(len(truth))]
    categories = sorted({int(c) for t in truth for c in t.category_ids})
    annotations = []
    for i, t in enumerate(truth):
        for box, cat, area, crowd in zip(
            t.boxes_xywh, t.category_ids, t.areas, t.is_crowd, strict=True
        ):
            annotations.append(
                {
                    "id": len(annotations) + 1,
                    "image_id": i + 1,
                    "category_id": int(cat),
                    "bbox": [float(v) for v in box],
                    "area": float(area),
                    "iscrowd": int(crowd),
                }
            )
    results = [
        {
            "image_id": i + 1,
            "category_id": int(cat),
            "bbox": [float(v) for v in box],
            "score": float(score),
        }
        for i, d in enumerate(dets)
        for box, score, cat in zip(d.boxes_xywh, d.scores, d.category_ids, strict=True)
    ]
    with contextlib.redirect_stdout(io.StringIO()):
        gt = pycocotools_coco.COCO()
        gt.dataset = {
            "images": images,
            "annotations": annotations,
            "categories": [{"id": c, "name": str(c)} for c in categories],
        }
        gt.createIndex()
        dt = gt.loadRes(results)
        evaluator = pycocotools_eval.COCOeval(gt, dt, iouType="bbox")
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
    return np.asarray(evaluator.stats)


def _random_case(rng: np.random.Generator) -> tuple[list[TruthBoxes], list[ScoredBoxes]]:
    """Many images, 1-5 categories (some without GT), crowd boxes, tied scores, empty images."""
    n_images = int(rng.integers(1, 15))
    n_cats = int(rng.integers(1, 6))
    truth, dets = [], []
    for _ in range(n_images):
        m = int(rng.integers(0, 9))
        xy = rng.integers(0, 300, (m, 2)).astype(float)
        wh = rng.integers(2, 160, (m, 2)).astype(float)
        boxes = np.hstack([xy, wh])
        cats = rng.integers(0, n_cats, m)
        crowd = rng.random(m) < 0.08
        areas = boxes[:, 2] * boxes[:, 3] * rng.choice([1.0, 1.0, 0.4, 2.5], m)
        truth.append(_truth(boxes, cats, areas, crowd))
        n = int(rng.integers(0, 14)) if rng.random() > 0.15 else 0
        if m:
            base = boxes[rng.integers(0, m, n)]
            base_cats = cats[rng.integers(0, m, n)]
        else:
            base = np.hstack([rng.integers(0, 300, (n, 2)), rng.integers(2, 160, (n, 2))])
            base_cats = rng.integers(0, n_cats, n)
        moved = base + rng.normal(0, 10, (n, 4)) * (rng.random((n, 1)) < 0.7)
        moved[:, 2:] = np.abs(moved[:, 2:]) + 1
        moved = np.round(moved, 1)
        # categories: mostly plausible, some absent from GT (n_cats, n_cats + 1)
        det_cats = np.where(rng.random(n) < 0.8, base_cats, rng.integers(0, n_cats + 2, n))
        tied = rng.random() < 0.5
        scores = rng.choice([0.2, 0.5, 0.9], n) if tied else np.round(rng.random(n), 3)
        dets.append(_dets(moved, scores, det_cats))
    return truth, dets


# ---------------------------------------------------------------- hand-computed cases


def test_perfect_single_detection_scores_one_and_small_area_only():
    truth = [_truth([[0, 0, 10, 10]], [1])]
    dets = [_dets([[0, 0, 10, 10]], [0.9], [1])]
    # area 100 < 32² -> "small"; medium/large have no GT -> -1. Precision is TP / (TP + FP + eps)
    # with eps = np.spacing(1) as in COCO, so a perfect AP is 1 / (1 + 2.2e-16), not exactly 1.
    expected = [1, 1, 1, 1, -1, -1, 1, 1, 1, 1, -1, -1]
    assert coco_box_stats(truth, dets).stats == pytest.approx(expected, abs=1e-15)


def test_iou_072_matches_the_five_lowest_thresholds():
    truth = [_truth([[0, 0, 10, 10]], [3])]
    dets = [_dets([[0, 0, 10, 7.2]], [0.8], [3])]
    # IoU = 72 / 100 = 0.72 >= 0.50, 0.55, 0.60, 0.65, 0.70 and < 0.75 ... 0.95
    # AP per threshold is 1 or 0 -> AP = 5/10; AP50 = 1; AP75 = 0; AR@100 = 5/10
    stats = coco_box_stats(truth, dets)
    assert stats.ap == pytest.approx(0.5, abs=1e-15)
    assert stats.ap50 == pytest.approx(1.0, abs=1e-15)
    assert stats.ap75 == 0.0
    assert stats.ar100 == pytest.approx(0.5, abs=1e-15)


@pytest.mark.parametrize("correct_first", [True, False])
def test_tied_scores_are_ranked_in_submission_order(correct_first):
    truth = [_truth([[0, 0, 20, 20]], [0]), _truth([[0, 0, 20, 20]], [0])]
    correct, wrong = [0, 0, 20, 20], [100, 100, 20, 20]
    first = [correct, wrong] if correct_first else [wrong, correct]
    dets = [_dets(first, [0.5, 0.5], [0, 0]), _dets([correct], [0.5], [0])]
    # correct first: TP FP TP -> recall .5 .5 1, precision 1 .5 2/3 -> monotone 1, 2/3, 2/3;
    #   recall points 0..0.50 (51) read 1, 0.51..1 (50) read 2/3 -> AP = (51 + 100/3) / 101
    # wrong first: FP TP TP -> precision 0 .5 2/3 -> monotone 2/3 everywhere -> AP = 2/3
    expected = (51 + 100 / 3) / 101 if correct_first else 2 / 3
    stats = coco_box_stats(truth, dets)
    assert stats.ap == pytest.approx(expected, abs=1e-12)
    np.testing.assert_array_equal(stats.stats, _pycocotools_stats(truth, dets))


def test_empty_predictions_score_zero_where_gt_exists():
    truth = [_truth([[0, 0, 10, 10], [50, 50, 10, 10]], [0, 1]), _truth([], [])]
    dets = [_dets([], [], []), _dets([], [], [])]
    expected = [0, 0, 0, 0, -1, -1, 0, 0, 0, 0, -1, -1]
    assert list(coco_box_stats(truth, dets).stats) == expected


def test_detections_of_categories_without_gt_are_ignored():
    truth = [_truth([[0, 0, 10, 10]], [0])]
    base = coco_box_stats(truth, [_dets([[0, 0, 10, 10]], [0.4], [0])])
    with_stray = coco_box_stats(
        truth, [_dets([[0, 0, 10, 10], [0, 0, 10, 10]], [0.4, 0.99], [0, 7])]
    )
    assert with_stray.stats == base.stats
    assert base.ap == pytest.approx(1.0, abs=1e-15)


def test_no_gt_at_all_raises_or_gives_minus_one():
    truth = [_truth([], [])]
    dets = [_dets([[0, 0, 5, 5]], [0.3], [0])]
    with pytest.raises(ValueError, match="no reference box"):
        coco_box_stats(truth, dets)
    assert coco_box_stats(truth, dets, no_truth="minus_one").stats == (-1.0,) * 12


def test_only_the_100_best_detections_per_image_and_category_count():
    truth = [_truth([[0, 0, 10, 10]], [0])]
    # 100 wrong boxes with higher scores, the correct one 101st -> never seen -> AP 0
    wrong = [[200 + 20 * i, 0, 10, 10] for i in range(100)]
    dets = [_dets([*wrong, [0, 0, 10, 10]], [0.9] * 100 + [0.1], [0] * 101)]
    stats = coco_box_stats(truth, dets)
    assert stats.ap == 0.0
    np.testing.assert_array_equal(stats.stats, _pycocotools_stats(truth, dets))


def test_crowd_gt_absorbs_detections_without_counting():
    # one regular GT and one crowd GT; a detection on the crowd box is neither TP nor FP
    truth = [_truth([[0, 0, 10, 10], [100, 100, 50, 50]], [0, 0], crowd=[False, True])]
    dets = [_dets([[100, 100, 50, 50], [0, 0, 10, 10]], [0.9, 0.8], [0, 0])]
    stats = coco_box_stats(truth, dets)
    assert stats.ap == pytest.approx(1.0, abs=1e-15)
    np.testing.assert_array_equal(stats.stats, _pycocotools_stats(truth, dets))


def test_box_iou_matrix_hand_values():
    d = np.array([[0, 0, 10, 10], [5, 0, 10, 10], [20, 20, 1, 1]], float)
    g = np.array([[0, 0, 10, 10]], float)
    # second: overlap 5 x 10 = 50, union 100 + 100 - 50 = 150 -> 1/3; third: disjoint -> 0
    np.testing.assert_allclose(box_iou_matrix(d, g)[:, 0], [1.0, 1 / 3, 0.0], rtol=0, atol=1e-15)
    # crowd: denominator is the detection area -> 50 / 100
    assert box_iou_matrix(d[1:2], g, np.array([True]))[0, 0] == 0.5


def test_iou_thresholds_are_cocos():
    np.testing.assert_array_equal(
        COCO_IOU_THRESHOLDS, pycocotools_eval.Params(iouType="bbox").iouThrs
    )


def test_mismatched_lengths_and_bad_boxes_raise():
    with pytest.raises(ValueError, match="images"):
        coco_box_stats([_truth([[0, 0, 1, 1]], [0])], [])
    with pytest.raises(ValueError, match="negative"):
        _truth([[0, 0, -1, 1]], [0])
    with pytest.raises(ValueError, match="NaN"):
        _dets([[0, 0, 1, 1]], [float("nan")], [0])
    with pytest.raises(TypeError, match="integers"):
        ScoredBoxes(np.array([[0.0, 0, 1, 1]]), np.array([0.5]), np.array([0.5]))


# ---------------------------------------------------------------- agreement with pycocotools


@pytest.mark.parametrize("seed", range(40))
def test_equals_pycocotools_on_random_cases(seed):
    rng = np.random.default_rng(seed)
    truth, dets = _random_case(rng)
    while sum(t.category_ids.size for t in truth) == 0 or sum(d.scores.size for d in dets) == 0:
        truth, dets = _random_case(rng)  # pycocotools cannot run these two cases
    np.testing.assert_array_equal(
        coco_box_stats(truth, dets).stats, _pycocotools_stats(truth, dets)
    )


def test_equals_pycocotools_on_a_dentex_sized_case():
    rng = np.random.default_rng(2023)
    truth, dets = [], []
    for _ in range(60):
        m = int(rng.integers(5, 40))
        boxes = np.hstack([rng.uniform(0, 2500, (m, 2)), rng.uniform(20, 300, (m, 2))])
        cats = rng.integers(0, 8, m)
        truth.append(_truth(boxes, cats))
        keep = rng.random(m) < 0.8
        moved = boxes[keep] + rng.normal(0, 12, (int(keep.sum()), 4))
        moved[:, 2:] = np.abs(moved[:, 2:]) + 1
        extra = np.hstack([rng.uniform(0, 2500, (5, 2)), rng.uniform(20, 300, (5, 2))])
        det_cats = np.concatenate([cats[keep], rng.integers(0, 9, 5)])
        dets.append(_dets(np.vstack([moved, extra]), rng.random(moved.shape[0] + 5), det_cats))
    np.testing.assert_array_equal(
        coco_box_stats(truth, dets).stats, _pycocotools_stats(truth, dets)
    )


# ---------------------------------------------------------------- properties

_box = st.tuples(
    st.integers(0, 100), st.integers(0, 100), st.integers(1, 60), st.integers(1, 60)
).map(list)
_image = st.lists(st.tuples(_box, st.integers(0, 2)), min_size=0, max_size=6)


@settings(max_examples=25, deadline=None)
@given(st.lists(_image, min_size=1, max_size=4).filter(lambda imgs: any(imgs)))
def test_gt_submitted_as_detections_scores_one(images):
    truth = [_truth([b for b, _ in img], [c for _, c in img]) for img in images]
    dets = [_dets([b for b, _ in img], [1.0] * len(img), [c for _, c in img]) for img in images]
    stats = coco_box_stats(truth, dets)
    assert stats.ap == pytest.approx(1.0, abs=1e-15)
    assert stats.ap50 == pytest.approx(1.0, abs=1e-15)
    assert stats.ar100 == 1.0


@settings(max_examples=25, deadline=None)
@given(
    st.lists(_image, min_size=1, max_size=4).filter(lambda imgs: any(imgs)),
    st.lists(_image, min_size=4, max_size=4),
    st.randoms(use_true_random=False),
)
def test_bounds_and_invariance_to_detection_order_with_distinct_scores(gt_images, det_images, rnd):
    truth = [_truth([b for b, _ in img], [c for _, c in img]) for img in gt_images]
    det_images = det_images[: len(truth)]
    counter = iter(range(1, 10_000))
    dets, shuffled = [], []
    for img in det_images:
        rows = [(b, next(counter) / 10_000, c) for b, c in img]
        dets.append(_dets([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]))
        rnd.shuffle(rows)
        shuffled.append(_dets([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]))
    stats = coco_box_stats(truth, dets)
    for value in stats.stats:
        assert value == -1.0 or 0.0 <= value <= 1.0
    assert coco_box_stats(truth, shuffled).stats == stats.stats
