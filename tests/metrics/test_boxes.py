import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rexmle.metrics.boxes import boundary_iou, box_intersection_voxels, box_iou, box_voxels

locations = st.tuples(*[st.integers(-4, 6)] * 3)
sizes = st.tuples(*[st.integers(1, 9)] * 3)


def _shell_set(location, size, ratio):
    """The boundary shell as a voxel set, as the official `boundary_points_with_distances`."""
    depth = [math.ceil(s * ratio) for s in size]
    ranges = [range(loc, loc + s) for loc, s in zip(location, size, strict=True)]
    return {
        v
        for v in itertools.product(*ranges)
        if any(
            v[i] - location[i] < depth[i] or (location[i] + size[i] - 1) - v[i] < depth[i]
            for i in range(len(size))
        )
    }


def test_box_iou_by_hand():
    # A = [0..3] x [0..1] x [0..0] (8 voxels), B = [2..5] x [0..1] x [0..0] (8 voxels)
    # intersection [2..3] x [0..1] = 4 voxels; IoU = 4 / (8 + 8 - 4) = 1/3
    assert box_intersection_voxels((0, 0, 0), (4, 2, 1), (2, 0, 0), (4, 2, 1)) == 4
    assert box_iou((0, 0, 0), (4, 2, 1), (2, 0, 0), (4, 2, 1)) == pytest.approx(1 / 3)
    assert box_iou((0, 0, 0), (1, 1, 1), (0, 0, 0), (1, 1, 1)) == 1.0  # one voxel
    assert box_iou((0, 0, 0), (2, 2, 2), (2, 0, 0), (2, 2, 2)) == 0.0  # touching faces
    assert box_voxels((3, 4, 5)) == 60


def test_boundary_iou_spec_example_shift_by_two():
    # topcow.md: A = size (6, 3, 3) at 0, B = A shifted by 2 in x.
    # r = 0.2: d = (ceil(1.2), ceil(0.6), ceil(0.6)) = (2, 1, 1);
    # core(A) = x 2..3, y 1..1, z 1..1 (2 voxels); shell(A) = 54 - 2 = 52, same for B.
    # A∩B = x 2..5 (4*9 = 36); core(A)∩B = x 2..3 -> 2; A∩core(B) = core(B) x 4..5 -> 2;
    # core(A)∩core(B) = 0 -> shells intersect in 36 - 2 - 2 + 0 = 32; union 52 + 52 - 32 = 72
    assert boundary_iou((0, 0, 0), (6, 3, 3), (2, 0, 0), (6, 3, 3)) == pytest.approx(32 / 72)
    # r = 0.5: plain IoU = 36 / (54 + 54 - 36) = 0.5
    assert boundary_iou((0, 0, 0), (6, 3, 3), (2, 0, 0), (6, 3, 3), ratio=0.5) == 0.5


def test_boundary_iou_identity_and_disjoint():
    assert boundary_iou((5, -2, 7), (40, 30, 20), (5, -2, 7), (40, 30, 20)) == 1.0
    assert boundary_iou((0, 0, 0), (3, 3, 3), (10, 10, 10), (3, 3, 3)) == 0.0


@settings(max_examples=150, deadline=None)
@given(locations, sizes, locations, sizes, st.sampled_from([0.2, 0.3, 0.5]))
def test_boundary_iou_closed_form_equals_voxel_sets(la, sa, lb, sb, ratio):
    a = _shell_set(la, sa, ratio)
    b = _shell_set(lb, sb, ratio)
    expected = len(a & b) / len(a | b)
    got = boundary_iou(la, sa, lb, sb, ratio=ratio)
    assert got == pytest.approx(expected, abs=1e-12)
    assert got == pytest.approx(boundary_iou(lb, sb, la, sa, ratio=ratio))  # symmetric
    assert 0.0 <= got <= 1.0


@settings(max_examples=100, deadline=None)
@given(locations, sizes, locations, sizes, st.permutations([0, 1, 2]))
def test_box_iou_equals_ratio_half_and_is_permutation_invariant(la, sa, lb, sb, order):
    iou = box_iou(la, sa, lb, sb)
    assert iou == pytest.approx(boundary_iou(la, sa, lb, sb, ratio=0.5))

    def permute(t):
        return tuple(t[i] for i in order)

    assert box_iou(permute(la), permute(sa), permute(lb), permute(sb)) == pytest.approx(iou)


def test_large_boxes_cost_nothing():
    # 10^9 voxels per box: the closed form never builds voxel sets
    value = boundary_iou((0, 0, 0), (1000, 1000, 1000), (10, 0, 0), (1000, 1000, 1000))
    assert 0.0 < value < 1.0


@pytest.mark.parametrize(
    ("location", "size", "error"),
    [((0, 0, 0), (0, 1, 1), ValueError), ((0, 0), (1, 1, 1), ValueError),
     ((0.0, 0, 0), (1, 1, 1), TypeError), ((True, 0, 0), (1, 1, 1), TypeError)],
)  # fmt: skip
def test_invalid_boxes_are_rejected(location, size, error):
    with pytest.raises(error):
        boundary_iou(location, size, (0, 0, 0), (1, 1, 1))


def test_ratio_is_checked():
    with pytest.raises(ValueError, match="ratio"):
        boundary_iou((0, 0, 0), (2, 2, 2), (0, 0, 0), (2, 2, 2), ratio=0.0)
    with pytest.raises(ValueError, match="ratio"):
        boundary_iou((0, 0, 0), (2, 2, 2), (0, 0, 0), (2, 2, 2), ratio=0.6)
