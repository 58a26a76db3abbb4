import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis.extra.numpy import arrays
from scipy import ndimage

from rexmle.metrics.lesions import (
    DetectionOutcome,
    detection_f1,
    label_detection,
    lesion_count_difference,
    lesion_counts,
    lesion_f1,
    lesion_f1_from_counts,
    lesion_tally,
)

masks = arrays(np.bool_, (5, 4, 4))


def _isles_loop_reference(pred, truth, structure):
    """Per-component loop of the official ISLES'22 code, with scipy labelling."""
    truth_labels, n_truth = ndimage.label(truth, structure)
    pred_labels, n_pred = ndimage.label(pred, structure)
    tp = sum(1 for i in range(1, n_truth + 1) if (pred & (truth_labels == i)).any())
    fp = sum(1 for i in range(1, n_pred + 1) if not (truth & (pred_labels == i)).any())
    return tp, fp, n_truth - tp


def test_lesion_counts_by_hand_with_a_diagonal_pair():
    truth = np.zeros((5, 5, 5), dtype=bool)
    pred = np.zeros_like(truth)
    truth[0, 0, 0] = truth[1, 1, 1] = True  # touching only at a corner: one 26-lesion
    truth[4, 4, 4] = True  # second lesion, missed
    pred[1, 1, 1] = True  # hits the first lesion
    pred[3, 0, 0] = True  # false positive
    # 26-conn: G lesions {diag pair, corner}; TP = 1, FN = 1; P lesions: 1 hit + 1 FP
    assert lesion_counts(pred, truth) == (1, 1, 1)
    # F1 = 1 / (1 + (1 + 1) / 2) = 0.5
    assert lesion_f1(pred, truth) == pytest.approx(0.5)
    # |2 - 2| = 0
    assert lesion_count_difference(pred, truth) == 0
    # 6-conn: the diagonal pair splits, G has 3 lesions: TP 1, FN 2, FP 1
    assert lesion_counts(pred, truth, connectivity=6) == (1, 1, 2)
    assert lesion_count_difference(pred, truth, connectivity=6) == 1


def test_lesion_empty_cases():
    empty = np.zeros((3, 3, 3), dtype=bool)
    two = empty.copy()
    two[0, 0, 0] = two[2, 2, 2] = True  # two lesions
    assert lesion_f1(empty, empty) == 1.0  # both empty -> 1 (official)
    assert lesion_f1(two, empty) == 0.0  # FP only
    assert lesion_f1(empty, two) == 0.0  # FN only
    assert lesion_count_difference(empty, empty) == 0
    assert lesion_count_difference(two, empty) == 2
    assert lesion_count_difference(empty, two) == 2


def test_one_voxel_lesion_found():
    truth = np.zeros((3, 3, 3), dtype=bool)
    truth[1, 1, 1] = True
    assert lesion_f1(truth.copy(), truth) == 1.0


def test_several_predictions_on_one_lesion_are_not_false_positives():
    truth = np.zeros((1, 7), dtype=bool)
    truth[0, 1:6] = True
    pred = np.zeros_like(truth)
    pred[0, 1] = pred[0, 5] = True
    # 2-D, 8-conn: one GT lesion hit (TP 1), two predicted components both touch it (FP 0)
    assert lesion_counts(pred, truth, connectivity=8) == (1, 0, 0)
    assert lesion_count_difference(pred, truth, connectivity=8) == 1


def test_connectivity_is_checked_against_dimensionality():
    mask = np.zeros((3, 3), dtype=bool)
    with pytest.raises(ValueError, match="connectivity"):
        lesion_f1(mask, mask)  # 26 for a 2-D array
    with pytest.raises(ValueError, match=r"\(3, 3\).*\(3, 4\)"):
        lesion_f1(mask, np.zeros((3, 4), bool), connectivity=8)


@settings(max_examples=100, deadline=None)
@given(masks, masks)
def test_lesion_counts_match_the_official_loop_with_scipy_labels(a, b):
    structure = np.ones((3, 3, 3), dtype=bool)
    assert lesion_counts(a, b) == _isles_loop_reference(a, b, structure)
    structure6 = ndimage.generate_binary_structure(3, 1)
    assert lesion_counts(a, b, connectivity=6) == _isles_loop_reference(a, b, structure6)


@settings(max_examples=100, deadline=None)
@given(masks, masks)
def test_lesion_metrics_symmetry_bounds_identity(a, b):
    f1 = lesion_f1(a, b)
    assert 0.0 <= f1 <= 1.0
    assert lesion_f1(a, a) == 1.0
    assert lesion_count_difference(a, a) == 0
    assert lesion_count_difference(a, b) == lesion_count_difference(b, a)
    # every GT lesion is either found or missed
    tp, _, fn = lesion_counts(a, b)
    assert tp + fn == lesion_count_difference(np.zeros_like(b), b)


# --- label detection ---------------------------------------------------------------------------


def test_label_detection_outcomes_at_iou_quarter():
    truth = np.array([8, 8, 8, 8, 0, 0, 10, 0], dtype=np.uint8)
    pred = np.array([8, 0, 0, 0, 9, 0, 0, 0], dtype=np.uint8)
    # label 8: IoU = 1 / 4 = 0.25 >= 0.25 -> TP
    assert label_detection(pred, truth, 8) is DetectionOutcome.TP
    # label 9: absent from G, present in P -> FP
    assert label_detection(pred, truth, 9) is DetectionOutcome.FP
    # label 10: in G, absent from P -> IoU 0 -> FN
    assert label_detection(pred, truth, 10) is DetectionOutcome.FN
    # label 15: absent from both -> TN
    assert label_detection(pred, truth, 15) is DetectionOutcome.TN
    # just below the threshold: IoU = 1 / 5 = 0.2 -> FN
    truth5 = np.array([8, 8, 8, 8, 8], dtype=np.uint8)
    pred5 = np.array([8, 0, 0, 0, 0], dtype=np.uint8)
    assert label_detection(pred5, truth5, 8) is DetectionOutcome.FN


def test_detection_f1_by_hand():
    # 2*3 / (2*3 + 1 + 2) = 6/9
    assert detection_f1(3, 1, 2) == pytest.approx(6 / 9)
    assert detection_f1(0, 0, 0) == 0.0  # official: a label never seen scores 0
    with pytest.raises(ValueError, match=">= 0"):
        detection_f1(-1, 0, 0)


def test_lesion_tally_counts_components_not_hits():
    # one predicted lesion bridges two reference lesions: 2 TP, yet 1 predicted lesion
    truth = np.zeros((6, 6, 12), dtype=bool)
    truth[1:3, 1:3, 1:3] = True
    truth[1:3, 1:3, 8:10] = True
    pred = np.zeros_like(truth)
    pred[1:3, 1:3, 1:10] = True
    tally = lesion_tally(pred, truth, connectivity=26)
    assert (
        (tally.tp, tally.fp, tally.fn) == lesion_counts(pred, truth, connectivity=26) == (2, 0, 0)
    )
    assert (tally.n_truth, tally.n_pred) == (2, 1)
    assert tally.count_difference == lesion_count_difference(pred, truth) == 1
    assert lesion_f1_from_counts(tally.tp, tally.fp, tally.fn) == lesion_f1(pred, truth) == 1.0
    assert lesion_f1_from_counts(0, 0, 0, empty_value=0.5) == 0.5
