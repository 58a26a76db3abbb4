"""NeurIPS-CellSeg instance F1: hand cases, tiled mode, and agreement with the official algorithm."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment
from skimage.segmentation import relabel_sequential

from rexmle.metrics.instances import (
    cellseg_f1,
    cellseg_match_counts,
    instance_overlaps,
    matched_pair_count,
    remove_boundary_instances,
)

# ---------------------------------------------------------------- official algorithm, re-typed
# A direct transcription of JunMa11/NeurIPS-CellSeg baseline/compute_metric.py (@3128e96):
# dense overlap matrix, linear_sum_assignment with the tie-breaking cost, per-id boundary loop.


def _official_remove_boundary_cells(mask: np.ndarray) -> np.ndarray:
    mask = mask.copy()
    w, h = mask.shape
    bd = np.ones((w, h))
    bd[2 : w - 2, 2 : h - 2] = 0
    bd_cells = np.unique(mask * bd)
    for i in bd_cells[1:]:
        mask[mask == i] = 0
    return relabel_sequential(mask)[0]


def _official_tp(gt: np.ndarray, seg: np.ndarray, threshold: float) -> int:
    if seg.max() == 0:
        return 0
    overlap = np.zeros((1 + gt.max(), 1 + seg.max()), dtype=np.uint)
    np.add.at(overlap, (gt.ravel(), seg.ravel()), 1)
    n_pred = np.sum(overlap, axis=0, keepdims=True)
    n_true = np.sum(overlap, axis=1, keepdims=True)
    iou = overlap / (n_pred + n_true - overlap)
    iou[np.isnan(iou)] = 0.0
    iou = iou[1:, 1:]
    n_min = min(iou.shape[0], iou.shape[1])
    costs = -(iou >= threshold).astype(float) - iou / (2 * n_min)
    true_ind, pred_ind = linear_sum_assignment(costs)
    return int((iou[true_ind, pred_ind] >= threshold).sum())


def _official_counts(gt, seg, threshold, max_pixels=25_000_000, roi=2000):
    if gt.size < max_pixels:
        pieces = [(gt.astype(np.int32), seg.astype(np.int32))]
    else:
        h, w = gt.shape
        n_h, n_w = -(-h // roi), -(-w // roi)
        gt_pad = np.zeros((n_h * roi, n_w * roi), dtype=np.int64)
        seg_pad = np.zeros_like(gt_pad)
        gt_pad[:h, :w] = gt
        seg_pad[:h, :w] = seg
        pieces = [
            (
                gt_pad[roi * i : roi * (i + 1), roi * j : roi * (j + 1)],
                seg_pad[roi * i : roi * (i + 1), roi * j : roi * (j + 1)],
            )
            for i in range(n_h)
            for j in range(n_w)
        ]
    tp = n_true = n_pred = 0
    for g, s in pieces:
        g = _official_remove_boundary_cells(g)
        s = _official_remove_boundary_cells(s)
        n_true += int(g.max())
        n_pred += int(s.max())
        tp += _official_tp(g, s, threshold)
    return tp, n_true, n_pred


def _official_f1(gt, seg, threshold, **kwargs) -> float:
    tp, n_true, n_pred = _official_counts(gt, seg, threshold, **kwargs)
    if tp == 0:
        return 0.0
    precision, recall = tp / n_pred, tp / n_true
    return float(np.round(2 * (precision * recall) / (precision + recall), 4))


def _random_instances(rng: np.random.Generator, shape, n_cells, max_side=9) -> np.ndarray:
    """Rectangles painted in random order, so later cells overwrite earlier ones."""
    labels = np.zeros(shape, dtype=np.int64)
    ids = rng.permutation(np.arange(1, 10 * n_cells))[:n_cells]
    for cell_id in ids:
        r, c = rng.integers(0, shape[0]), rng.integers(0, shape[1])
        hh, ww = rng.integers(1, max_side, 2)
        labels[r : r + hh, c : c + ww] = cell_id
    return labels


def _perturb(rng: np.random.Generator, labels: np.ndarray) -> np.ndarray:
    """Shift, drop, merge and add instances to get a plausible prediction."""
    pred = np.roll(labels, shift=tuple(rng.integers(-1, 2, 2)), axis=(0, 1)).copy()
    ids = np.unique(pred)[1:]
    if ids.size:
        pred[np.isin(pred, rng.choice(ids, size=max(1, ids.size // 6)))] = 0
    if ids.size > 3:
        a, b = rng.choice(ids, 2, replace=False)
        pred[pred == a] = b
    extra = _random_instances(rng, labels.shape, 3) + 10_000
    pred = np.where((pred == 0) & (extra > 10_000), extra, pred)
    return pred


# ---------------------------------------------------------------- hand-computed cases


def test_boundary_band_removes_cells_touching_the_two_outer_rows_and_columns():
    labels = np.zeros((10, 10), dtype=np.uint16)
    labels[1, 4] = 5  # row 1 is in the band -> removed
    labels[2:4, 2:4] = 9  # first pixel at row 2, column 2 -> kept
    labels[5:9, 7] = 3  # reaches row 8 = H - 2 -> removed
    labels[4:6, 5:8] = 7  # column 7 = W - 3 -> kept
    out = remove_boundary_instances(labels)
    # kept ids 7 and 9 become 1 and 2 (increasing original order)
    expected = np.zeros((10, 10), dtype=np.int64)
    expected[2:4, 2:4] = 2
    expected[4:6, 5:8] = 1
    np.testing.assert_array_equal(out, expected)


def test_iou_075_passes_three_thresholds():
    truth = np.zeros((12, 12), dtype=np.int32)
    truth[3:6, 3:6] = 1  # 9 px
    pred = np.zeros_like(truth)
    pred[3:6, 3:7] = 4  # 12 px, contains the truth cell
    # IoU = 9 / 12 = 0.75 -> TP at 0.5, 0.6, 0.7; F1 = 1 there, 0 at 0.8 and 0.9
    assert cellseg_f1(pred, truth) == {0.5: 1.0, 0.6: 1.0, 0.7: 1.0, 0.8: 0.0, 0.9: 0.0}
    overlaps = instance_overlaps(pred, truth)
    assert overlaps.ious.tolist() == [0.75]


def test_one_of_two_cells_found_gives_two_thirds_rounded():
    truth = np.zeros((20, 20), dtype=np.int32)
    truth[3:6, 3:6] = 1
    truth[10:14, 10:14] = 2
    pred = np.zeros_like(truth)
    pred[3:6, 3:6] = 1
    # P = 1/1, R = 1/2 -> F1 = 2 * 0.5 / 1.5 = 0.666666... -> 0.6667
    assert cellseg_f1(pred, truth)[0.5] == 0.6667
    assert cellseg_f1(pred, truth, decimals=None)[0.5] == pytest.approx(2 / 3, abs=1e-15)


def test_empty_cases_give_zero():
    empty = np.zeros((10, 10), dtype=np.uint8)
    cell = empty.copy()
    cell[4:6, 4:6] = 1
    border_only = empty.copy()
    border_only[0:3, 0:3] = 1
    zeros = dict.fromkeys((0.5, 0.6, 0.7, 0.8, 0.9), 0.0)
    assert cellseg_f1(empty, cell) == zeros  # empty prediction
    assert cellseg_f1(cell, empty) == zeros  # empty GT
    assert cellseg_f1(empty, empty) == zeros  # both empty
    assert cellseg_f1(border_only, border_only) == zeros  # empty after boundary removal
    assert cellseg_f1(cell, cell) == dict.fromkeys(zeros, 1.0)  # single cell, perfect


def test_star_at_iou_exactly_half_counts_one_match():
    # one predicted cell = union of two equal GT cells: IoU = 4 / 8 = 0.5 with both,
    # but a one-to-one matching can use it once -> TP = 1, P = 1, R = 1/2
    truth = np.zeros((12, 12), dtype=np.int32)
    truth[4:6, 4:6] = 1
    truth[4:6, 6:8] = 2
    pred = (truth > 0).astype(np.int32)
    counts = cellseg_match_counts(pred, truth, thresholds=[0.5])[0]
    assert (counts.true_positives, counts.n_truth, counts.n_pred) == (1, 2, 1)


def test_low_threshold_needs_a_real_matching():
    # GT a = columns 2..5, GT b = columns 6..7; pred p = columns 2..4, pred q = columns 5..7.
    # IoU(a,p) = 3/4, IoU(a,q) = 1/(4+3-1) = 1/6, IoU(b,q) = 2/3. At t = 0.1, greedy a->q
    # would leave b unmatched; the maximum matching is a-p, b-q -> TP = 2.
    truth = np.zeros((8, 10), dtype=np.int32)
    truth[3, 2:6] = 1
    truth[3, 6:8] = 2
    pred = np.zeros_like(truth)
    pred[3, 2:5] = 1
    pred[3, 5:8] = 2
    overlaps = instance_overlaps(pred, truth)
    assert matched_pair_count(overlaps, 0.1) == 2
    assert matched_pair_count(overlaps, 0.7) == 1


def test_inputs_are_checked():
    good = np.zeros((8, 8), dtype=np.int32)
    with pytest.raises(ValueError, match="shape"):
        cellseg_f1(good, np.zeros((8, 9), dtype=np.int32))
    with pytest.raises(TypeError, match="integer"):
        cellseg_f1(good.astype(float), good)
    with pytest.raises(TypeError, match="integer"):
        cellseg_f1(good.astype(bool), good)
    with pytest.raises(ValueError, match="negative"):
        cellseg_f1(good - 1, good)
    with pytest.raises(ValueError, match="2-D"):
        cellseg_f1(good[None], good[None])


# ---------------------------------------------------------------- tiled mode


def test_tiled_mode_equals_whole_mode_when_no_cell_is_near_a_tile_edge():
    # 80 x 70 image, tiles of 32 px when the image has >= 1000 pixels: cells placed well inside
    # tiles are scored identically in both modes.
    truth = np.zeros((80, 70), dtype=np.int32)
    pred = np.zeros_like(truth)
    for k, (r, c) in enumerate([(5, 5), (5, 40), (40, 10), (45, 45), (68, 8)], start=1):
        truth[r : r + 6, c : c + 6] = k
        pred[r : r + 6, c + 1 : c + 7] = 10 + k  # shifted by one column: IoU = 30 / 42
    whole = cellseg_f1(pred, truth)
    tiled = cellseg_f1(pred, truth, whole_image_max_pixels=1000, tile_px=32)
    assert whole == tiled
    assert whole[0.7] == 1.0  # 30/42 = 0.714 >= 0.7
    assert whole[0.8] == 0.0


def test_tiled_mode_drops_cells_crossing_tile_edges():
    truth = np.zeros((80, 70), dtype=np.int32)
    truth[28:36, 10:16] = 1  # crosses the row-32 tile edge -> removed in tiled mode
    truth[10:16, 10:16] = 2
    counts = cellseg_match_counts(
        truth, truth, thresholds=[0.5], whole_image_max_pixels=1000, tile_px=32
    )[0]
    assert (counts.n_truth, counts.true_positives) == (1, 1)
    assert cellseg_match_counts(truth, truth, thresholds=[0.5])[0].n_truth == 2


@pytest.mark.parametrize("seed", range(6))
def test_tiled_mode_equals_official_tiling(seed):
    rng = np.random.default_rng(100 + seed)
    truth = _random_instances(rng, (80, 70), 40)
    pred = _perturb(rng, truth)
    for t in (0.5, 0.7, 0.9):
        expected = _official_f1(truth, pred, t, max_pixels=1000, roi=32)
        got = cellseg_f1(pred, truth, thresholds=[t], whole_image_max_pixels=1000, tile_px=32)
        assert got[t] == expected


# ---------------------------------------------------------------- agreement with the official code


@pytest.mark.parametrize("seed", range(25))
def test_equals_official_algorithm_on_random_maps(seed):
    rng = np.random.default_rng(seed)
    truth = _random_instances(rng, (int(rng.integers(20, 70)), int(rng.integers(20, 70))), 30)
    pred = _perturb(rng, truth)
    for t in (0.3, 0.5, 0.6, 0.7, 0.8, 0.9):
        assert cellseg_f1(pred, truth, thresholds=[t])[t] == _official_f1(truth, pred, t)


def test_large_ids_and_unsigned_dtypes_are_handled():
    truth = np.zeros((16, 16), dtype=np.uint32)
    truth[4:8, 4:8] = 2_000_000_000  # above the lookup-table fast path
    truth[9:12, 9:12] = 7
    pred = truth.astype(np.int64)
    assert cellseg_f1(pred, truth)[0.9] == 1.0


# ---------------------------------------------------------------- properties

_maps = st.integers(0, 2**32 - 1).map(
    lambda seed: _random_instances(np.random.default_rng(seed), (24, 24), 12, max_side=7)
)


@settings(max_examples=40, deadline=None)
@given(_maps, _maps)
def test_f1_is_bounded_and_symmetric(a, b):
    ab = cellseg_f1(a, b, decimals=None)
    ba = cellseg_f1(b, a, decimals=None)
    for t in ab:
        assert 0.0 <= ab[t] <= 1.0
        assert ab[t] == pytest.approx(ba[t], abs=1e-12)
    # F1 can only fall as the threshold rises
    values = [ab[t] for t in sorted(ab)]
    assert all(x >= y for x, y in itertools.pairwise(values))


@settings(max_examples=40, deadline=None)
@given(_maps, st.integers(0, 2**32 - 1))
def test_identity_is_best_and_ids_are_names_only(a, seed):
    has_cells = remove_boundary_instances(a).max() > 0
    expected = 1.0 if has_cells else 0.0
    assert cellseg_f1(a, a) == dict.fromkeys((0.5, 0.6, 0.7, 0.8, 0.9), expected)
    # permuting instance ids of the prediction changes nothing
    ids = np.unique(a)
    new_ids = np.random.default_rng(seed).permutation(np.arange(1, ids.size + 1) * 13)
    lookup = dict(zip(ids[ids > 0].tolist(), new_ids.tolist(), strict=False))
    renamed = np.vectorize(lambda v: lookup.get(v, 0))(a).astype(np.int64)
    assert cellseg_f1(renamed, a) == cellseg_f1(a, a)
