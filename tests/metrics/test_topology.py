import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import ndimage
from skimage.morphology import skeletonize

from rexmle.metrics.topology import (
    betti_numbers,
    bounding_box,
    class_average_b0_error,
    cldice,
    component_count,
    connected_components,
    invalid_neighbor_error,
    label_boxes,
    label_neighbors,
    per_label_b0_error,
    per_label_cldice,
    union_bounding_box,
)

masks3 = arrays(np.bool_, (6, 5, 4))
masks2 = arrays(np.bool_, (7, 6))
label_maps = arrays(np.uint8, (6, 5, 4), elements=st.integers(0, 4))

SCIPY_STRUCTURE = {
    (2, 4): ndimage.generate_binary_structure(2, 1),
    (2, 8): ndimage.generate_binary_structure(2, 2),
    (3, 6): ndimage.generate_binary_structure(3, 1),
    (3, 18): ndimage.generate_binary_structure(3, 2),
    (3, 26): ndimage.generate_binary_structure(3, 3),
}


def _same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    """Two label arrays describe the same components (up to renumbering)."""
    if not np.array_equal(a == 0, b == 0):
        return False
    pairs = np.unique(np.stack([a[a > 0], b[b > 0]]), axis=1)
    return len(set(pairs[0])) == pairs.shape[1] == len(set(pairs[1]))


# --- connected components ------------------------------------------------------------------------


def test_component_count_by_hand():
    mask = np.zeros((3, 3, 3), dtype=bool)
    mask[0, 0, 0] = mask[0, 1, 0] = True  # face contact
    mask[1, 1, 1] = True  # edge contact with (0, 1, 0), corner contact with (0, 0, 0)
    # 26: one component; 18: face + edge -> one; 6: {(0,0,0), (0,1,0)} and {(1,1,1)} -> two
    assert component_count(mask, connectivity=26) == 1
    assert component_count(mask, connectivity=18) == 1
    assert component_count(mask, connectivity=6) == 2
    assert component_count(np.zeros((2, 2), bool), connectivity=4) == 0


def test_component_count_of_strided_views():
    # a (4, 1, 1) strided view with voxels 0 and 3 set: two components for every connectivity
    # (cc3d alone counts one on such a view, so the functions hand it contiguous arrays)
    mask = np.zeros((6, 5, 4), dtype=bool)
    mask[0, 0, 0] = mask[3, 0, 0] = True
    view = mask[0:4, 0:1, 0:1]
    assert component_count(mask, connectivity=26) == 2
    assert component_count(view, connectivity=26) == 2
    assert connected_components(view, connectivity=6)[1] == 2


def test_connected_components_reject_wrong_connectivity_and_dtype():
    with pytest.raises(ValueError, match=r"\(6, 18, 26\)"):
        connected_components(np.zeros((2, 2, 2), bool), connectivity=8)
    with pytest.raises(ValueError, match=r"\(4, 8\)"):
        connected_components(np.zeros((2, 2), bool), connectivity=26)
    with pytest.raises(TypeError, match="bool"):
        connected_components(np.zeros((2, 2), np.uint8), connectivity=4)
    with pytest.raises(ValueError, match="2-D or 3-D"):
        connected_components(np.zeros(4, bool), connectivity=4)


@settings(max_examples=100, deadline=None)
@given(masks3, st.sampled_from([6, 18, 26]))
def test_connected_components_match_scipy_label_3d(mask, connectivity):
    labels, count = connected_components(mask, connectivity=connectivity)
    reference, reference_count = ndimage.label(mask, SCIPY_STRUCTURE[(3, connectivity)])
    assert count == reference_count
    assert _same_partition(labels, reference)


@settings(max_examples=100, deadline=None)
@given(masks2, st.sampled_from([4, 8]))
def test_connected_components_match_scipy_label_2d(mask, connectivity):
    labels, count = connected_components(mask, connectivity=connectivity)
    reference, reference_count = ndimage.label(mask, SCIPY_STRUCTURE[(2, connectivity)])
    assert count == reference_count
    assert _same_partition(labels, reference)


@settings(max_examples=100, deadline=None)
@given(masks3, st.permutations([0, 1, 2]))
def test_component_count_is_invariant_under_axis_permutation(mask, order):
    for connectivity in (6, 18, 26):
        assert component_count(mask.transpose(order), connectivity=connectivity) == (
            component_count(mask, connectivity=connectivity)
        )


# --- Betti-0 error per label ---------------------------------------------------------------------


def test_per_label_b0_error_by_hand():
    truth = np.zeros((3, 5, 1), dtype=np.uint8)
    pred = np.zeros_like(truth)
    truth[0, 0, 0] = truth[0, 4, 0] = 1  # label 1: 2 components
    pred[0, 0, 0] = 1  # label 1: 1 component
    pred[2, :, 0] = 2  # label 2: prediction only, 1 component
    truth[1, 2, 0] = 3  # label 3: GT only, 1 component
    # |1 - 2| = 1, |1 - 0| = 1, |0 - 1| = 1
    assert per_label_b0_error(pred, truth) == {1: 1, 2: 1, 3: 1}
    assert class_average_b0_error(pred, truth) == pytest.approx(1.0)
    # label 7 absent from both: 0
    assert per_label_b0_error(pred, truth, labels=[7]) == {7: 0}


