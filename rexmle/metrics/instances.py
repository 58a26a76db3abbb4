"""Instance-segmentation F1 of the NeurIPS 2022 Cell Segmentation challenge.

Instance maps are 2-D integer arrays of shape (H, W): 0 is background, every other value one
instance (values need not be consecutive). Overlaps are counted from a sparse contingency table of
(truth id, predicted id) pairs, never from one full-image mask per instance.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching

CELLSEG_THRESHOLDS: tuple[float, ...] = (0.5, 0.6, 0.7, 0.8, 0.9)
"""IoU thresholds of the five leaderboard keys ``f1_0.5`` ... ``f1_0.9``."""
WHOLE_IMAGE_MAX_PIXELS = 25_000_000
"""Images with H * W below this are scored whole; larger ones tile by tile."""
TILE_PX = 2000
"""Side of the square tiles of the tiled mode, in pixels."""
BOUNDARY_BAND_PX = 2
"""Width of the border band whose instances are removed before scoring, in pixels."""
F1_DECIMALS = 4
"""Decimals the official code rounds each image's F1 to (``numpy.round``)."""

_LOOKUP_TABLE_MIN_IDS = 1 << 16  # ids up to this (+ 2 per pixel) use a lookup table


@dataclass(frozen=True)
class InstanceMatchCounts:
    """Counts behind one image's F1 at one IoU threshold.

    Attributes:
        threshold: the IoU threshold t (a pair counts when IoU >= t).
        n_truth: reference instances left after boundary removal (summed over tiles).
        n_pred: predicted instances left after boundary removal (summed over tiles).
        true_positives: size of a maximum one-to-one matching of pairs with IoU >= t.
    """

    threshold: float
    n_truth: int
    n_pred: int
    true_positives: int

    @property
    def f1(self) -> float:
        """Unrounded F1: 0.0 when there is no true positive, else 2PR / (P + R)."""
        if self.true_positives == 0:
            return 0.0
        precision = self.true_positives / self.n_pred
        recall = self.true_positives / self.n_truth
        return 2 * (precision * recall) / (precision + recall)


def _check_instance_map(labels: npt.NDArray[np.integer], what: str) -> None:
    if not isinstance(labels, np.ndarray):
        msg = f"{what} must be a numpy array, got {type(labels).__name__}"
        raise TypeError(msg)
    if labels.ndim != 2:
        msg = f"{what} must be a 2-D instance map, got shape {labels.shape}"
        raise ValueError(msg)
    if labels.dtype == np.bool_ or not np.issubdtype(labels.dtype, np.integer):
        msg = f"{what} must have an integer dtype, got {labels.dtype}"
        raise TypeError(msg)
    if labels.size and np.issubdtype(labels.dtype, np.signedinteger) and labels.min() < 0:
        msg = f"{what} contains negative ids (min {labels.min()}); ids must be >= 0"
        raise ValueError(msg)
    if labels.size and labels.dtype == np.uint64 and labels.max() > np.iinfo(np.int64).max:
        msg = f"{what} contains ids above {np.iinfo(np.int64).max} (max {labels.max()})"
        raise ValueError(msg)


def _band_mask(shape: tuple[int, int], band_px: int) -> npt.NDArray[np.bool_]:
    band = np.ones(shape, dtype=bool)
    band[band_px : shape[0] - band_px, band_px : shape[1] - band_px] = False
    return band


