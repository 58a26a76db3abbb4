import math
import warnings
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import ndimage

from rexmle.metrics import surface
from rexmle.metrics.surface import (
    average_symmetric_surface_distance,
    class_average_hd95,
    hausdorff_distance,
    hausdorff_distance_95,
    per_label_hd95,
    surface_distances,
    surfel_distances,
    surfel_scores,
    volume_diagonal_mm,
    voxel_surface,
)

spacing_values = st.sampled_from([0.4, 0.5, 0.8, 1.0, 2.0, 3.0])
spacings3 = st.tuples(spacing_values, spacing_values, spacing_values)
masks3 = arrays(np.bool_, (6, 5, 4))


def _cube_pair():
    """A 4×4×4 cube and the same cube shifted by one voxel along axis 0."""
    truth = np.zeros((10, 10, 10), dtype=bool)
    truth[2:6, 2:6, 2:6] = True
    pred = np.zeros_like(truth)
    pred[3:7, 2:6, 2:6] = True
    return pred, truth


def _scipy_directed(a, b, spacing, connectivity):
    """Reference: scipy erosion (border_value=0) and scipy's float64 EDT on the full array."""
    rank = {4: 1, 8: 2, 6: 1, 18: 2, 26: 3}[connectivity]
    structure = ndimage.generate_binary_structure(a.ndim, rank)
    surface_a = a & ~ndimage.binary_erosion(a, structure, border_value=0)
    surface_b = b & ~ndimage.binary_erosion(b, structure, border_value=0)
    a_to_b = ndimage.distance_transform_edt(~surface_b, sampling=spacing)[surface_a]
    b_to_a = ndimage.distance_transform_edt(~surface_a, sampling=spacing)[surface_b]
    return a_to_b, b_to_a