def test_class_average_b0_error_of_empty_maps_is_zero():
    empty = np.zeros((2, 2, 2), dtype=np.uint8)
    assert class_average_b0_error(empty, empty) == 0.0


@settings(max_examples=100, deadline=None)
@given(label_maps, label_maps)
def test_per_label_b0_error_equals_full_volume_counts(a, b):
    errors = per_label_b0_error(a, b)
    labels = sorted((set(np.unique(a)) | set(np.unique(b))) - {0})
    assert list(errors) == labels
    for label in labels:
        full_a = ndimage.label(a == label, SCIPY_STRUCTURE[(3, 26)])[1]
        full_b = ndimage.label(b == label, SCIPY_STRUCTURE[(3, 26)])[1]
        assert errors[label] == abs(full_a - full_b)


def test_label_boxes_cover_both_maps_with_margin():
    a = np.zeros((10, 10), dtype=np.uint8)
    b = np.zeros_like(a)
    a[2, 3] = 5
    b[6, 1] = 5
    b[0, 9] = 1
    boxes = label_boxes(a, b, margin=1)
    # label 5: rows 2..6, cols 1..3 -> grown by 1: rows 1..7, cols 0..4 (clipped at 0)
    assert boxes[5] == (slice(1, 8), slice(0, 5))
    # label 1 at the corner: rows 0..1, cols 8..9 (clipped at both borders)
    assert boxes[1] == (slice(0, 2), slice(8, 10))


# --- Betti numbers -------------------------------------------------------------------------------


def test_betti_numbers_of_basic_shapes():
    z, y, x = np.ogrid[:24, :24, :24]
    radius = np.sqrt((z - 12.0) ** 2 + (y - 12.0) ** 2)
    torus = (radius - 7) ** 2 + (x - 12.0) ** 2 <= 6
    ball = (z - 12.0) ** 2 + (y - 12.0) ** 2 + (x - 12.0) ** 2
    hollow = (ball <= 81) & (ball >= 16)
    two_balls = np.zeros((9, 9, 9), dtype=bool)
    two_balls[1:3, 1:3, 1:3] = two_balls[5:8, 5:8, 5:8] = True
    assert betti_numbers(torus) == (1, 1, 0)  # one loop
    assert betti_numbers(hollow) == (1, 0, 1)  # one cavity
    assert betti_numbers(two_balls) == (2, 0, 0)
    assert betti_numbers(np.zeros((3, 3, 3), bool)) == (0, 0, 0)
    one = np.zeros((3, 3, 3), bool)
    one[0, 0, 0] = True  # one voxel at the border
    assert betti_numbers(one) == (1, 0, 0)


# --- clDice -------------------------------------------------------------------------------------


def _cldice_full_volume(pred, truth):
    """ClDice with skeletons of the whole arrays (no cropping)."""
    sp = skeletonize(pred).astype(bool)
    sg = skeletonize(truth).astype(bool)
    tprec = (sp & truth).sum() / sp.sum() if sp.sum() else 0.0
    tsens = (sg & pred).sum() / sg.sum() if sg.sum() else 0.0
    return 0.0 if tprec + tsens == 0 else 2 * tprec * tsens / (tprec + tsens)


def test_cldice_of_a_half_line():
    truth = np.zeros((3, 10, 3), dtype=bool)
    truth[1, 1:7, 1] = True  # a 6-voxel line, its own skeleton
    pred = np.zeros_like(truth)
    pred[1, 1:4, 1] = True  # the first 3 voxels
    # Tprec = |S_P ∩ G| / |S_P| = 3/3 = 1; Tsens = |S_G ∩ P| / |S_G| = 3/6
    # clDice = 2 * 1 * 0.5 / 1.5 = 2/3
    assert cldice(pred, truth) == pytest.approx(2 / 3)
    assert cldice(truth, truth) == 1.0


def test_cldice_empty_cases():
    empty = np.zeros((4, 4, 4), dtype=bool)
    cube = empty.copy()
    cube[1:3, 1:3, 1:3] = True
    assert cldice(empty, cube) == 0.0
    assert cldice(cube, empty) == 0.0
    assert cldice(empty, empty) == 0.0
    disjoint = empty.copy()
    disjoint[0, 0, 0] = True
    assert cldice(disjoint, cube) == 0.0  # Tprec = Tsens = 0


@settings(max_examples=40, deadline=None)
@given(
    arrays(np.bool_, (9, 8, 7), elements=st.booleans()),
    arrays(np.bool_, (9, 8, 7), elements=st.booleans()),
)
def test_cldice_on_cropped_boxes_equals_full_volume(a, b):
    a = ndimage.binary_dilation(a & (np.arange(7) % 3 == 0))
    b = ndimage.binary_dilation(b & (np.arange(7) % 2 == 0))
    value = cldice(a, b)
    assert 0.0 <= value <= 1.0
    assert value == pytest.approx(_cldice_full_volume(a, b), abs=1e-12)
    assert value == pytest.approx(cldice(b, a))  # symmetric: Tprec and Tsens swap


