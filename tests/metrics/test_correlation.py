"""PLCC / SROCC / KROCC and the LDCT-IQA score: hand cases, scipy.stats agreement, properties."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from rexmle.metrics.correlation import kendall_tau_b, ldct_iqa_score, pearson_r, spearman_rho


def test_hand_computed_three_points():
    x = [1.0, 2.0, 3.0]
    y = [1.0, 3.0, 2.0]
    # centred x = (-1, 0, 1), y = (-1, 1, 0): sum of products 1, norms sqrt2 * sqrt2 -> r = 1/2
    assert pearson_r(x, y) == pytest.approx(0.5, abs=1e-15)
    # the values are their own ranks -> rho = 1/2
    assert spearman_rho(x, y) == pytest.approx(0.5, abs=1e-15)
    # pairs (1,2) concordant, (1,3) concordant, (2,3) discordant -> (2 - 1) / 3
    assert kendall_tau_b(x, y) == pytest.approx(1 / 3, abs=1e-15)
    result = ldct_iqa_score(x, y)
    assert result.score == pytest.approx(0.5 + 0.5 + 1 / 3, abs=1e-15)


def test_kendall_tau_b_with_ties_hand_value():
    # x = (1, 1, 2), y = (1, 2, 3): pair (1,2) tied in x, (1,3) and (2,3) concordant -> C - D = 2
    # n0 = 3, ties in x n1 = 1, in y n2 = 0 -> tau_b = 2 / sqrt(2 * 3)
    assert kendall_tau_b([1, 1, 2], [1, 2, 3]) == pytest.approx(2 / np.sqrt(6), abs=1e-15)


def test_constant_predictions_give_zero_never_nan():
    truth = [0.2, 1.4, 3.8, 2.0]
    constant = [1.0] * 4
    result = ldct_iqa_score(constant, truth)
    assert (result.plcc, result.srocc, result.krocc, result.score) == (0.0, 0.0, 0.0, 0.0)
    assert pearson_r(constant, truth, constant_value=-7.0) == -7.0


def test_gold_and_negated_gold_score_three():
    truth = np.array([0.0, 0.2, 0.2, 1.6, 3.8, 4.0, 2.2])
    assert ldct_iqa_score(truth, truth).score == pytest.approx(3.0, abs=1e-12)
    assert ldct_iqa_score(-truth, truth).score == pytest.approx(3.0, abs=1e-12)


def test_inputs_are_checked():
    with pytest.raises(ValueError, match="at least 2"):
        pearson_r([1.0], [2.0])
    with pytest.raises(ValueError, match="scores but truth"):
        spearman_rho([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="finite"):
        kendall_tau_b([1.0, np.nan], [1.0, 2.0])
    with pytest.raises(ValueError, match="1-D"):
        ldct_iqa_score([[1.0, 2.0]], [[1.0, 2.0]])


@pytest.mark.parametrize("seed", range(10))
def test_equals_scipy_stats_with_ties(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 400))
    truth = rng.integers(0, 21, n) * 0.2  # Likert means: multiples of 0.2, many ties
    pred = truth + rng.normal(0, 0.8, n)
    if seed % 3 == 0:
        pred = np.round(pred)  # ties on the prediction side too
    assert pearson_r(pred, truth) == pytest.approx(stats.pearsonr(pred, truth)[0], abs=1e-12)
    assert spearman_rho(pred, truth) == pytest.approx(stats.spearmanr(pred, truth)[0], abs=1e-12)
    assert kendall_tau_b(pred, truth) == pytest.approx(stats.kendalltau(pred, truth)[0], abs=1e-12)


def test_kendall_in_several_blocks_equals_scipy():
    rng = np.random.default_rng(7)
    truth = rng.integers(0, 30, 3000).astype(float)
    pred = truth + rng.normal(0, 5, truth.size)
    assert kendall_tau_b(pred, truth) == pytest.approx(stats.kendalltau(pred, truth)[0], abs=1e-12)


_values = st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=2, max_size=40)


@settings(max_examples=80, deadline=None)
@given(_values, st.randoms(use_true_random=False))
def test_bounds_symmetry_and_joint_permutation(values, rnd):
    x = np.array(values)
    y = np.array([rnd.uniform(-5, 5) for _ in values])
    for fn in (pearson_r, spearman_rho, kendall_tau_b):
        r = fn(x, y)
        assert -1.0 <= r <= 1.0
        assert r == pytest.approx(fn(y, x), abs=1e-12)
        order = list(range(x.size))
        rnd.shuffle(order)
        assert fn(x[order], y[order]) == pytest.approx(r, abs=1e-12)
    score = ldct_iqa_score(x, y).score
    assert 0.0 <= score <= 3.0


_integers = st.lists(st.integers(-1000, 1000).map(float), min_size=2, max_size=40)


@settings(max_examples=60, deadline=None)
@given(_integers)
def test_identity_is_best_and_ranks_ignore_monotone_maps(values):
    x = np.array(values)
    if np.all(x == x[0]):
        assert ldct_iqa_score(x, x).score == 0.0
        return
    assert ldct_iqa_score(x, x).score == pytest.approx(3.0, abs=1e-9)
    y = np.arange(x.size, dtype=float)[::-1]
    squashed = np.arctan(x / 100)  # strictly increasing: ranks unchanged
    assert spearman_rho(squashed, y) == pytest.approx(spearman_rho(x, y), abs=1e-12)
    assert kendall_tau_b(squashed, y) == pytest.approx(kendall_tau_b(x, y), abs=1e-12)