def _deepmind(truth, pred, spacing):
    """The `surface_distance` package, with aliases that numpy 2 and scipy dropped."""
    import surface_distance

    with (
        mock.patch.object(np, "Inf", np.inf, create=True),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore", DeprecationWarning)
        distances = surface_distance.compute_surface_distances(truth, pred, spacing)
        return distances, {
            "surface_dice": surface_distance.compute_surface_dice_at_tolerance(distances, 5.0),
            "hd95": surface_distance.compute_robust_hausdorff(distances, 95),
            "masd": float(np.mean(surface_distance.compute_average_surface_distance(distances))),
        }


def _blobs(shape, seed, count=2):
    """A few ellipsoids at seeded random places (sparse surfaces: the k-d tree path)."""
    rng = np.random.default_rng(seed)
    grid = np.ogrid[tuple(slice(0, n) for n in shape)]
    mask = np.zeros(shape, dtype=bool)
    for _ in range(count):
        centre = rng.uniform(3, np.array(shape) - 3)
        radii = rng.uniform(1.5, 6, size=len(shape))
        mask |= sum(((g - c) / r) ** 2 for g, c, r in zip(grid, centre, radii, strict=True)) <= 1
    return mask


# --- hand-computed values ----------------------------------------------------------------------


def test_two_single_voxels_on_an_anisotropic_grid():
    pred = np.zeros((1, 1, 5), dtype=bool)
    truth = np.zeros_like(pred)
    pred[0, 0, 0] = True
    truth[0, 0, 3] = True
    # 3 voxels apart along axis 2 with spacing 2 mm -> 6 mm in every statistic
    spacing = (1.0, 1.0, 2.0)
    assert hausdorff_distance(pred, truth, spacing_mm=spacing) == pytest.approx(6.0)
    assert hausdorff_distance_95(pred, truth, spacing_mm=spacing) == pytest.approx(6.0)
    assert average_symmetric_surface_distance(pred, truth, spacing_mm=spacing) == pytest.approx(6)


def test_cube_shifted_by_one_slice():
    pred, truth = _cube_pair()
    spacing = (2.5, 0.8, 0.8)
    # SEG.A HD: the end face of each cube is one slice (2.5 mm) from the other's end face
    assert hausdorff_distance(pred, truth, spacing_mm=spacing) == pytest.approx(2.5)
    # 26-surfaces: 56 voxels per cube; per direction 16 end-face voxels at 2.5 mm, the 4 inner
    # voxels of the opposite face at 0.8 mm (their in-plane neighbour is on the other surface),
    # 36 at 0. np.percentile(95) of 56 values: position 52.25, both neighbours 2.5 -> 2.5
    assert hausdorff_distance_95(pred, truth, spacing_mm=spacing) == pytest.approx(2.5)
    # ASSD = 2 * (16 * 2.5 + 4 * 0.8) / 112 = 43.2 / 56
    assert average_symmetric_surface_distance(pred, truth, spacing_mm=spacing) == pytest.approx(
        43.2 / 56
    )


def test_voxel_surface_of_a_cube_and_at_the_border():
    cube = np.zeros((6, 6, 6), dtype=bool)
    cube[1:5, 1:5, 1:5] = True
    # 4^3 - 2^3 = 56 surface voxels for both neighbourhoods
    assert voxel_surface(cube, connectivity=6).sum() == 56
    assert voxel_surface(cube, connectivity=26).sum() == 56
    full = np.ones((3, 3, 3), dtype=bool)
    # the array border counts as background: only the centre voxel is interior
    assert voxel_surface(full, connectivity=6).sum() == 26
    # a plus-shaped 2-D mask: the centre is interior for 4- but not for 8-connectivity
    plus = np.zeros((3, 3), dtype=bool)
    plus[1, :] = plus[:, 1] = True
    assert not voxel_surface(np.pad(plus, 1), connectivity=4)[2, 2]
    assert voxel_surface(np.pad(plus, 1), connectivity=8)[2, 2]


def test_empty_policies():
    empty = np.zeros((10, 10, 10), dtype=bool)
    _, truth = _cube_pair()
    spacing = (2.5, 0.8, 0.8)
    diagonal = math.sqrt(25.0**2 + 8.0**2 + 8.0**2)  # 10 voxels per axis
    assert volume_diagonal_mm(empty.shape, spacing) == pytest.approx(diagonal)
    # SEG.A: empty prediction -> volume diagonal; both empty -> 0
    assert hausdorff_distance(empty, truth, spacing_mm=spacing) == pytest.approx(diagonal)
    assert hausdorff_distance(truth, empty, spacing_mm=spacing) == pytest.approx(diagonal)
    assert hausdorff_distance(empty, empty, spacing_mm=spacing) == 0.0
    assert hausdorff_distance(empty, truth, spacing_mm=spacing, one_empty_value_mm=7.0) == 7.0
    # TopCoW 90 mm / TopBrain 290 mm for a mask absent on either side
    assert hausdorff_distance_95(empty, truth, spacing_mm=spacing) == 90.0
    assert hausdorff_distance_95(truth, empty, spacing_mm=spacing, absent_value_mm=290.0) == 290
    assert average_symmetric_surface_distance(empty, empty, spacing_mm=spacing) == 0.0
    with pytest.raises(ValueError, match="non-empty"):
        surface_distances(empty, truth, spacing_mm=spacing, surface_connectivity=26)


@pytest.mark.parametrize(
    ("spacing", "match"),
    [((1.0, 1.0), "3 axes"), ((1.0, 0.0, 1.0), "> 0"), ((1.0, -1.0, 1.0), "> 0"),
     ((1.0, math.nan, 1.0), "finite")],
)  # fmt: skip
def test_spacing_is_required_per_axis_and_positive(spacing, match):
    pred, truth = _cube_pair()
    with pytest.raises(ValueError, match=match):
        hausdorff_distance_95(pred, truth, spacing_mm=spacing)


def test_surface_connectivity_is_checked():
    pred, truth = _cube_pair()
    with pytest.raises(ValueError, match="surface_connectivity"):
        hausdorff_distance(pred, truth, spacing_mm=(1, 1, 1), surface_connectivity=8)


# --- agreement with scipy's distance transform ---------------------------------------------------


@pytest.fixture(params=["kd_tree", "edt"])
def distance_path(request):
    """Force the k-d tree (never dense) or the `edt` transform (always dense)."""
    fraction = 0 if request.param == "kd_tree" else 10**9
    with mock.patch.object(surface, "_DENSE_SURFACE_FRACTION", fraction):
        yield request.param


@pytest.mark.parametrize("connectivity", [6, 18, 26])
@pytest.mark.parametrize("seed", range(6))
def test_surface_distances_match_scipy_3d(distance_path, connectivity, seed):
    shape = (24, 20, 16)
    pred, truth = _blobs(shape, seed), _blobs(shape, seed + 100)
    spacing = (0.8, 0.5, 3.0)
    got = surface_distances(pred, truth, spacing_mm=spacing, surface_connectivity=connectivity)
    p_to_t, t_to_p = _scipy_directed(pred, truth, spacing, connectivity)
    tolerance = 1e-12 if distance_path == "kd_tree" else 1e-6
    np.testing.assert_allclose(got.pred_to_truth_mm, p_to_t, rtol=tolerance)
    np.testing.assert_allclose(got.truth_to_pred_mm, t_to_p, rtol=tolerance)


@pytest.mark.parametrize("connectivity", [4, 8])
@pytest.mark.usefixtures("distance_path")
def test_surface_distances_match_scipy_2d(connectivity):
    pred, truth = _blobs((30, 25), 1, count=3), _blobs((30, 25), 2, count=3)
    spacing = (0.7, 1.3)
    got = surface_distances(pred, truth, spacing_mm=spacing, surface_connectivity=connectivity)
    p_to_t, t_to_p = _scipy_directed(pred, truth, spacing, connectivity)
    np.testing.assert_allclose(got.pred_to_truth_mm, p_to_t, rtol=1e-6)
    np.testing.assert_allclose(got.truth_to_pred_mm, t_to_p, rtol=1e-6)


@settings(max_examples=50, deadline=None)
@given(masks3, masks3, spacings3)
def test_hd95_matches_scipy_reference_on_random_masks(a, b, spacing):
    if not a.any() or not b.any():
        return
    a_to_b, b_to_a = _scipy_directed(a, b, spacing, 26)
    expected = max(np.percentile(a_to_b, 95), np.percentile(b_to_a, 95))
    assert hausdorff_distance_95(a, b, spacing_mm=spacing) == pytest.approx(expected, rel=1e-6)


# --- properties -------------------------------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(masks3, masks3, spacings3)
def test_distances_are_symmetric_nonnegative_and_zero_on_itself(a, b, spacing):
    for metric in (hausdorff_distance, hausdorff_distance_95, average_symmetric_surface_distance):
        d = metric(a, b, spacing_mm=spacing)
        assert d >= 0.0
        assert d == pytest.approx(metric(b, a, spacing_mm=spacing), rel=1e-6)
        if a.any():
            assert metric(a, a, spacing_mm=spacing) == 0.0


@settings(max_examples=50, deadline=None)
@given(masks3, masks3, spacings3, st.permutations([0, 1, 2]))
def test_joint_axis_permutation_of_masks_and_spacing(a, b, spacing, order):
    permuted = tuple(spacing[i] for i in order)
    for metric in (hausdorff_distance, hausdorff_distance_95, average_symmetric_surface_distance):
        before = metric(a, b, spacing_mm=spacing)
        after = metric(a.transpose(order), b.transpose(order), spacing_mm=permuted)
        assert after == pytest.approx(before, rel=1e-6)


@settings(max_examples=50, deadline=None)
@given(masks3, masks3, spacings3, st.sampled_from([0.5, 2.0, 3.0]))
def test_distances_scale_with_spacing(a, b, spacing, factor):
    if not a.any() or not b.any():
        return  # the empty-case values are fixed numbers (tested above)
    scaled = tuple(s * factor for s in spacing)
    for metric in (hausdorff_distance, hausdorff_distance_95, average_symmetric_surface_distance):
        before = metric(a, b, spacing_mm=spacing)
        assert metric(a, b, spacing_mm=scaled) == pytest.approx(before * factor, rel=1e-6)


# --- per-label HD95 ------------------------------------------------------------------------------


def test_per_label_hd95_by_hand_and_union_average():
    pred_mask, truth_mask = _cube_pair()
    truth = truth_mask.astype(np.uint8) * 3
    pred = pred_mask.astype(np.uint8) * 3
    pred[0, 0, 0] = 7  # predicted only -> 90
    truth[9, 9, 9] = 8  # reference only -> 90
    spacing = (2.5, 0.8, 0.8)
    scores = per_label_hd95(pred, truth, spacing_mm=spacing)
    assert scores == pytest.approx({3: 2.5, 7: 90.0, 8: 90.0})
    # (2.5 + 90 + 90) / 3
    assert class_average_hd95(pred, truth, spacing_mm=spacing) == pytest.approx(182.5 / 3)
    assert class_average_hd95(pred, truth, spacing_mm=spacing, absent_value_mm=290.0) == (
        pytest.approx(582.5 / 3)
    )
    empty = np.zeros_like(pred)
    assert class_average_hd95(empty, empty, spacing_mm=spacing) == 0.0


@settings(max_examples=40, deadline=None)
@given(
    arrays(np.uint8, (7, 6, 5), elements=st.integers(0, 3)),
    arrays(np.uint8, (7, 6, 5), elements=st.integers(0, 3)),
    spacings3,
)
def test_per_label_hd95_on_boxes_equals_full_volume(a, b, spacing):
    scores = per_label_hd95(a, b, spacing_mm=spacing)
    for label, value in scores.items():
        assert value == pytest.approx(
            hausdorff_distance_95(a == label, b == label, spacing_mm=spacing), rel=1e-6
        )


# --- surfels (PANTHER, DeepMind surface-distance) -------------------------------------------------


def _compare_with_deepmind(pred, truth, spacing):
    # DeepMind's own computation, ties included: the distance-transform route
    reference, scores = _deepmind(truth, pred, spacing)
    with mock.patch.object(surface, "_surfel_route", return_value="transform"):
        got = surfel_distances(pred, truth, spacing_mm=spacing)
    np.testing.assert_array_equal(got.truth_to_pred_mm, reference["distances_gt_to_pred"])
    np.testing.assert_array_equal(got.truth_areas_mm2, reference["surfel_areas_gt"])
    np.testing.assert_array_equal(got.pred_to_truth_mm, reference["distances_pred_to_gt"])
    np.testing.assert_array_equal(got.pred_areas_mm2, reference["surfel_areas_pred"])
    assert got.surface_dice(5.0) == scores["surface_dice"]
    assert got.robust_hausdorff_mm(95) == scores["hd95"]
    assert got.mean_average_surface_distance_mm() == pytest.approx(scores["masd"], rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(masks3, masks3, spacings3)
def test_surfel_distances_equal_deepmind_on_random_masks(a, b, spacing):
    if not a.any() or not b.any():
        return
    _compare_with_deepmind(a, b, spacing)


@settings(max_examples=30, deadline=None)
@given(
    arrays(np.bool_, (7, 6)), arrays(np.bool_, (7, 6)), st.tuples(spacing_values, spacing_values)
)
def test_surfel_distances_equal_deepmind_in_2d(a, b, spacing):
    if not a.any() or not b.any():
        return
    _compare_with_deepmind(a, b, spacing)


@pytest.mark.parametrize("seed", range(4))
def test_surfel_distances_equal_deepmind_on_blobs(seed):
    # PANTHER-like spacing: (3.0, 4 * 0.8) gives distances of exactly 5 mm, the tolerance
    shape = (12, 20, 24)
    _compare_with_deepmind(_blobs(shape, seed), _blobs(shape, seed + 50), (3.0, 0.8, 0.8))


def _compare_routes(pred, truth, spacing):
    """The k-d tree route and the window-then-tree route against DeepMind: equal to a
    relative 1e-12 (exact ties between two nearest surfels may differ in the last bit), scores
    likewise.
    """
    reference, scores = _deepmind(truth, pred, spacing)
    for route in ("tree", "window"):
        with mock.patch.object(surface, "_surfel_route", return_value=route):
            got = surfel_distances(pred, truth, spacing_mm=spacing)
        for ours, theirs in (
            (got.truth_to_pred_mm, reference["distances_gt_to_pred"]),
            (got.pred_to_truth_mm, reference["distances_pred_to_gt"]),
        ):
            np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=0)
        assert got.robust_hausdorff_mm(95) == pytest.approx(scores["hd95"], rel=1e-12)
        assert got.mean_average_surface_distance_mm() == pytest.approx(scores["masd"], rel=1e-12)
        assert got.surface_dice(5.0) == pytest.approx(scores["surface_dice"], rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(masks3, masks3, spacings3)
def test_surfel_tree_route_equals_deepmind_on_random_masks(a, b, spacing):
    if not a.any() or not b.any():
        return
    _compare_routes(a, b, spacing)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("spacing", [(3.0, 0.8, 0.8), (0.8, 0.8, 3.0), (0.5, 2.0, 1.0)])
def test_surfel_tree_route_equals_deepmind_on_blobs(seed, spacing):
    shape = (12, 20, 24)
    _compare_routes(_blobs(shape, seed), _blobs(shape, seed + 50), spacing)


def test_surfel_tree_route_far_surfaces_and_the_array_border():
    # Distances far beyond the window (k-d tree) and surfels on the array border.
    truth = np.zeros((10, 30, 30), dtype=bool)
    truth[0:3, 0:4, 0:5] = True
    pred = np.zeros_like(truth)
    pred[6:10, 22:30, 25:30] = True
    _compare_routes(pred, truth, (3.0, 0.8, 0.8))


@pytest.mark.parametrize(
    "spacing", [(3.0, 0.8, 0.8), (0.8, 0.8, 3.0), (1.0, 1.0, 1.0), (0.4, 3.0, 2.0), (0.8, 3.0)]
)
def test_window_offsets_hold_every_offset_nearer_than_the_window_reach(spacing):
    offsets, lengths, radii = surface._window_offsets(spacing)
    assert 0 < len(offsets) <= surface._WINDOW_OFFSETS
    assert np.all(np.diff(lengths) >= 0)
    assert np.all(np.abs(offsets) <= np.asarray(radii))
    # brute force over a much larger box: every offset not kept lies beyond the last kept one
    # or (inside the window) beyond the reach; so a target found in the window is the nearest
    reach = min((r + 1) * s for r, s in zip(radii, spacing, strict=True))
    box = [np.arange(-3 * r - 3, 3 * r + 4) for r in radii]
    everything = np.stack([a.ravel() for a in np.meshgrid(*box, indexing="ij")], axis=1)
    everything = everything[np.any(everything != 0, axis=1)]
    kept = {tuple(o) for o in offsets.tolist()}
    left_out = np.array([o not in kept for o in map(tuple, everything.tolist())])
    left_lengths = np.sqrt(((everything[left_out] * np.asarray(spacing)) ** 2).sum(axis=1))
    assert left_lengths.min() >= reach - 1e-12
    assert lengths.max() <= reach


@pytest.mark.parametrize("blocks_from", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("spacing", [(3.0, 0.8, 0.8), (0.8, 0.8, 3.0), (1.0, 1.0, 1.0)])
def test_wide_window_finds_only_nearest_targets_one_offset_or_a_block_at_a_time(
    blocks_from, spacing
):
    # Blocks of offsets are tried once the open points are at most `blocks_from` of all:
    # 0 = one offset at a time throughout, 1 = blocks throughout, 0.5 = a switch midway. Every
    # distance the window gives is the brute-force nearest; what it leaves (inf) is farther.
    rng = np.random.default_rng(7)
    target = rng.random((14, 40, 40)) < 0.05
    sources = np.argwhere((rng.random(target.shape) < 0.3) & ~target)  # callers ask off-target
    spacing_mm = np.asarray(spacing)
    targets = np.argwhere(target)
    brute = np.sqrt(
        (((sources[:, None, :] - targets[None, :, :]) * spacing_mm) ** 2).sum(axis=2)
    ).min(axis=1)
    lookups = int(blocks_from * len(sources) * surface._WINDOW_BLOCK_MIN)
    with mock.patch.object(surface, "_WINDOW_BLOCK_LOOKUPS", lookups):
        found = surface._nearest_in_wide_window_mm(sources, target, spacing_mm)
    finite = np.isfinite(found)
    assert finite.mean() > 0.9
    np.testing.assert_allclose(found[finite], brute[finite], rtol=1e-12, atol=0)
    assert np.all(brute[~finite] >= found[finite].max() - 1e-12)


@pytest.mark.parametrize("half", [False, True])
def test_surfel_scores_per_spacing_on_a_tumour_in_a_large_volume_equal_deepmind(half):
    # PANTHER-like: a tumour in a much larger volume, so the rule picks the window and the
    # tree, not the transform; both spacing pairings scored from one grid, each equal to
    # DeepMind on the whole arrays.
    shape = (60, 64, 24)
    grid = np.ogrid[: shape[0], : shape[1], : shape[2]]
    truth = ((grid[0] - 30) / 14) ** 2 + ((grid[1] - 32) / 11) ** 2 + ((grid[2] - 12) / 5) ** 2 <= 1
    pred = ((grid[0] - 29) / 13) ** 2 + ((grid[1] - 34) / 12) ** 2 + ((grid[2] - 13) / 5) ** 2 <= 1
    if half:
        pred = truth.copy()
        pred[:30] = False
    spacings = [(3.0, 0.8, 0.8), (0.8, 0.8, 3.0)]
    routes = []
    real_route = surface._surfel_route

    def spy(*args):
        routes.append(real_route(*args))
        return routes[-1]

    with mock.patch.object(surface, "_surfel_route", side_effect=spy):
        got = surface.surfel_scores_per_spacing(pred, truth, spacings_mm=spacings)
    assert set(routes) == {"window"}
    for scores, spacing in zip(got, spacings, strict=True):
        _, reference = _deepmind(truth, pred, spacing)
        assert scores.hd95_mm == pytest.approx(reference["hd95"], rel=1e-12)
        assert scores.masd_mm == pytest.approx(reference["masd"], rel=1e-12)
        assert scores.surface_dice == pytest.approx(reference["surface_dice"], rel=1e-12)


def test_surfel_route_rule():
    # the transform when the crop is small against the queries and targets; the tree alone
    # when there are too few queries to pay for a run of the window; else the window first
    assert surface._surfel_route(100, 50, 10) == "transform"
    assert surface._surfel_route(500_000, 21_000, 31_000) == "window"
    assert surface._surfel_route(500_000, 3, 31_000) == "tree"


def test_surfel_scores_uniform_prediction_gets_the_diagonal():
    truth = np.zeros((12, 20, 24), dtype=bool)  # (z, y, x)
    truth[4:8, 8:12, 10:14] = True
    # official pairing: (x, y, z) spacing (0.8, 0.8, 3.0) with the (z, y, x) array:
    # D = ||(12 * 0.8, 20 * 0.8, 24 * 3.0)|| = ||(9.6, 16, 72)||
    official = (0.8, 0.8, 3.0)
    diagonal = math.sqrt(9.6**2 + 16.0**2 + 72.0**2)
    for uniform in (np.zeros_like(truth), np.ones_like(truth)):
        scores = surfel_scores(uniform, truth, spacing_mm=official)
        assert scores.surface_dice == 0.0
        assert scores.hd95_mm == pytest.approx(diagonal)
        assert scores.masd_mm == pytest.approx(diagonal)


def test_surfel_scores_shift_by_one_slice_physical_and_official_spacing():
    truth = np.zeros((12, 20, 24), dtype=bool)  # (z, y, x)
    truth[4:8, 8:12, 10:14] = True
    pred = np.roll(truth, 1, axis=0)  # one slice along z
    # physical spacing in array order (z, y, x) = (3.0, 0.8, 0.8): HD95 = 3.0 mm
    physical = surfel_scores(pred, truth, spacing_mm=(3.0, 0.8, 0.8))
    assert physical.hd95_mm == pytest.approx(3.0)
    assert physical.surface_dice == 1.0  # every distance <= 3 mm <= 5 mm
    # official (x, y, z) spacing paired with the (z, y, x) array: the shift counts 0.8 mm
    official = surfel_scores(pred, truth, spacing_mm=(0.8, 0.8, 3.0))
    assert official.hd95_mm == pytest.approx(0.8)
    # isotropic spacing: both pairings agree
    iso = surfel_scores(pred, truth, spacing_mm=(1.0, 1.0, 1.0))
    assert iso == surfel_scores(pred, truth, spacing_mm=(1.0, 1.0, 1.0)[::-1])
    assert surfel_scores(truth, truth, spacing_mm=(3.0, 0.8, 0.8)).hd95_mm == 0.0


@pytest.mark.parametrize("at_border", [True, False])
def test_neighbour_window_and_k_d_tree_at_and_off_the_array_border(at_border):
    # Sparse surfaces (k-d tree route) whose points do or do not touch the array border.
    truth = np.zeros((20, 20, 20), dtype=bool)
    pred = np.zeros_like(truth)
    start = 0 if at_border else 3
    truth[start : start + 6, start : start + 5, start : start + 4] = True
    pred[start + 1 : start + 7, start : start + 5, start + 2 : start + 6] = True
    pred[15, 15, 15] = True  # a far island: resolved by the k-d tree, not the window
    spacing = (0.6, 0.4, 1.5)
    with mock.patch.object(surface, "_DENSE_SURFACE_FRACTION", 0):
        got = surface_distances(pred, truth, spacing_mm=spacing, surface_connectivity=26)
    p_to_t, t_to_p = _scipy_directed(pred, truth, spacing, 26)
    np.testing.assert_allclose(got.pred_to_truth_mm, p_to_t, rtol=1e-12)
    np.testing.assert_allclose(got.truth_to_pred_mm, t_to_p, rtol=1e-12)


def test_official_topcow_voxel_spacing_example():
    # Mirrors `test_hd95_single_label_3D_voxel_spacing` of the official TopCoW code: 3x3x3
    # images with SimpleITK spacing (x, y, z) = (3, 4, 5), i.e. (5, 4, 3) for (z, y, x) arrays.
    image1 = np.zeros((3, 3, 3), dtype=np.uint8)  # (z, y, x)
    image2 = np.zeros_like(image1)
    image1[0, 0, 2] = image2[0, 0, 0] = 1  # x 2 vs x 0: 2 * 3 = 6 mm
    image1[0, 1, 0] = image2[0, 0, 1] = 2  # (x0, y1) vs (x1, y0): sqrt(3^2 + 4^2) = 5 mm
    image1[1, :, :] = 3  # z 1
    image2[2, :, :] = 3  # z 2: one slice = 5 mm
    spacing = (5.0, 4.0, 3.0)
    scores = per_label_hd95(image2, image1, spacing_mm=spacing)
    assert scores == pytest.approx({1: 6.0, 2: 5.0, 3: 5.0})


@settings(max_examples=50, deadline=None)
@given(
    arrays(np.int8, st.integers(1, 60), elements=st.integers(0, 5)),
    st.sampled_from([(3.0, 0.8, 0.8), (1.0, 1.0, 1.0)]),
    st.randoms(use_true_random=False),
)
def test_sort_by_distance_then_area_is_lexsort(steps, spacing, rnd):
    # few distinct distances and codes: ties in both keys
    _, table, _ = surface._surfel_tables(spacing)
    codes = np.array([rnd.choice([1, 3, 7, 15, 60, 127, 254]) for _ in steps], dtype=np.uint8)
    distances = steps.astype(np.float64) * 0.8
    order = surface._by_distance_then_area(distances, surface._area_ranks(spacing)[codes])
    np.testing.assert_array_equal(order, np.lexsort((table[codes], distances)))
