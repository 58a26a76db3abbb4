"""Correlation coefficients between predicted and reference scores, and the LDCT-IQA score.

Inputs are 1-D sequences of finite numbers aligned by position (the grader aligns them by id).
A coefficient that is undefined because one side is constant is reported as a documented value
(0.0 by default), never NaN.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.stats import rankdata

_KENDALL_BLOCK_ELEMENTS = 1 << 22


def _as_pair(
    pred: npt.ArrayLike, truth: npt.ArrayLike
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    x = np.asarray(pred, dtype=np.float64)
    y = np.asarray(truth, dtype=np.float64)
    if x.ndim != 1 or y.ndim != 1:
        msg = f"scores must be 1-D, got shapes {x.shape} and {y.shape}"
        raise ValueError(msg)
    if x.shape != y.shape:
        msg = f"pred has {x.size} scores but truth has {y.size}"
        raise ValueError(msg)
    if x.size < 2:
        msg = f"a correlation needs at least 2 pairs, got {x.size}"
        raise ValueError(msg)
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        msg = "scores must be finite (no NaN or inf)"
        raise ValueError(msg)
    return x, y


def _is_constant(values: npt.NDArray[np.float64]) -> bool:
    return bool(np.all(values == values[0]))


def _pearson(x: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> float:
    xm = x - x.mean()
    ym = y - y.mean()
    # scale first (as scipy does) so that large values cannot overflow the products
    xm = xm / np.max(np.abs(xm))
    ym = ym / np.max(np.abs(ym))
    r = float(np.dot(xm / np.linalg.norm(xm), ym / np.linalg.norm(ym)))
    return max(-1.0, min(1.0, r))


def pearson_r(pred: npt.ArrayLike, truth: npt.ArrayLike, *, constant_value: float = 0.0) -> float:
    """Pearson linear correlation coefficient (signed).

    Definition: r = sum((x - mean x)(y - mean y)) / sqrt(sum((x - mean x)²) sum((y - mean y)²)),
        clipped to [-1, 1] against rounding.
    Units: dimensionless in [-1, 1].
    Empty: either side constant (zero variance) -> ``constant_value`` (scipy returns NaN).
    Follows: ``scipy.stats.pearsonr`` statistic.

    Args:
        pred: predicted scores, shape (n,), n >= 2.
        truth: reference scores, shape (n,).
        constant_value: value when a side is constant.

    Returns:
        r.

    Raises:
        ValueError: not 1-D, lengths differ, fewer than 2 pairs, or non-finite values.
    """
    x, y = _as_pair(pred, truth)
    if _is_constant(x) or _is_constant(y):
        return float(constant_value)
    return _pearson(x, y)


def spearman_rho(
    pred: npt.ArrayLike, truth: npt.ArrayLike, *, constant_value: float = 0.0
) -> float:
    """Spearman rank correlation coefficient (signed), ties given their average rank.

    Definition: the Pearson r of the average ranks of x and of y.
    Units: dimensionless in [-1, 1].
    Empty: either side constant -> ``constant_value`` (scipy returns NaN).
    Follows: ``scipy.stats.spearmanr`` statistic.

    Args:
        pred: predicted scores, shape (n,), n >= 2.
        truth: reference scores, shape (n,).
        constant_value: value when a side is constant.

    Returns:
        rho.

    Raises:
        ValueError: not 1-D, lengths differ, fewer than 2 pairs, or non-finite values.
    """
    x, y = _as_pair(pred, truth)
    if _is_constant(x) or _is_constant(y):
        return float(constant_value)
    return _pearson(rankdata(x), rankdata(y))


def _tie_pairs(values: npt.NDArray[np.float64]) -> int:
    _, counts = np.unique(values, return_counts=True)
    return int(np.sum(counts * (counts - 1) // 2))


def kendall_tau_b(
    pred: npt.ArrayLike, truth: npt.ArrayLike, *, constant_value: float = 0.0
) -> float:
    """Kendall rank correlation, tau-b (tie-corrected), signed.

    Definition: tau_b = (C - D) / sqrt((n0 - n1)(n0 - n2)) with C - D = sum over pairs i < j of
        sign(x_i - x_j) sign(y_i - y_j) (exact integer), n0 = n(n - 1)/2, n1 / n2 the numbers
        of pairs tied in x / in y. Computed by exact pair counting in row blocks (O(n²) time,
        about 4 M pair differences in memory at a time).
    Units: dimensionless in [-1, 1].
    Empty: either side constant -> ``constant_value`` (scipy returns NaN).
    Follows: ``scipy.stats.kendalltau`` statistic with its default ``variant="b"``.

    Args:
        pred: predicted scores, shape (n,), n >= 2.
        truth: reference scores, shape (n,).
        constant_value: value when a side is constant.

    Returns:
        tau_b.

    Raises:
        ValueError: not 1-D, lengths differ, fewer than 2 pairs, or non-finite values.
    """
    x, y = _as_pair(pred, truth)
    if _is_constant(x) or _is_constant(y):
        return float(constant_value)
    n = x.size
    concordance = 0
    block = max(1, _KENDALL_BLOCK_ELEMENTS // n)
    for start in range(0, n, block):
        stop = min(start + block, n)
        sx = np.sign(x[start:stop, None] - x[None, :]).astype(np.int8)
        sy = np.sign(y[start:stop, None] - y[None, :]).astype(np.int8)
        concordance += int(np.sum(sx * sy, dtype=np.int64))
    concordance //= 2  # every unordered pair was counted twice
    n0 = n * (n - 1) // 2
    denominator = np.sqrt(float(n0 - _tie_pairs(x))) * np.sqrt(float(n0 - _tie_pairs(y)))
    tau = concordance / denominator
    return max(-1.0, min(1.0, float(tau)))


@dataclass(frozen=True)
class IqaCorrelation:
    """The LDCT-IQA overall score and its three terms.

    Attributes:
        plcc: |Pearson r|.
        srocc: |Spearman rho|.
        krocc: |Kendall tau-b|.
        score: plcc + srocc + krocc.
    """

    plcc: float
    srocc: float
    krocc: float
    score: float


def ldct_iqa_score(
    pred: npt.ArrayLike, truth: npt.ArrayLike, *, constant_value: float = 0.0
) -> IqaCorrelation:
    """Overall LDCT-IQA score: sum of the absolute Pearson, Spearman and Kendall correlations.

    Definition: score = |r_Pearson(x, y)| + |rho_Spearman(x, y)| + |tau_b(x, y)|, computed
        once over all test images (x = predicted scores, y = radiologists' mean scores).
    Units: dimensionless in [0, 3]; higher is better. A perfectly anti-correlated prediction
        scores like a perfectly correlated one (published definition).
    Empty: constant predictions (or constant references) -> every term ``constant_value``
        (0.0), so score = 0.0; never NaN.
    Follows: LDCT-IQA 2023 (Lee et al., Medical Image Analysis 2025,
        doi:10.1016/j.media.2024.103343): PLCC + SROCC + KROCC with absolute values; no official
        evaluation code is public.

    Args:
        pred: predicted quality scores, shape (n,), n >= 2, any scale.
        truth: reference scores, shape (n,).
        constant_value: value of each term when a side is constant.

    Returns:
        The score and its three terms.

    Raises:
        ValueError: not 1-D, lengths differ, fewer than 2 pairs, or non-finite values.
    """
    plcc = abs(pearson_r(pred, truth, constant_value=constant_value))
    srocc = abs(spearman_rho(pred, truth, constant_value=constant_value))
    krocc = abs(kendall_tau_b(pred, truth, constant_value=constant_value))
    return IqaCorrelation(plcc=plcc, srocc=srocc, krocc=krocc, score=plcc + srocc + krocc)