def _relabel_without_band(
    labels: npt.NDArray[np.integer], band_px: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Drop instances touching the band, renumber the rest 1..n (increasing id order).

    Returns the relabelled map and the pixel count of each new id (index 0 = background).
    """
    flat = labels.reshape(-1).astype(np.int64, copy=False)
    band_ids = np.unique(labels[_band_mask(labels.shape, band_px)])
    max_id = int(flat.max()) if flat.size else 0
    if max_id <= _LOOKUP_TABLE_MIN_IDS + 2 * flat.size:
        counts = np.bincount(flat, minlength=max_id + 1)
        keep = counts > 0
        keep[0] = False
        keep[band_ids] = False
        lookup = np.zeros(max_id + 1, dtype=np.int64)
        n_kept = int(np.count_nonzero(keep))
        lookup[keep] = np.arange(1, n_kept + 1)
        sizes = np.concatenate([[0], counts[keep]]).astype(np.int64)
        return lookup[flat].reshape(labels.shape), sizes
    ids, inverse = np.unique(flat, return_inverse=True)
    counts = np.bincount(inverse, minlength=ids.size)
    keep = (ids != 0) & ~np.isin(ids, band_ids)
    lookup = np.zeros(ids.size, dtype=np.int64)
    lookup[keep] = np.arange(1, int(np.count_nonzero(keep)) + 1)
    sizes = np.concatenate([[0], counts[keep]]).astype(np.int64)
    return lookup[inverse].reshape(labels.shape), sizes


def remove_boundary_instances(
    labels: npt.NDArray[np.integer], *, band_px: int = BOUNDARY_BAND_PX
) -> npt.NDArray[np.int64]:
    """Delete every instance that touches the border band and renumber the rest 1..n.

    Definition: an instance is removed when at least one of its pixels lies in rows
        0..band_px-1 or H-band_px..H-1, or in the same columns; the remaining ids are renumbered
        1..n in increasing order of their original value.
    Units: instance ids.
    Empty: a map without instances (or with only border instances) gives all zeros.
    Follows: ``remove_boundary_cells`` + ``relabel_sequential`` in JunMa11/NeurIPS-CellSeg
        ``baseline/compute_metric.py`` (@3128e96).
    Differs: ids are kept as int64; the official code casts to int32 first.

    Args:
        labels: instance map of shape (H, W), integer dtype, ids >= 0.
        band_px: width of the border band in pixels.

    Returns:
        The relabelled map of shape (H, W), dtype int64.

    Raises:
        TypeError: ``labels`` is not an integer numpy array.
        ValueError: ``labels`` is not 2-D, has negative ids, or ``band_px`` < 0.
    """
    _check_instance_map(labels, "labels")
    if band_px < 0:
        msg = f"band_px must be >= 0, got {band_px}"
        raise ValueError(msg)
    return _relabel_without_band(labels, band_px)[0]


@dataclass(frozen=True)
class InstanceOverlaps:
    """Sparse IoU table of two relabelled instance maps.

    Attributes:
        n_truth: number of reference instances (ids 1..n_truth).
        n_pred: number of predicted instances (ids 1..n_pred).
        truth_ids: array of shape (P,), reference id of each overlapping pair.
        pred_ids: array of shape (P,), predicted id of each overlapping pair.
        ious: array of shape (P,), IoU of each overlapping pair (pairs without overlap have
            IoU 0 and are not listed).
    """

    n_truth: int
    n_pred: int
    truth_ids: npt.NDArray[np.int64]
    pred_ids: npt.NDArray[np.int64]
    ious: npt.NDArray[np.float64]


def _overlaps(
    truth: npt.NDArray[np.int64],
    truth_sizes: npt.NDArray[np.int64],
    pred: npt.NDArray[np.int64],
    pred_sizes: npt.NDArray[np.int64],
) -> InstanceOverlaps:
    n_truth = truth_sizes.size - 1
    n_pred = pred_sizes.size - 1
    both = (truth > 0) & (pred > 0)
    stride = n_pred + 1
    keys = truth[both] * stride + pred[both]
    table_size = (n_truth + 1) * stride
    if table_size <= max(4 * keys.size, 1 << 22):
        counts = np.bincount(keys, minlength=table_size)
        pair_keys = np.flatnonzero(counts)
        intersections = counts[pair_keys]
    else:
        pair_keys, intersections = np.unique(keys, return_counts=True)
    truth_ids = pair_keys // stride
    pred_ids = pair_keys % stride
    # same expression as the official: overlap / (n_pixels_pred + n_pixels_true - overlap)
    ious = intersections / (pred_sizes[pred_ids] + truth_sizes[truth_ids] - intersections)
    return InstanceOverlaps(
        n_truth=n_truth,
        n_pred=n_pred,
        truth_ids=truth_ids.astype(np.int64),
        pred_ids=pred_ids.astype(np.int64),
        ious=ious.astype(np.float64),
    )


def instance_overlaps(
    pred: npt.NDArray[np.integer],
    truth: npt.NDArray[np.integer],
    *,
    band_px: int | None = BOUNDARY_BAND_PX,
) -> InstanceOverlaps:
    """IoU of every overlapping (reference, predicted) instance pair, from a sparse table.

    Definition: both maps are relabelled (instances touching the ``band_px`` border band
        removed first unless ``band_px`` is None); IoU(g, p) = |g ∩ p| / |g ∪ p| in pixels.
    Units: fraction in [0, 1].
    Empty: no overlapping pair -> empty arrays (n_truth / n_pred still count the instances).
    Follows: ``_intersection_over_union`` in JunMa11/NeurIPS-CellSeg
        ``baseline/compute_metric.py`` (@3128e96), computed only for pairs that overlap.

    Args:
        pred: predicted instance map of shape (H, W).
        truth: reference instance map, same shape.
        band_px: border band width; None keeps border instances.

    Returns:
        The sparse IoU table.

    Raises:
        TypeError: a map is not an integer numpy array.
        ValueError: shapes differ, a map is not 2-D or has negative ids.
    """
    _check_instance_map(pred, "pred")
    _check_instance_map(truth, "truth")
    if pred.shape != truth.shape:
        msg = f"pred has shape {pred.shape} but truth has {truth.shape}"
        raise ValueError(msg)
    band = 0 if band_px is None else band_px
    truth_r, truth_sizes = _relabel_without_band(truth, band)
    pred_r, pred_sizes = _relabel_without_band(pred, band)
    return _overlaps(truth_r, truth_sizes, pred_r, pred_sizes)


def matched_pair_count(overlaps: InstanceOverlaps, threshold: float) -> int:
    """Size of a maximum one-to-one matching between instances using pairs with IoU >= t.

    Definition: the maximum number of disjoint (reference, predicted) pairs with
        IoU >= ``threshold`` (maximum-cardinality bipartite matching, Hopcroft-Karp). For
        t > 0.5 every instance has at most one such partner, so this is the number of pairs.
    Units: count.
    Empty: no predicted or no reference instance -> 0.
    Follows: ``_true_positive`` in JunMa11/NeurIPS-CellSeg ``baseline/compute_metric.py``
        (@3128e96): its ``linear_sum_assignment`` cost -[IoU >= t] - IoU / (2 min(n_G, n_P))
        only breaks ties among maximum matchings (the IoU term sums to at most 1/2), so its
        count equals this one.

    Args:
        overlaps: the sparse IoU table.
        threshold: IoU threshold t.

    Returns:
        The number of true positives.
    """
    hit = overlaps.ious >= threshold
    truth_ids = overlaps.truth_ids[hit]
    pred_ids = overlaps.pred_ids[hit]
    if truth_ids.size == 0:
        return 0
    if np.unique(truth_ids).size == truth_ids.size and np.unique(pred_ids).size == pred_ids.size:
        return int(truth_ids.size)
    graph = csr_matrix(
        (np.ones(truth_ids.size, dtype=np.int8), (truth_ids - 1, pred_ids - 1)),
        shape=(overlaps.n_truth, overlaps.n_pred),
    )
    matching = maximum_bipartite_matching(graph, perm_type="column")
    return int(np.count_nonzero(matching >= 0))


def _tiles(shape: tuple[int, int], tile_px: int) -> list[tuple[slice, slice, tuple[int, int]]]:
    n_rows = -(-shape[0] // tile_px)
    n_cols = -(-shape[1] // tile_px)
    tiles = []
    for i in range(n_rows):
        for j in range(n_cols):
            rows = slice(i * tile_px, min((i + 1) * tile_px, shape[0]))
            cols = slice(j * tile_px, min((j + 1) * tile_px, shape[1]))
            tiles.append((rows, cols, (rows.stop - rows.start, cols.stop - cols.start)))
    return tiles


def _padded_tile(
    labels: npt.NDArray[np.integer], rows: slice, cols: slice, tile_px: int
) -> npt.NDArray[np.int64]:
    tile = np.zeros((tile_px, tile_px), dtype=np.int64)
    part = labels[rows, cols]
    tile[: part.shape[0], : part.shape[1]] = part
    return tile


def cellseg_match_counts(
    pred: npt.NDArray[np.integer],
    truth: npt.NDArray[np.integer],
    *,
    thresholds: Sequence[float] = CELLSEG_THRESHOLDS,
    band_px: int = BOUNDARY_BAND_PX,
    whole_image_max_pixels: int = WHOLE_IMAGE_MAX_PIXELS,
    tile_px: int = TILE_PX,
) -> list[InstanceMatchCounts]:
    """Instance counts and true positives of one image at each IoU threshold, NeurIPS-CellSeg rules.

    Definition: if H * W < ``whole_image_max_pixels``, instances touching the ``band_px`` border
        band are removed from both maps and TP_t = maximum one-to-one matching of pairs with
        IoU >= t (see `matched_pair_count`). Otherwise both maps are zero-padded at the bottom
        and right to multiples of ``tile_px``, cut into ``tile_px`` x ``tile_px`` tiles, boundary
        removal is applied inside each tile (so instances crossing a tile edge are dropped), and
        TP, n_truth and n_pred are summed over tiles.
    Units: counts.
    Empty: a map without instances gives n = 0 and TP = 0.
    Follows: JunMa11/NeurIPS-CellSeg ``baseline/compute_metric.py`` (@3128e96), default options
        (boundary cells removed).
    Differs: the tiled mode keeps both maps in int64 (the official code pads the prediction into
        the reference's dtype, which can overflow); overlaps are counted sparsely (same values).

    Args:
        pred: predicted instance map of shape (H, W), integer dtype, ids >= 0.
        truth: reference instance map, same shape.
        thresholds: IoU thresholds.
        band_px: border band width in pixels.
        whole_image_max_pixels: images with at least this many pixels are tiled.
        tile_px: tile side in pixels.

    Returns:
        One `InstanceMatchCounts` per threshold, in the order given.

    Raises:
        TypeError: a map is not an integer numpy array.
        ValueError: shapes differ, a map is not 2-D or has negative ids, or a parameter is out
            of range.
    """
    _check_instance_map(pred, "pred")
    _check_instance_map(truth, "truth")
    if pred.shape != truth.shape:
        msg = f"pred has shape {pred.shape} but truth has {truth.shape}"
        raise ValueError(msg)
    if band_px < 0 or tile_px <= 2 * band_px:
        msg = (
            f"need band_px >= 0 and tile_px > 2 * band_px, got band_px={band_px}, tile_px={tile_px}"
        )
        raise ValueError(msg)
    if any(not 0.0 < t <= 1.0 for t in thresholds):
        msg = f"thresholds must lie in (0, 1], got {list(thresholds)}"
        raise ValueError(msg)
    if truth.size < whole_image_max_pixels:
        pieces: Iterator[tuple[npt.NDArray[np.integer], npt.NDArray[np.integer]]] = iter(
            [(truth, pred)]
        )
    else:  # one padded tile pair in memory at a time
        pieces = (
            (_padded_tile(truth, rows, cols, tile_px), _padded_tile(pred, rows, cols, tile_px))
            for rows, cols, _ in _tiles(truth.shape, tile_px)
        )
    n_truth = 0
    n_pred = 0
    true_positives = [0] * len(thresholds)
    for truth_piece, pred_piece in pieces:
        truth_r, truth_sizes = _relabel_without_band(truth_piece, band_px)
        pred_r, pred_sizes = _relabel_without_band(pred_piece, band_px)
        overlaps = _overlaps(truth_r, truth_sizes, pred_r, pred_sizes)
        n_truth += overlaps.n_truth
        n_pred += overlaps.n_pred
        for i, threshold in enumerate(thresholds):
            true_positives[i] += matched_pair_count(overlaps, threshold)
    return [
        InstanceMatchCounts(threshold=float(t), n_truth=n_truth, n_pred=n_pred, true_positives=tp)
        for t, tp in zip(thresholds, true_positives, strict=True)
    ]


def cellseg_f1(
    pred: npt.NDArray[np.integer],
    truth: npt.NDArray[np.integer],
    *,
    thresholds: Sequence[float] = CELLSEG_THRESHOLDS,
    decimals: int | None = F1_DECIMALS,
    band_px: int = BOUNDARY_BAND_PX,
    whole_image_max_pixels: int = WHOLE_IMAGE_MAX_PIXELS,
    tile_px: int = TILE_PX,
) -> dict[float, float]:
    """Per-image instance F1 of the NeurIPS 2022 Cell Segmentation challenge at each threshold.

    Definition: with TP, n_truth, n_pred from `cellseg_match_counts`: F1 = 0 if TP = 0, else
        precision = TP / n_pred, recall = TP / n_truth, F1 = 2PR / (P + R); then rounded with
        ``numpy.round(F1, decimals)``.
    Units: fraction in [0, 1]; higher is better. Leaderboard keys ``f1_<t>`` are the mean of
        this value over all test images (done by the grader).
    Empty: reference empty after boundary removal -> 0.0 whatever the prediction (this caps
        every submission, including the reference itself); prediction empty -> 0.0; both empty
        -> 0.0. Never NaN.
    Follows: JunMa11/NeurIPS-CellSeg ``baseline/compute_metric.py`` (@3128e96), default options,
        thresholds 0.5..0.9, 25 MP / 2000 px tiling, 4-decimal rounding.
    Differs: see `cellseg_match_counts` (wide dtype in tiled mode).

    Args:
        pred: predicted instance map of shape (H, W), integer dtype, ids >= 0.
        truth: reference instance map, same shape.
        thresholds: IoU thresholds.
        decimals: rounding; None returns the unrounded F1.
        band_px: border band width in pixels.
        whole_image_max_pixels: images with at least this many pixels are tiled.
        tile_px: tile side in pixels.

    Returns:
        Mapping threshold -> F1.

    Raises:
        TypeError: a map is not an integer numpy array.
        ValueError: shapes differ, a map is not 2-D or has negative ids, or a parameter is out
            of range.
    """
    counts = cellseg_match_counts(
        pred,
        truth,
        thresholds=thresholds,
        band_px=band_px,
        whole_image_max_pixels=whole_image_max_pixels,
        tile_px=tile_px,
    )
    result = {}
    for count in counts:
        value = count.f1
        result[count.threshold] = value if decimals is None else float(np.round(value, decimals))
    return result
