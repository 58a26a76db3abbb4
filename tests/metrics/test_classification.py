"""Accuracy and balanced accuracy over string labels: hand cases, sklearn agreement, properties."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, balanced_accuracy_score

from rexmle.metrics.classification import accuracy, balanced_accuracy


def test_hand_computed_values():
    truth = ["Var_Ant_1_1_0_1"] * 3 + ["Var_Ant_1_0_0_1"]
    pred = ["Var_Ant_1_1_0_1"] * 2 + ["Var_Ant_1_0_0_1"] * 2
    # accuracy 3/4; recall of the first class 2/3, of the second 1/1 -> (2/3 + 1) / 2 = 5/6
    assert accuracy(pred, truth) == 0.75
    assert balanced_accuracy(pred, truth) == pytest.approx(5 / 6, abs=1e-15)


def test_predicted_class_absent_from_truth_is_only_a_miss():
    truth = ["A", "A", "B"]
    pred = ["A", "FAIL", "FAIL"]
    # recall A = 1/2, recall B = 0/1; FAIL adds no class -> (1/2 + 0) / 2 = 1/4
    assert balanced_accuracy(pred, truth) == 0.25


def test_single_item_and_single_class():
    assert accuracy(["x"], ["x"]) == 1.0
    assert balanced_accuracy(["y"], ["x"]) == 0.0
    assert balanced_accuracy(["x", "y", "x"], ["x", "x", "x"]) == pytest.approx(2 / 3)


def test_empty_and_mismatched_inputs_raise():
    with pytest.raises(ValueError, match="at least one"):
        accuracy([], [])
    with pytest.raises(ValueError, match="at least one"):
        balanced_accuracy([], [])
    with pytest.raises(ValueError, match="labels but truth"):
        balanced_accuracy(["a"], ["a", "b"])


@pytest.mark.parametrize("seed", range(20))
def test_equals_sklearn(seed):
    rng = np.random.default_rng(seed)
    labels = [f"Var_Pos_{a}_{b}_1_0" for a in (0, 1) for b in (0, 1)] + ["FAIL"]
    n = int(rng.integers(1, 60))
    truth = [str(v) for v in rng.choice(labels[:4], n)]
    pred = [t if rng.random() < 0.6 else str(rng.choice(labels)) for t in truth]
    assert accuracy(pred, truth) == accuracy_score(truth, pred)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "y_pred contains classes not in y_true"
        expected = balanced_accuracy_score(truth, pred)
    assert balanced_accuracy(pred, truth) == expected


_labels = st.lists(st.tuples(st.sampled_from("abcd"), st.sampled_from("abcde")), min_size=1)


@settings(max_examples=80, deadline=None)
@given(_labels, st.randoms(use_true_random=False))
def test_bounds_identity_and_permutation(pairs, rnd):
    truth = [t for t, _ in pairs]
    pred = [p for _, p in pairs]
    acc = accuracy(pred, truth)
    bal = balanced_accuracy(pred, truth)
    assert 0.0 <= acc <= 1.0
    assert 0.0 <= bal <= 1.0
    assert accuracy(truth, truth) == 1.0
    assert balanced_accuracy(truth, truth) == 1.0
    rnd.shuffle(pairs)
    assert accuracy([p for _, p in pairs], [t for t, _ in pairs]) == acc
    assert balanced_accuracy([p for _, p in pairs], [t for t, _ in pairs]) == pytest.approx(bal)
