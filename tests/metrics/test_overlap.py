import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from rexmle.metrics.overlap import (
    MicroDiceAccumulator,
    absolute_volume_difference_ml,
    class_average_dice,
    dice,
    iou,
    labels_present,
    per_label_dice,
    volume_ml,
    volume_mm3,
    volume_rmse,
)

masks = arrays(np.bool_, (4, 5, 3))
label_maps = arrays(np.uint8, (4, 5, 3), elements=st.integers(0, 4))
permutations = st.permutations([0, 1, 2])


# --- dice / iou --------------------------------------------------------------------------------


def test_dice_of_two_overlapping_boxes():
    truth = np.zeros((4, 4, 4), dtype=bool)
    pred = np.zeros_like(truth)
    truth[0, :2, :2] = True  # 4 voxels
    pred[0, :2, :3] = True  # 6 voxels, 4 shared
    # 2 * 4 / (4 + 6) = 0.8
    assert dice(pred, truth) == pytest.approx(0.8)
    # IoU = 4 / 6
    assert iou(pred, truth) == pytest.approx(4 / 6)


def test_dice_empty_cases():
    empty = np.zeros((3, 3), dtype=bool)
    one = empty.copy()
    one[1, 1] = True
    assert dice(empty, empty) == 1.0  # ISLES'22: both empty -> 1
    assert dice(empty, empty, empty_value=0.0) == 0.0
    assert dice(one, empty) == 0.0
    assert dice(empty, one) == 0.0
    assert dice(one, one) == 1.0  # one voxel against itself
    assert iou(empty, empty) == 1.0
    assert iou(one, empty) == 0.0


def test_dice_rejects_shape_mismatch_naming_both_shapes():
    with pytest.raises(ValueError, match=r"\(3, 3\).*\(3, 4\)"):
        dice(np.zeros((3, 3), bool), np.zeros((3, 4), bool))


def test_dice_rejects_non_boolean_masks():
    with pytest.raises(TypeError, match="bool"):
        dice(np.zeros((3, 3), np.uint8), np.zeros((3, 3), bool))


@settings(max_examples=100, deadline=None)
@given(masks, masks)
def test_dice_and_iou_are_symmetric_bounded_and_related(a, b):
    d = dice(a, b)
    j = iou(a, b)
    assert 0.0 <= d <= 1.0
    assert d == pytest.approx(dice(b, a))
    assert j == pytest.approx(iou(b, a))
    # Dice = 2J / (1 + J) whenever the union is not empty
    if (a | b).any():
        assert d == pytest.approx(2 * j / (1 + j))
    assert dice(a, a) == 1.0


@settings(max_examples=100, deadline=None)
@given(masks, masks, permutations)
def test_dice_is_invariant_under_axis_permutation(a, b, order):
    assert dice(a.transpose(order), b.transpose(order)) == pytest.approx(dice(a, b))


# --- volumes -------------------------------------------------------------------------------------


def test_absolute_volume_difference_on_an_anisotropic_grid():
    truth = np.zeros((4, 4, 4), dtype=bool)
    pred = np.zeros_like(truth)
    truth[0, :2, :2] = True  # 4 voxels
    pred[0, :3, :2] = True  # 6 voxels
    # voxel = 2.0 * 0.5 * 0.5 mm^3 = 0.5 mm^3 = 0.0005 ml; |6 - 4| * 0.0005 = 0.001 ml
    assert absolute_volume_difference_ml(pred, truth, voxel_volume_ml=0.0005) == pytest.approx(
        0.001, abs=1e-15
    )


def test_absolute_volume_difference_empty_cases():
    empty = np.zeros((3, 3, 3), dtype=bool)
    full = np.ones((3, 3, 3), dtype=bool)
    assert absolute_volume_difference_ml(empty, empty, voxel_volume_ml=1.0) == 0.0
    # one empty: the other's volume, 27 voxels * 0.002 ml
    assert absolute_volume_difference_ml(full, empty, voxel_volume_ml=0.002) == pytest.approx(0.054)
    assert absolute_volume_difference_ml(empty, full, voxel_volume_ml=0.002) == pytest.approx(0.054)


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan])
def test_volume_rejects_a_bad_voxel_volume(bad):
    empty = np.zeros((2, 2), dtype=bool)
    with pytest.raises(ValueError, match="voxel_volume_ml"):
        absolute_volume_difference_ml(empty, empty, voxel_volume_ml=bad)


@settings(max_examples=100, deadline=None)
@given(masks, masks, st.floats(1e-4, 10.0))
def test_avd_is_symmetric_nonnegative_and_zero_on_itself(a, b, v):
    d = absolute_volume_difference_ml(a, b, voxel_volume_ml=v)
    assert d >= 0.0
    assert d == pytest.approx(absolute_volume_difference_ml(b, a, voxel_volume_ml=v))
    assert absolute_volume_difference_ml(a, a, voxel_volume_ml=v) == 0.0
    # scaling the voxel volume scales the difference
    assert absolute_volume_difference_ml(a, b, voxel_volume_ml=2 * v) == pytest.approx(2 * d)