def test_per_label_cldice_scores_labels_and_absent_labels():
    truth = np.zeros((3, 12, 3), dtype=np.uint8)
    pred = np.zeros_like(truth)
    truth[1, 1:7, 1] = 4
    pred[1, 1:4, 1] = 4  # same as the half line: 2/3
    pred[1, 9, 1] = 6  # prediction only -> 0
    assert per_label_cldice(pred, truth) == pytest.approx({4: 2 / 3, 6: 0.0})


# --- neighbours ---------------------------------------------------------------------------------


def _brute_force_neighbors(label_map):
    result = {int(v): set() for v in np.unique(label_map) if v}
    coords = list(itertools.product(*[range(n) for n in label_map.shape]))
    for p in coords:
        for q in coords:
            a, b = int(label_map[p]), int(label_map[q])
            if a and b and a != b and max(abs(i - j) for i, j in zip(p, q, strict=True)) == 1:
                result[a].add(b)
    return result


def test_label_neighbors_and_invalid_neighbor_error_by_hand():
    labels = np.zeros((1, 6), dtype=np.uint8)
    labels[0, :] = [1, 2, 2, 3, 0, 4]
    # 1-2 and 2-3 touch; 4 is alone
    assert label_neighbors(labels) == {1: {2}, 2: {1, 3}, 3: {2}, 4: set()}
    table = {1: [2], 2: [1], 3: [], 4: [1]}
    # NbErr: 1 -> 0; 2 -> |{1,3} - {1}| = 1; 3 -> |{2}| = 1; 4 -> 0; mean = 2/4
    assert invalid_neighbor_error(labels, table) == pytest.approx(0.5)


def test_invalid_neighbor_error_empty_and_missing_table_entry():
    assert invalid_neighbor_error(np.zeros((3, 3, 3), np.uint8), {}) == 0.0
    with pytest.raises(ValueError, match=r"\[7\]"):
        invalid_neighbor_error(np.full((2, 2), 7, np.uint8), {1: []})


def test_label_neighbors_use_the_26_neighbourhood():
    labels = np.zeros((2, 2, 2), dtype=np.uint8)
    labels[0, 0, 0] = 1
    labels[1, 1, 1] = 2  # corner contact only
    assert label_neighbors(labels) == {1: {2}, 2: {1}}


@settings(max_examples=30, deadline=None)
@given(arrays(np.uint8, (3, 4, 3), elements=st.integers(0, 4)))
def test_label_neighbors_match_brute_force(label_map):
    assert label_neighbors(label_map) == _brute_force_neighbors(label_map)


def _box_from_points(mask: np.ndarray, margin: int) -> tuple[slice, ...] | None:
    """The bounding box by its definition: min and max index of the True voxels per axis."""
    points = np.argwhere(mask)
    if points.size == 0:
        return None
    return tuple(
        slice(max(int(lo) - margin, 0), min(int(hi) + 1 + margin, n))
        for lo, hi, n in zip(points.min(axis=0), points.max(axis=0), mask.shape, strict=True)
    )


@settings(max_examples=80, deadline=None)
@given(
    arrays(np.bool_, st.tuples(*[st.integers(1, 6)] * 3), elements=st.booleans()),
    st.integers(0, 3),
    st.booleans(),
)
def test_bounding_box_is_the_extent_of_the_true_voxels(mask, margin, fortran) -> None:
    mask = np.asfortranarray(mask) if fortran else mask
    assert bounding_box(mask, margin=margin) == _box_from_points(mask, margin)


@settings(max_examples=80, deadline=None)
@given(
    arrays(np.bool_, (4, 5, 6), elements=st.booleans()),
    arrays(np.bool_, (4, 5, 6), elements=st.booleans()),
    st.integers(0, 3),
)
def test_union_bounding_box_is_the_box_of_the_union(first, second, margin) -> None:
    assert union_bounding_box(first, second, margin=margin) == _box_from_points(
        first | second, margin
    )


def test_union_bounding_box_refuses_masks_of_different_shapes() -> None:
    with pytest.raises(ValueError, match="differ in shape"):
        union_bounding_box(np.zeros((3, 4), bool), np.zeros((4, 3), bool))


@pytest.mark.parametrize("shape", [(7,), (5, 4), (3, 4, 5, 2)])
def test_bounding_box_in_any_dimension_and_of_empty_arrays(shape) -> None:
    rng = np.random.default_rng(len(shape))
    mask = rng.random(shape) > 0.8
    assert bounding_box(mask) == _box_from_points(mask, 0)
    assert bounding_box(np.zeros(shape, bool)) is None
    assert bounding_box(np.zeros((0, 3), bool)) is None
