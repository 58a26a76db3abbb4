"""Nucleus detection scored by centroid matching, as in the PUMA 2024 challenge.

Points are (x, y) pixel coordinates (x = column, y = row, origin top-left). Class names are plain
strings; which names a track uses is the grader's business, not this module's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.spatial import cKDTree

PUMA_MATCH_RADIUS_PX = 15.0
"""A prediction matches a reference nucleus only if their distance is strictly below this."""


def polygon_centroid(path_points: npt.ArrayLike) -> tuple[float, float]:
    """Position of a nucleus given as a polygon: the arithmetic mean of its listed vertices.

    Definition: (mean of x, mean of y) over the listed points; a third coordinate per point
        (Grand-Challenge ``[x, y, z]``) is ignored. This is the vertex mean, not the area
        centroid; a repeated closing vertex therefore counts twice.
    Units: pixels.
    Empty: fewer than 3 points raises (the official code skips such polygons silently).
    Follows: ``calculate_centroid`` in tueimage/PUMA-challenge-eval-track1/-track2
        ``eval_nuclei.py`` (``np.mean(points, axis=0)`` on ``coord[:2]``).

    Args:
        path_points: array-like of shape (n, 2) or (n, 3).

    Returns:
        (x, y).

    Raises:
        ValueError: not a finite (n, 2) or (n, 3) array with n >= 3.
    """
    points = np.asarray(path_points, dtype=np.float64)
    if points.ndim != 2 or points.shape[1] not in (2, 3) or points.shape[0] < 3:
        msg = f"path_points must have shape (n >= 3, 2 or 3), got {points.shape}"
        raise ValueError(msg)
    if not np.all(np.isfinite(points)):
        msg = "path_points contains NaN or infinite coordinates"
        raise ValueError(msg)
    centroid = np.mean(points[:, :2], axis=0)
    return float(centroid[0]), float(centroid[1])


def _as_points(values: npt.ArrayLike, what: str) -> npt.NDArray[np.float64]:
    points = np.asarray(values, dtype=np.float64)
    if points.size == 0:
        return np.zeros((0, 2), dtype=np.float64)
    if points.ndim != 2 or points.shape[1] != 2:
        msg = f"{what} must have shape (n, 2) as (x, y), got {points.shape}"
        raise ValueError(msg)
    if not np.all(np.isfinite(points)):
        msg = f"{what} contains NaN or infinite coordinates"
        raise ValueError(msg)
    return points


def _as_labels(values: Sequence[str] | npt.NDArray, n: int, what: str) -> list[str]:
    labels = [str(v) for v in values]
    if len(labels) != n:
        msg = f"{what} has {len(labels)} entries but there are {n} points"
        raise ValueError(msg)
    return labels


def match_nuclei(
    truth_xy: npt.ArrayLike,
    truth_classes: Sequence[str],
    pred_xy: npt.ArrayLike,
    pred_classes: Sequence[str],
    pred_scores: npt.ArrayLike | None = None,
    *,
    radius_px: float = PUMA_MATCH_RADIUS_PX,
) -> npt.NDArray[np.int64]:
    """Greedy one-to-one matching of predicted to reference nuclei of the same class.

    Definition: reference nuclei are visited in their given order; for reference g the
        candidates are the not-yet-matched predictions of the same class whose Euclidean
        distance sqrt(dx² + dy²) to g is strictly below ``radius_px``; g takes the candidate
        with the highest score, ties broken by the smaller distance, then by the earlier
        prediction; that prediction leaves the pool.
    Units: indices.
    Empty: no reference or no prediction -> nothing matched.
    Follows: ``calculate_centroid_distance`` in tueimage/PUMA-challenge-eval-track1 (@2650261)
        and -track2 (@cb847d1) ``eval_nuclei.py``; strict ``< 15``.
    Differs: the matched prediction is removed by identity; the official code removes the
        first prediction of that class with an equal centroid (differs only for duplicated
        centroids). The official distance is ``np.linalg.norm`` (may differ in the last bit).

    Args:
        truth_xy: array of shape (G, 2), reference positions (x, y).
        truth_classes: G class names.
        pred_xy: array of shape (P, 2), predicted positions (x, y).
        pred_classes: P class names.
        pred_scores: P confidences; None means 1.0 for every prediction (official default).
        radius_px: matching radius in pixels (strict).

    Returns:
        Array of shape (G,): for each reference nucleus the index of its matched prediction,
        or -1.

    Raises:
        ValueError: shapes or lengths disagree, a value is not finite, or radius_px <= 0.
    """
    truth = _as_points(truth_xy, "truth_xy")
    pred = _as_points(pred_xy, "pred_xy")
    t_labels = _as_labels(truth_classes, truth.shape[0], "truth_classes")
    p_labels = _as_labels(pred_classes, pred.shape[0], "pred_classes")
    if pred_scores is None:
        scores = np.ones(pred.shape[0], dtype=np.float64)
    else:
        scores = np.asarray(pred_scores, dtype=np.float64).reshape(-1)
        if scores.shape != (pred.shape[0],):
            msg = f"pred_scores has {scores.size} entries but there are {pred.shape[0]} points"
            raise ValueError(msg)
        if not np.all(np.isfinite(scores)):
            msg = "pred_scores contains NaN or infinite values"
            raise ValueError(msg)
    if not (np.isfinite(radius_px) and radius_px > 0):
        msg = f"radius_px must be finite and > 0, got {radius_px}"
        raise ValueError(msg)
    matched = np.full(truth.shape[0], -1, dtype=np.int64)
    if truth.shape[0] == 0 or pred.shape[0] == 0:
        return matched

    # candidate pairs within the radius (the tree's bound is inclusive; re-filtered strictly)
    pairs = cKDTree(truth).query_ball_tree(cKDTree(pred), r=float(radius_px))
    g_idx = np.repeat(np.arange(truth.shape[0]), [len(p) for p in pairs])
    if g_idx.size == 0:
        return matched
    p_idx = np.fromiter((j for p in pairs for j in p), dtype=np.int64, count=g_idx.size)
    diff = truth[g_idx] - pred[p_idx]
    distance = np.sqrt(diff[:, 0] * diff[:, 0] + diff[:, 1] * diff[:, 1])
    _, class_codes = np.unique(np.array(t_labels + p_labels, dtype=object), return_inverse=True)
    t_code = class_codes[: truth.shape[0]]
    p_code = class_codes[truth.shape[0] :]
    ok = (distance < radius_px) & (t_code[g_idx] == p_code[p_idx])
    g_idx, p_idx, distance = g_idx[ok], p_idx[ok], distance[ok]
    # per reference: candidates by (-score, distance, prediction index)
    order = np.lexsort((p_idx, distance, -scores[p_idx], g_idx))
    g_sorted = g_idx[order].tolist()
    p_sorted = p_idx[order].tolist()
    used = np.zeros(pred.shape[0], dtype=bool)
    done_g = -1
    for g, p in zip(g_sorted, p_sorted, strict=True):
        if g == done_g or used[p]:
            continue
        used[p] = True
        matched[g] = p
        done_g = g
    return matched


@dataclass(frozen=True)
class ClassCounts:
    """Detection counts of one class in one case.

    Attributes:
        true_positives: matched pairs of this class.
        false_positives: predictions of this class minus true positives.
        false_negatives: reference nuclei of this class minus true positives.
    """

    true_positives: int
    false_positives: int
    false_negatives: int

    @property
    def f1(self) -> float:
        """F1 with the official conventions: P = 0 if TP+FP = 0, R likewise, F1 = 0 if P+R = 0."""
        tp, fp, fn = self.true_positives, self.false_positives, self.false_negatives
        precision = tp / (tp + fp) if tp + fp > 0 else 0
        recall = tp / (tp + fn) if tp + fn > 0 else 0
        if precision + recall == 0:
            return 0.0
        return float(2 * precision * recall / (precision + recall))


def nuclei_class_counts(
    truth_xy: npt.ArrayLike,
    truth_classes: Sequence[str],
    pred_xy: npt.ArrayLike,
    pred_classes: Sequence[str],
    pred_scores: npt.ArrayLike | None = None,
    *,
    radius_px: float = PUMA_MATCH_RADIUS_PX,
) -> dict[str, ClassCounts]:
    """Per-class TP / FP / FN of one case after greedy centroid matching.

    Definition: matching by `match_nuclei`; for every class c that occurs in the case (in the
        reference or in the predictions): TP = matched pairs of class c, FP = #pred_c - TP,
        FN = #truth_c - TP.
    Units: counts.
    Empty: a case with no reference and no prediction gives an empty mapping; a class only
        predicted gets TP = FN = 0; a class only in the reference gets TP = FP = 0.
    Follows: ``calculate_classification_metrics`` in tueimage/PUMA-challenge-eval-track1/-track2
        ``eval_nuclei.py``.

    Args:
        truth_xy: array of shape (G, 2), reference positions (x, y).
        truth_classes: G class names.
        pred_xy: array of shape (P, 2), predicted positions (x, y).
        pred_classes: P class names.
        pred_scores: P confidences; None means 1.0 for all.
        radius_px: matching radius in pixels (strict).

    Returns:
        Mapping class name -> counts, classes in sorted order.

    Raises:
        ValueError: see `match_nuclei`.
    """
    matched = match_nuclei(
        truth_xy, truth_classes, pred_xy, pred_classes, pred_scores, radius_px=radius_px
    )
    t_labels = [str(c) for c in truth_classes]
    p_labels = [str(c) for c in pred_classes]
    counts: dict[str, ClassCounts] = {}
    for name in sorted(set(t_labels) | set(p_labels)):
        n_truth = sum(1 for c in t_labels if c == name)
        n_pred = sum(1 for c in p_labels if c == name)
        tp = sum(1 for g, c in enumerate(t_labels) if c == name and matched[g] >= 0)
        counts[name] = ClassCounts(
            true_positives=tp, false_positives=n_pred - tp, false_negatives=n_truth - tp
        )
    return counts


@dataclass(frozen=True)
class MacroF1:
    """Macro F1 over classes and its per-class terms.

    Attributes:
        f1: mean of ``per_class`` values.
        per_class: class name -> F1_c (sum over cases of the case F1, divided by the number of
            cases).
    """

    f1: float
    per_class: dict[str, float]


def puma_macro_f1(
    cases: Sequence[Mapping[str, ClassCounts]],
    *,
    no_class_value: float = 0.0,
    per_occurrence: bool = False,
    classes: Sequence[str] | None = None,
) -> MacroF1:
    """Macro F1 of nucleus detection over a test set, aggregated as PUMA's ``evaluate.py``.

    Definition: n = number of cases; C = classes occurring in at least one case (reference or
        prediction); for c in C, F1_c = (sum over the cases where c occurs of F1_{c,i}) / n,
        i.e. a case where c does not occur contributes 0 but still counts in n;
        f1 = mean of F1_c over C.
    Units: fraction in [0, 1]; higher is better.
    Empty: a case with no reference and no prediction adds only to n. If no class occurs in
        any case, f1 = ``no_class_value`` (the official code would return NaN).
    Follows: ``main()`` of tueimage/PUMA-challenge-eval-track1 (@2650261) / -track2 (@cb847d1)
        ``evaluate.py`` (``f1_scores_per_class[c] /= num_files``, then ``np.mean``).
    Variants (the published study's grader): ``per_occurrence`` divides each class's sum by the
        number of cases where it occurs instead of n (never lower than the official value);
        ``classes`` fixes the classes of the final mean: a class of ``classes`` occurring nowhere
        counts as F1_c = 0 and classes outside ``classes`` are left out.

    Args:
        cases: per case, the counts from `nuclei_class_counts`.
        no_class_value: value when no class occurs anywhere (and ``classes`` is None).
        per_occurrence: average each class over the cases where it occurs.
        classes: the classes of the final mean (None: those occurring somewhere).

    Returns:
        The macro F1 and the per-class values.

    Raises:
        ValueError: ``cases`` is empty.
    """
    if len(cases) == 0:
        msg = "puma_macro_f1 needs at least one case, got none"
        raise ValueError(msg)
    sums: dict[str, float] = {}
    occurrences: dict[str, int] = {}
    for case in cases:
        # classes in sorted order inside a case, as the official ``np.unique``: this fixes the
        # order of the final mean and so its last bits
        for name in sorted(case):
            sums[name] = sums.get(name, 0) + case[name].f1
            occurrences[name] = occurrences.get(name, 0) + 1
    n_cases = len(cases)
    per_class = {
        name: total / (occurrences[name] if per_occurrence else n_cases)
        for name, total in sums.items()
    }
    if classes is not None:
        per_class = {name: per_class.get(name, 0.0) for name in classes}
    if not per_class:
        return MacroF1(f1=float(no_class_value), per_class={})
    return MacroF1(f1=float(np.mean(list(per_class.values()))), per_class=per_class)