def test_volume_in_ml_and_mm3():
    mask = np.zeros((5, 5, 5), dtype=bool)
    mask[1:3, 1:4, 2] = True  # 6 voxels
    # voxel 0.8 * 0.8 * 3.0 = 1.92 mm^3 -> 6 * 1.92 = 11.52 mm^3 = 0.01152 ml
    assert volume_mm3(mask, voxel_volume_mm3=1.92) == pytest.approx(11.52)
    assert volume_ml(mask, voxel_volume_ml=0.00192) == pytest.approx(0.01152)
    assert volume_ml(np.zeros((2, 2), bool), voxel_volume_ml=1.0) == 0.0


def test_volume_rmse_by_hand():
    # errors 3, -4, 0 -> squares 9, 16, 0 -> mean 25/3 -> sqrt = 2.8867513...
    assert volume_rmse([13.0, 6.0, 5.0], [10.0, 10.0, 5.0]) == pytest.approx(math.sqrt(25 / 3))
    assert volume_rmse([1.5], [1.5]) == 0.0


def test_volume_rmse_rejects_bad_input():
    with pytest.raises(ValueError, match="at least one"):
        volume_rmse([], [])
    with pytest.raises(ValueError, match="equal length"):
        volume_rmse([1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="finite"):
        volume_rmse([math.nan], [1.0])


# --- label maps ----------------------------------------------------------------------------------


def test_per_label_and_class_average_dice_use_the_union_of_labels():
    truth = np.array([[1, 1, 2, 0], [0, 0, 2, 0]], dtype=np.uint8)
    pred = np.array([[1, 0, 2, 3], [0, 0, 2, 0]], dtype=np.uint8)
    # label 1: 2*1/(2+1) = 2/3; label 2: 2*2/(2+2) = 1; label 3 (pred only): 0
    scores = per_label_dice(pred, truth)
    assert scores == pytest.approx({1: 2 / 3, 2: 1.0, 3: 0.0})
    # class average over L = {1, 2, 3}: (2/3 + 1 + 0) / 3 = 5/9
    assert class_average_dice(pred, truth) == pytest.approx(5 / 9)


def test_class_average_dice_of_two_empty_maps_is_zero():
    empty = np.zeros((3, 3), dtype=np.uint8)
    assert class_average_dice(empty, empty) == 0.0  # TopCoW/TopBrain: L empty -> 0
    # an explicitly requested label absent from both -> empty_value
    assert per_label_dice(empty, empty, labels=[5]) == {5: 1.0}


def test_per_label_dice_with_large_and_signed_labels():
    truth = np.array([70000, 70000, -1, 0], dtype=np.int64)
    pred = np.array([70000, 0, -1, 0], dtype=np.int64)
    # 70000: 2*1/(2+1); -1: 1
    assert per_label_dice(pred, truth) == pytest.approx({-1: 1.0, 70000: 2 / 3})


@settings(max_examples=100, deadline=None)
@given(label_maps, label_maps)
def test_per_label_dice_matches_binary_dice(a, b):
    scores = per_label_dice(a, b)
    assert set(scores) == (labels_present(a) | labels_present(b))
    for label, value in scores.items():
        assert value == pytest.approx(dice(a == label, b == label))
    assert class_average_dice(a, a) == (1.0 if labels_present(a) else 0.0)


# --- PUMA micro Dice -----------------------------------------------------------------------------


def test_micro_dice_pools_counts_over_cases():
    acc = MicroDiceAccumulator(classes=[1, 2, 3])
    acc.add(np.array([[1, 1], [2, 0]]), np.array([[1, 0], [2, 2]]))
    acc.add(np.array([[1, 3], [0, 0]]), np.array([[1, 1], [0, 0]]))
    # class 1: I = 1 + 1 = 2; S = (2 + 1) + (1 + 2) = 6 -> (4 + 1e-5) / (6 + 1e-5)
    # class 2: I = 1; S = (1 + 2) + 0 = 3 -> (2 + 1e-5) / (3 + 1e-5)
    # class 3: I = 0 -> 0 (pred only)
    expected = {1: (4 + 1e-5) / (6 + 1e-5), 2: (2 + 1e-5) / (3 + 1e-5), 3: 0.0}
    assert acc.per_class() == pytest.approx(expected, rel=1e-12)
    assert acc.mean() == pytest.approx(sum(expected.values()) / 3, rel=1e-12)


def test_micro_dice_of_no_case_and_of_a_missing_class_is_zero():
    acc = MicroDiceAccumulator(classes=[1, 2, 3, 4, 5])
    assert acc.mean() == 0.0
    acc.add(np.ones((2, 2), np.uint8), np.ones((2, 2), np.uint8))
    # class 1 perfect: (8 + eps) / (8 + eps) = 1; classes 2..5 absent -> 0; mean = 1/5
    assert acc.mean() == pytest.approx(0.2)


def test_micro_dice_rejects_bad_classes():
    with pytest.raises(ValueError, match="distinct"):
        MicroDiceAccumulator(classes=[1, 1])
    with pytest.raises(TypeError, match="integer"):
        MicroDiceAccumulator(classes=[1]).add(np.zeros(2), np.zeros(2))
