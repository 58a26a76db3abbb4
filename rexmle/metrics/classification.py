"""Accuracy and balanced accuracy over categorical labels (any hashable values, e.g. strings).

Labels are compared by equality only; TopCoW's variant strings (``Var_Ant_1_0_0_1``) and the
class ``FAIL`` of its topology score are ordinary labels here.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np


def _check_pair(pred: Sequence[Hashable], truth: Sequence[Hashable]) -> None:
    if len(pred) != len(truth):
        msg = f"pred has {len(pred)} labels but truth has {len(truth)}"
        raise ValueError(msg)
    if len(truth) == 0:
        msg = "need at least one labelled case, got none"
        raise ValueError(msg)


def accuracy(pred: Sequence[Hashable], truth: Sequence[Hashable]) -> float:
    """Fraction of cases whose predicted label equals the reference label.

    Definition: accuracy = #{i : pred_i == truth_i} / n.
    Units: fraction in [0, 1]; higher is better.
    Empty: n = 0 raises (undefined); there is no other degenerate case.
    Follows: ``sklearn.metrics.accuracy_score`` (no sample weights).

    Args:
        pred: predicted labels, one per case.
        truth: reference labels, aligned with ``pred``.

    Returns:
        The accuracy.

    Raises:
        ValueError: lengths differ or there are no cases.
    """
    _check_pair(pred, truth)
    hits = sum(1 for p, t in zip(pred, truth, strict=True) if p == t)
    return hits / len(truth)


def balanced_accuracy(pred: Sequence[Hashable], truth: Sequence[Hashable]) -> float:
    """Balanced accuracy: the mean over reference classes of the per-class recall.

    Definition: for each class c occurring in ``truth``, recall_c = #{i : truth_i = c and
        pred_i = c} / #{i : truth_i = c}; balanced accuracy = mean of recall_c over those
        classes. A predicted label that never occurs in ``truth`` is simply a miss of the case's
        reference class (it adds no class of its own).
    Units: fraction in [0, 1]; higher is better; chance level for a constant prediction is
        1 / (number of reference classes) at most.
    Empty: n = 0 raises (undefined). A single reference class reduces to plain accuracy.
    Follows: ``sklearn.metrics.balanced_accuracy_score(truth, pred)`` with ``adjusted=False``,
        as used by TopCoW 2024 (CoWBenchmark/TopCoW_Eval_Metrics ``aggregate_all_graph_dicts.py``
        and ``aggregate_all_topo_dicts.py``); classes averaged in sorted order like sklearn.
    Differs: no warning is emitted for predicted classes absent from ``truth`` (sklearn warns
        and drops their NaN recall, with the same result).

    Args:
        pred: predicted labels, one per case.
        truth: reference labels, aligned with ``pred``.

    Returns:
        The balanced accuracy.

    Raises:
        ValueError: lengths differ or there are no cases.
    """
    _check_pair(pred, truth)
    classes = sorted(set(truth), key=lambda c: (type(c).__name__, c))
    recalls = []
    for c in classes:
        n_c = sum(1 for t in truth if t == c)
        hits = sum(1 for p, t in zip(pred, truth, strict=True) if t == c and p == c)
        recalls.append(hits / n_c)
    return float(np.mean(recalls))
