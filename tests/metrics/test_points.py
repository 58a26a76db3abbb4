"""PUMA nucleus matching and macro F1: hand cases and agreement with the official algorithm."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rexmle.metrics.points import (
    ClassCounts,
    match_nuclei,
    nuclei_class_counts,
    polygon_centroid,
    puma_macro_f1,
)

# ---------------------------------------------------------------- official algorithm, re-typed
# Transcription of tueimage/PUMA-challenge-eval-track2 (@cb847d1) eval_nuclei.py
# (calculate_centroid_distance, calculate_classification_metrics) and evaluate.py main().


def _official_case(gt, pred):
    """gt: list of (category, centroid); pred: list of (category, centroid, score)."""
    structure: dict[str, list] = {}
    for category, centroid, score in pred:
        structure.setdefault(category, []).append({"centroid": centroid, "score": score})
    tp_categories = []
    for category, centroid in gt:
        eligible = []
        for candidate in structure.get(category, []):
            distance = np.linalg.norm(np.array(centroid) - np.array(candidate["centroid"]))
            if distance < 15:
                eligible.append((candidate, distance))
        eligible.sort(key=lambda x: (-x[0]["score"], x[1]))
        if eligible:
            best = eligible[0][0]
            tp_categories.append(category)
            for i, candidate in enumerate(structure[category]):
                if np.array_equal(candidate["centroid"], best["centroid"]):
                    del structure[category][i]
                    break
    gt_dict = dict(zip(*np.unique([c for c, _ in gt], return_counts=True), strict=True))
    pred_dict = dict(zip(*np.unique([c for c, _, _ in pred], return_counts=True), strict=True))
    tp_dict = dict(zip(*np.unique(tp_categories, return_counts=True), strict=True))
    f1 = {}
    for category in np.unique(list(gt_dict.keys()) + list(pred_dict.keys())):
        tp = tp_dict.get(category, 0)
        fp = pred_dict.get(category, 0) - tp
        fn = gt_dict.get(category, 0) - tp
        precision = tp / (tp + fp) if tp + fp > 0 else 0
        recall = tp / (tp + fn) if tp + fn > 0 else 0
        f1[str(category)] = (
            2 * precision * recall / (precision + recall) if precision + recall > 0 else 0
        )
    return f1


def _official_aggregate(case_f1s):
    sums: dict[str, float] = {}
    for case in case_f1s:
        for name, value in case.items():
            sums[name] = sums.get(name, 0) + value
    per_class = {name: total / len(case_f1s) for name, total in sums.items()}
    return float(np.mean(list(per_class.values()))), per_class


def _random_case(rng, classes):
    n_gt = int(rng.integers(0, 40))
    gt_xy = rng.uniform(0, 120, (n_gt, 2))
    gt_cls = [str(c) for c in rng.choice(classes, n_gt)]
    keep = rng.random(n_gt) < 0.7
    pred_xy = gt_xy[keep] + rng.normal(0, 7, (int(keep.sum()), 2))
    pred_cls = [
        c if rng.random() < 0.8 else str(rng.choice(classes)) for c in np.array(gt_cls)[keep]
    ]
    n_extra = int(rng.integers(0, 8))
    pred_xy = np.vstack([pred_xy, rng.uniform(0, 120, (n_extra, 2))])
    pred_cls = pred_cls + [str(c) for c in rng.choice(classes, n_extra)]
    scores = rng.choice([0.5, 1.0, 0.8], pred_xy.shape[0])  # many ties
    return gt_xy, gt_cls, pred_xy, pred_cls, scores


# ---------------------------------------------------------------- hand-computed cases


def test_radius_is_strict():
    truth = [[0.0, 0.0]]
    assert match_nuclei(truth, ["a"], [[14.9, 0.0]], ["a"]).tolist() == [0]
    assert match_nuclei(truth, ["a"], [[15.0, 0.0]], ["a"]).tolist() == [-1]
    assert match_nuclei(truth, ["a"], [[9.0, 12.0]], ["a"]).tolist() == [-1]  # 3-4-5: 15.0


def test_class_must_agree():
    counts = nuclei_class_counts([[0, 0]], ["tumor"], [[1, 1]], ["TILs"])
    assert counts == {
        "TILs": ClassCounts(true_positives=0, false_positives=1, false_negatives=0),
        "tumor": ClassCounts(true_positives=0, false_positives=0, false_negatives=1),
    }


def test_higher_score_wins_over_smaller_distance_then_distance_then_order():
    truth = [[0.0, 0.0]]
    # score 0.9 at distance 10 beats score 0.5 at distance 1
    assert match_nuclei(truth, ["a"], [[1, 0], [10, 0]], ["a", "a"], [0.5, 0.9]).tolist() == [1]
    # equal scores: the closer one
    assert match_nuclei(truth, ["a"], [[10, 0], [1, 0]], ["a", "a"], [0.7, 0.7]).tolist() == [1]
    # equal scores and distances: the earlier one
    assert match_nuclei(truth, ["a"], [[0, 3], [3, 0]], ["a", "a"], [0.7, 0.7]).tolist() == [0]
    # no scores: all 1.0
    assert match_nuclei(truth, ["a"], [[10, 0], [1, 0]], ["a", "a"]).tolist() == [1]


def test_reference_order_is_greedy():
    # one prediction at x=6 within reach of both references; the first reference takes it even
    # though the second is closer (distance 4 vs 6).
    matched = match_nuclei([[0, 0], [10, 0]], ["a", "a"], [[6, 0]], ["a"])
    assert matched.tolist() == [0, -1]


def test_macro_f1_divides_by_all_cases():
    # case 1: class a: GT (0,0); preds (1,0) a, (50,50) a, (80,80) b
    #   a: TP 1, FP 1, FN 0 -> P 1/2, R 1 -> F1 2/3;  b: TP 0, FP 1 -> F1 0
    # case 2: class a: GT (0,0), pred (2,2) -> F1 1;  class c: GT only -> F1 0
    # case 3: nothing at all -> contributes only to n = 3
    # F1_a = (2/3 + 1) / 3 = 5/9; F1_b = 0; F1_c = 0 -> macro = (5/9) / 3 = 5/27
    case1 = nuclei_class_counts([[0, 0]], ["a"], [[1, 0], [50, 50], [80, 80]], ["a", "a", "b"])
    case2 = nuclei_class_counts([[0, 0], [40, 40]], ["a", "c"], [[2, 2]], ["a"])
    case3 = nuclei_class_counts([], [], [], [])
    assert case3 == {}
    result = puma_macro_f1([case1, case2, case3])
    assert result.per_class == pytest.approx({"a": 5 / 9, "b": 0.0, "c": 0.0}, abs=1e-15)
    assert result.f1 == pytest.approx(5 / 27, abs=1e-15)


def test_empty_policies():
    # no predictions at all: every GT class scores 0
    only_gt = nuclei_class_counts([[0, 0]], ["a"], np.zeros((0, 2)), [])
    assert puma_macro_f1([only_gt]).f1 == 0.0
    # nothing anywhere: the documented fallback value
    assert puma_macro_f1([{}, {}]).f1 == 0.0
    assert puma_macro_f1([{}], no_class_value=1.0).f1 == 1.0
    with pytest.raises(ValueError, match="at least one case"):
        puma_macro_f1([])


def test_single_perfect_nucleus():
    counts = nuclei_class_counts([[5, 5]], ["tumor"], [[5, 5]], ["tumor"], [0.2])
    assert counts["tumor"].f1 == 1.0
    assert puma_macro_f1([counts]).f1 == 1.0


def test_polygon_centroid_is_the_vertex_mean():
    # square (0,0) (4,0) (4,2) (0,2) -> (2, 1); third coordinate ignored
    assert polygon_centroid([[0, 0, 0.5], [4, 0, 0.5], [4, 2, 0.5], [0, 2, 0.5]]) == (2.0, 1.0)
    # a repeated closing vertex counts twice: (0+4+4+0+0)/5, (0+0+2+2+0)/5
    assert polygon_centroid([[0, 0], [4, 0], [4, 2], [0, 2], [0, 0]]) == (1.6, 0.8)
    with pytest.raises(ValueError, match="n >= 3"):
        polygon_centroid([[0, 0], [1, 1]])


def test_inputs_are_checked():
    with pytest.raises(ValueError, match="entries"):
        match_nuclei([[0, 0]], ["a", "b"], [], [])
    with pytest.raises(ValueError, match="shape"):
        match_nuclei([[0, 0, 0]], ["a"], [], [])
    with pytest.raises(ValueError, match="NaN"):
        match_nuclei([[0, np.nan]], ["a"], [], [])
    with pytest.raises(ValueError, match="radius"):
        match_nuclei([[0, 0]], ["a"], [[0, 0]], ["a"], radius_px=0)


# ---------------------------------------------------------------- agreement with the official code


@pytest.mark.parametrize("seed", range(30))
def test_equals_official_algorithm_on_random_test_sets(seed):
    rng = np.random.default_rng(seed)
    classes = ["tumor", "TILs", "other"] if seed % 2 else [f"c{i}" for i in range(10)]
    ours, official = [], []
    for _ in range(int(rng.integers(1, 6))):
        gt_xy, gt_cls, pred_xy, pred_cls, scores = _random_case(rng, classes)
        counts = nuclei_class_counts(gt_xy, gt_cls, pred_xy, pred_cls, scores)
        ours.append(counts)
        gt = [(c, xy.tolist()) for c, xy in zip(gt_cls, gt_xy, strict=True)]
        pred = [
            (c, xy.tolist(), s) for c, xy, s in zip(pred_cls, pred_xy, scores.tolist(), strict=True)
        ]
        reference = _official_case(gt, pred)
        assert {k: v.f1 for k, v in counts.items()} == reference
        official.append(reference)
    macro = puma_macro_f1(ours)
    expected_f1, expected_per_class = _official_aggregate(official)
    assert macro.f1 == expected_f1
    assert macro.per_class == expected_per_class


# ---------------------------------------------------------------- properties

_coords = st.floats(0, 200, allow_nan=False)
_nuclei = st.lists(st.tuples(_coords, _coords, st.sampled_from(["a", "b", "c"])), max_size=25)


@settings(max_examples=60, deadline=None)
@given(_nuclei, _nuclei)
def test_f1_bounds_and_one_to_one(gt, pred):
    gt_xy = [(x, y) for x, y, _ in gt]
    pred_xy = [(x, y) for x, y, _ in pred]
    matched = match_nuclei(gt_xy, [c for *_, c in gt], pred_xy, [c for *_, c in pred])
    hits = matched[matched >= 0]
    assert np.unique(hits).size == hits.size  # one-to-one
    for g, p in enumerate(matched):
        if p >= 0:
            assert gt[g][2] == pred[p][2]
            assert np.hypot(gt[g][0] - pred[p][0], gt[g][1] - pred[p][1]) < 15
    counts = nuclei_class_counts(gt_xy, [c for *_, c in gt], pred_xy, [c for *_, c in pred])
    for value in counts.values():
        assert 0.0 <= value.f1 <= 1.0
    assert 0.0 <= puma_macro_f1([counts]).f1 <= 1.0


@settings(max_examples=60, deadline=None)
@given(_nuclei, st.integers(-500, 500), st.integers(-500, 500))
def test_identity_is_perfect_and_translation_changes_nothing(gt, dx, dy):
    xy = np.array([(x, y) for x, y, _ in gt]).reshape(-1, 2)
    classes = [c for *_, c in gt]
    counts = nuclei_class_counts(xy, classes, xy, classes)
    assert all(v.f1 == 1.0 for v in counts.values())
    # integer coordinates and shifts keep every distance exact, so nothing may change
    xy = np.round(xy)
    shift = np.array([dx, dy], dtype=float)
    pred = xy + np.array([3.0, -2.0])
    moved = nuclei_class_counts(xy + shift, classes, pred + shift, classes)
    plain = nuclei_class_counts(xy, classes, pred, classes)
    assert {k: v.true_positives for k, v in moved.items()} == {
        k: v.true_positives for k, v in plain.items()
    }
