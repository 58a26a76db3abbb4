"""Geometry diagnostics of a segmentation: would it match the truth after an axis permutation,
a flip, or a relabelling? The "axes swapped" failure: a valid file that scores near zero.

Pure functions on label arrays (axis order as in :mod:`rexmle.io`); no file access.

Definitions:

- foreground Dice D(a, b) = 2 |a>0 ∧ b>0| / (|a>0| + |b>0|), 1 when both are empty;
- label Dice = mean over the labels > 0 present in either array of the per-label Dice;
- a geometric transform is an axis permutation followed by flips of a subset of the axes
  (d! · 2^d candidates, only those that give the truth's shape);
- a relabelling maps each predicted label to a truth label (one-to-one, chosen to maximise the
  overlap: Hungarian assignment on the contingency table).

A transform or relabelling is *flagged* when it lifts the score to at least ``MIN_FIXED_DICE``
and by at least ``MIN_GAIN`` over the untouched prediction: a random mask gains nothing from
any transform and is never flagged.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

MIN_FIXED_DICE = 0.5
MIN_GAIN = 0.25
MAX_SEARCH_VOXELS = 2_000_000
"""Above this size the transform search runs on a regular subsample (every k-th voxel)."""
MAX_REMAP_LABELS = 32
"""Relabelling is checked only up to this many labels (instance masks are left out)."""


@dataclass(frozen=True)
class GeometryFinding:
    """What one prediction would score after the best transform and relabelling."""

    kind: str
    """``ok`` (nothing helps), ``axes_permuted``, ``flipped``, ``permuted_and_flipped``,
    ``labels_remapped``."""
    transform: str
    """In words, e.g. ``transpose (1, 0, 2)``, ``flip axes (0,)``, ``labels {1: 2, 2: 1}``."""
    dice_as_is: float
    dice_fixed: float

    @property
    def flagged(self) -> bool:
        """Whether the prediction matches much better after the transform."""
        return self.kind != "ok"


def foreground_dice(pred: npt.NDArray[np.generic], truth: npt.NDArray[np.generic]) -> float:
    """Dice of the foregrounds (label > 0); 1.0 when both are empty."""
    a, b = pred > 0, truth > 0  # type: ignore[operator]  # label arrays compare with 0
    total = int(a.sum()) + int(b.sum())
    if total == 0:
        return 1.0
    return 2.0 * int(np.logical_and(a, b).sum()) / total


def label_dice(pred: npt.NDArray[np.generic], truth: npt.NDArray[np.generic]) -> float:
    """Mean per-label Dice over the labels > 0 present in either array; 1.0 when none is."""
    present = set(np.unique(pred).tolist()) | set(np.unique(truth).tolist())
    labels = sorted(label for label in present if label != 0)
    if not labels:
        return 1.0
    scores = []
    for label in labels:
        a, b = pred == label, truth == label
        scores.append(2.0 * int(np.logical_and(a, b).sum()) / (int(a.sum()) + int(b.sum())))
    return float(np.mean(scores))


def _stride(shape: tuple[int, ...]) -> int:
    size = int(np.prod(shape))
    if size <= MAX_SEARCH_VOXELS:
        return 1
    return int(np.ceil((size / MAX_SEARCH_VOXELS) ** (1.0 / len(shape))))


def _transforms(
    ndim: int,
) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    axes = tuple(range(ndim))
    flips = [
        tuple(a for a, bit in zip(axes, bits, strict=True) if bit)
        for bits in itertools.product((0, 1), repeat=ndim)
    ]
    return [(perm, flip) for perm in itertools.permutations(axes) for flip in flips]


def _apply(
    array: npt.NDArray[np.generic], perm: tuple[int, ...], flip: tuple[int, ...]
) -> npt.NDArray[np.generic]:
    moved = np.transpose(array, perm)
    return np.flip(moved, axis=flip) if flip else moved


def _best_relabelling(
    pred: npt.NDArray[np.generic], truth: npt.NDArray[np.generic]
) -> dict[int, int] | None:
    from scipy.optimize import linear_sum_assignment

    pred_labels = [int(v) for v in np.unique(pred) if v != 0]
    truth_labels = [int(v) for v in np.unique(truth) if v != 0]
    if not pred_labels or not truth_labels or len(pred_labels) > MAX_REMAP_LABELS:
        return None
    if len(truth_labels) > MAX_REMAP_LABELS:
        return None
    overlap = np.zeros((len(pred_labels), len(truth_labels)))
    for i, p in enumerate(pred_labels):
        mask = pred == p
        values, counts = np.unique(truth[mask], return_counts=True)
        for value, count in zip(values.tolist(), counts.tolist(), strict=True):
            if value != 0:
                overlap[i, truth_labels.index(int(value))] = count
    rows, cols = linear_sum_assignment(-overlap)
    mapping = {pred_labels[r]: truth_labels[c] for r, c in zip(rows, cols, strict=True)}
    return {
        k: v for k, v in mapping.items() if overlap[pred_labels.index(k), truth_labels.index(v)]
    }


def _relabel(array: npt.NDArray[np.generic], mapping: dict[int, int]) -> npt.NDArray[np.int64]:
    out = np.zeros(array.shape, dtype=np.int64)
    for source, target in mapping.items():
        out[array == source] = target
    return out


def diagnose(
    pred: npt.NDArray[np.generic], truth: npt.NDArray[np.generic], *, instances: bool = False
) -> GeometryFinding:
    """The best geometric transform and relabelling of ``pred`` against ``truth``.

    The transform is searched on foreground Dice (on a subsample above ``MAX_SEARCH_VOXELS``);
    with several labels, the transforms within 0.05 of the best foreground Dice are compared on
    label Dice (so a left-right flip of a symmetric structure, which moves only the labels, is
    found as a flip). When no transform helps, a relabelling is checked on label Dice.
    ``instances``: the labels number objects in any order (an instance mask), so only the
    foreground is compared and a relabelling is never a finding.

    Raises:
        ValueError: the arrays differ in number of axes.
    """
    if pred.ndim != truth.ndim:
        msg = f"prediction has {pred.ndim} axes but the truth has {truth.ndim}"
        raise ValueError(msg)
    step = _stride(truth.shape)
    view = (slice(None, None, step),) * truth.ndim
    small_truth = truth[view]
    identity = tuple(range(truth.ndim))
    fits = pred.shape == truth.shape
    candidates: list[tuple[float, tuple[int, ...], tuple[int, ...]]] = []
    for perm, flip in _transforms(truth.ndim):
        moved = _apply(pred, perm, flip)
        if moved.shape == truth.shape:
            candidates.append((foreground_dice(moved[view], small_truth), perm, flip))
    if not candidates:
        return GeometryFinding("ok", "", 0.0, 0.0)
    as_is = foreground_dice(pred[view], small_truth) if fits else 0.0
    n_labels = len(np.unique(small_truth)) - 1
    if not instances and 1 < n_labels <= MAX_REMAP_LABELS:
        # several labels: among the transforms that fit the foreground about as well as the best,
        # the one that fits the labels (a left-right flip of a symmetric anatomy moves only labels)
        top = max(c[0] for c in candidates)
        candidates = [
            (label_dice(_apply(pred, perm, flip)[view], small_truth), perm, flip)
            for fg, perm, flip in candidates
            if fg >= top - 0.05 or (perm == identity and not flip)
        ]
        as_is = label_dice(pred[view], small_truth) if fits else 0.0
    score, perm, flip = max(candidates, key=lambda c: (c[0], c[1] == identity and not c[2]))
    if score >= MIN_FIXED_DICE and score - as_is >= MIN_GAIN:
        permuted = perm != identity
        kind = (
            "permuted_and_flipped"
            if permuted and flip
            else ("axes_permuted" if permuted else "flipped")
        )
        words = []
        if permuted:
            words.append(f"transpose {perm}")
        if flip:
            words.append(f"flip axes {flip}")
        return GeometryFinding(kind, ", then ".join(words), as_is, score)
    if pred.shape != truth.shape or instances:
        return GeometryFinding("ok", "", as_is, as_is)
    labels_as_is = label_dice(pred, truth)
    mapping = _best_relabelling(pred, truth)
    if mapping and any(k != v for k, v in mapping.items()):
        fixed = label_dice(_relabel(pred, mapping), truth)
        if fixed >= MIN_FIXED_DICE and fixed - labels_as_is >= MIN_GAIN:
            changed = {k: v for k, v in sorted(mapping.items()) if k != v}
            return GeometryFinding("labels_remapped", f"labels {changed}", labels_as_is, fixed)
    return GeometryFinding("ok", "", labels_as_is, labels_as_is)
