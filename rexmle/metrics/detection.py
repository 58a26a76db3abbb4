"""COCO bounding-box average precision and recall, computed natively with numpy.

The numbers equal those of ``pycocotools.cocoeval.COCOeval(gt, dt, iouType="bbox")`` with its
default parameters after ``evaluate(); accumulate(); summarize()``: the same greedy matching, the
same 101-point interpolated precision, the same averaging order (so the same floating-point
results), without the per-image Python loops.

Boxes are ``[x, y, w, h]`` in pixels (COCO convention: origin at the top-left corner, x to the
right, y down). Images are identified by their position in the sequences passed in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

COCO_IOU_THRESHOLDS: npt.NDArray[np.float64] = np.linspace(
    0.5, 0.95, round((0.95 - 0.5) / 0.05) + 1, endpoint=True
)
"""IoU thresholds 0.50:0.05:0.95, built exactly as ``pycocotools`` ``Params.setDetParams``."""
COCO_RECALL_THRESHOLDS: npt.NDArray[np.float64] = np.linspace(
    0.0, 1.00, round((1.00 - 0.0) / 0.01) + 1, endpoint=True
)
"""The 101 recall points 0:0.01:1 at which precision is sampled."""
COCO_MAX_DETECTIONS: tuple[int, int, int] = (1, 10, 100)
"""Detections kept per image and category for the three recall limits."""
COCO_AREA_RANGES: tuple[tuple[float, float], ...] = (
    (0.0**2, 1e5**2),
    (0.0**2, 32.0**2),
    (32.0**2, 96.0**2),
    (96.0**2, 1e5**2),
)
"""Area ranges all / small / medium / large in square pixels (bounds inclusive)."""

_STAT_NAMES: tuple[str, ...] = (
    "AP@[.50:.95] all 100",
    "AP@.50 all 100",
    "AP@.75 all 100",
    "AP@[.50:.95] small 100",
    "AP@[.50:.95] medium 100",
    "AP@[.50:.95] large 100",
    "AR@[.50:.95] all 1",
    "AR@[.50:.95] all 10",
    "AR@[.50:.95] all 100",
    "AR@[.50:.95] small 100",
    "AR@[.50:.95] medium 100",
    "AR@[.50:.95] large 100",
)


def _as_boxes(values: npt.ArrayLike, what: str) -> npt.NDArray[np.float64]:
    boxes = np.asarray(values, dtype=np.float64)
    if boxes.size == 0:
        return np.zeros((0, 4), dtype=np.float64)
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        msg = f"{what} must have shape (N, 4) as [x, y, w, h], got shape {boxes.shape}"
        raise ValueError(msg)
    if not np.all(np.isfinite(boxes)):
        msg = f"{what} contains NaN or infinite coordinates"
        raise ValueError(msg)
    if np.any(boxes[:, 2:] < 0):
        msg = f"{what} has a negative width or height: {boxes[np.any(boxes[:, 2:] < 0, axis=1)][0]}"
        raise ValueError(msg)
    return boxes


def _as_vector(values: npt.ArrayLike, n: int, dtype: type, what: str) -> npt.NDArray:
    array = np.asarray(values)
    if array.size == 0 and n == 0:
        return np.zeros(0, dtype=dtype)
    if array.shape != (n,):
        msg = f"{what} must have shape ({n},) to match the boxes, got {array.shape}"
        raise ValueError(msg)
    if dtype is np.int64 and not np.issubdtype(array.dtype, np.integer):
        msg = f"{what} must be integers, got dtype {array.dtype}"
        raise TypeError(msg)
    return array.astype(dtype)


@dataclass(frozen=True)
class TruthBoxes:
    """Reference boxes of one image.

    Attributes:
        boxes_xywh: array of shape (M, 4), ``[x, y, w, h]`` in pixels.
        category_ids: array of shape (M,), integer category of each box.
        areas: array of shape (M,), the annotation ``area`` that COCO uses for the area ranges
            (not for IoU). Defaults to ``w * h``.
        is_crowd: array of shape (M,), COCO ``iscrowd`` flags (crowd boxes are ignored and may
            absorb any number of detections). Defaults to all False.
    """

    boxes_xywh: npt.NDArray[np.float64]
    category_ids: npt.NDArray[np.int64]
    areas: npt.NDArray[np.float64] | None = None
    is_crowd: npt.NDArray[np.bool_] | None = field(default=None)

    def __post_init__(self) -> None:
        boxes = _as_boxes(self.boxes_xywh, "truth boxes_xywh")
        n = boxes.shape[0]
        object.__setattr__(self, "boxes_xywh", boxes)
        object.__setattr__(
            self, "category_ids", _as_vector(self.category_ids, n, np.int64, "category_ids")
        )
        if self.areas is None:
            areas = boxes[:, 2] * boxes[:, 3]
        else:
            areas = _as_vector(self.areas, n, np.float64, "areas")
            if not np.all(np.isfinite(areas)):
                msg = "truth areas contain NaN or infinite values"
                raise ValueError(msg)
        object.__setattr__(self, "areas", areas)
        crowd = (
            np.zeros(n, dtype=bool)
            if self.is_crowd is None
            else _as_vector(self.is_crowd, n, np.bool_, "is_crowd")
        )
        object.__setattr__(self, "is_crowd", crowd)


@dataclass(frozen=True)
class ScoredBoxes:
    """Detections of one image, in the order they were submitted.

    The order matters only between equal scores: like COCO, detections of one image are ranked
    by a stable sort on descending score, so the earlier of two tied detections is matched first.

    Attributes:
        boxes_xywh: array of shape (N, 4), ``[x, y, w, h]`` in pixels.
        scores: array of shape (N,), confidence (higher = more confident), finite.
        category_ids: array of shape (N,), integer category of each detection.
    """

    boxes_xywh: npt.NDArray[np.float64]
    scores: npt.NDArray[np.float64]
    category_ids: npt.NDArray[np.int64]

    def __post_init__(self) -> None:
        boxes = _as_boxes(self.boxes_xywh, "detection boxes_xywh")
        n = boxes.shape[0]
        object.__setattr__(self, "boxes_xywh", boxes)
        scores = _as_vector(self.scores, n, np.float64, "scores")
        if not np.all(np.isfinite(scores)):
            msg = "detection scores contain NaN or infinite values"
            raise ValueError(msg)
        object.__setattr__(self, "scores", scores)
        object.__setattr__(
            self, "category_ids", _as_vector(self.category_ids, n, np.int64, "category_ids")
        )


@dataclass(frozen=True)
class CocoBoxStats:
    """The twelve COCO summary numbers, in ``COCOeval.stats`` order.

    A value of -1.0 means "undefined" exactly as in COCO (no reference box in that area range).

    Attributes:
        stats: the 12 values of ``COCOeval.stats``.
    """

    stats: tuple[float, ...]

    @property
    def ap(self) -> float:
        """AP averaged over IoU 0.50:0.95, all areas, 100 detections (``stats[0]``)."""
        return self.stats[0]

    @property
    def ap50(self) -> float:
        """AP at IoU 0.50, all areas, 100 detections (``stats[1]``)."""
        return self.stats[1]

    @property
    def ap75(self) -> float:
        """AP at IoU 0.75, all areas, 100 detections (``stats[2]``)."""
        return self.stats[2]

    @property
    def ar100(self) -> float:
        """AR averaged over IoU 0.50:0.95, all areas, 100 detections (``stats[8]``)."""
        return self.stats[8]

    def as_dict(self) -> dict[str, float]:
        """The twelve values keyed by a readable name."""
        return dict(zip(_STAT_NAMES, self.stats, strict=True))


def box_iou_matrix(
    detections_xywh: npt.NDArray[np.float64],
    truth_xywh: npt.NDArray[np.float64],
    truth_is_crowd: npt.NDArray[np.bool_] | None = None,
) -> npt.NDArray[np.float64]:
    """IoU of every detection with every reference box, as COCO's ``maskUtils.iou`` for boxes.

    Definition: IoU = |D ∩ G| / |D ∪ G| with box areas ``w * h``; for a crowd reference box the
        denominator is |D| instead. Overlap widths and heights ``<= 0`` give 0.
    Units: fraction in [0, 1].
    Empty: no detections or no reference boxes -> an empty (N, M) array.
    Follows: pycocotools ``bbIou`` (C), operation for operation, so values are bit-identical.

    Args:
        detections_xywh: array of shape (N, 4), ``[x, y, w, h]``.
        truth_xywh: array of shape (M, 4), ``[x, y, w, h]``.
        truth_is_crowd: array of shape (M,), crowd flags; default all False.

    Returns:
        Array of shape (N, M).
    """
    d = np.asarray(detections_xywh, dtype=np.float64).reshape(-1, 4)
    g = np.asarray(truth_xywh, dtype=np.float64).reshape(-1, 4)
    crowd = (
        np.zeros(g.shape[0], dtype=bool)
        if truth_is_crowd is None
        else np.asarray(truth_is_crowd, dtype=bool)
    )
    return _iou_padded(d[None], g[None], crowd[None])[0]


def _iou_padded(
    d: npt.NDArray[np.float64], g: npt.NDArray[np.float64], crowd: npt.NDArray[np.bool_]
) -> npt.NDArray[np.float64]:
    """Batched ``bbIou``: d (B, D, 4), g (B, G, 4), crowd (B, G) -> (B, D, G)."""
    dx, dy, dw, dh = (d[:, :, None, i] for i in range(4))
    gx, gy, gw, gh = (g[:, None, :, i] for i in range(4))
    w = np.minimum(dw + dx, gw + gx) - np.maximum(dx, gx)
    h = np.minimum(dh + dy, gh + gy) - np.maximum(dy, gy)
    inter = w * h
    da = dw * dh
    ga = gw * gh
    union = np.where(crowd[:, None, :], da, da + ga - inter)
    positive = (w > 0) & (h > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = np.where(positive, inter / np.where(positive, union, 1.0), 0.0)
    return iou


def _ceil_pow2(values: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    out = np.ones_like(values)
    while np.any(out < values):
        out = np.where(out < values, out * 2, out)
    return out


def coco_box_stats(
    truth: Sequence[TruthBoxes],
    detections: Sequence[ScoredBoxes],
    *,
    no_truth: Literal["raise", "minus_one"] = "raise",
) -> CocoBoxStats:
    """COCO bounding-box AP/AR over a set of images, identical to pycocotools ``COCOeval``.

    Definition: per category and image, detections are ranked by descending score (stable, so
        submission order breaks ties) and only the first 100 are kept; at each IoU threshold t in
        0.50:0.05:0.95 each detection in turn is matched to the not-yet-matched reference box of
        the same category with the highest IoU >= t (ties: the later box in the image's list;
        boxes outside the area range and crowd boxes are ignored and are only matched when no
        regular box qualifies). Over all images (in the order given) detections of a category are
        ranked by score (stable), precision/recall curves are cumulated, precision is made
        monotone and sampled at 101 recall points. AP = mean of those samples over thresholds
        and categories; AR = mean of the final recall. Categories are those with at least one
        reference box; detections of other categories are ignored.
    Units: fractions in [0, 1]; higher is better.
    Empty: an image without detections leaves its reference boxes unmatched; detections on an
        image without reference boxes of their category are false positives; no detection at all
        gives 0.0 for every statistic whose area range has reference boxes (pycocotools'
        ``loadRes`` crashes on an empty list; 0.0 is the value its formulas give). A statistic
        whose area range has no reference box is -1.0, as in COCO. With no reference box at all,
        ``no_truth="raise"`` raises ValueError, ``"minus_one"`` returns all -1.0.
    Follows: pycocotools 2.0 ``COCOeval`` (``iouType="bbox"``, default ``Params``), used by the
        DENTEX 2023 evaluation (``evaluation.py`` in ibrahimethemhamamci/DENTEX).
    Differs: pycocotools records a match by the reference annotation ``id`` and so counts a match
        to an annotation with id 0 as unmatched; here a match is a match. Images are those passed
        in (COCO evaluates the images of the GT file). The ``ignore`` annotation flag is not
        supported (COCO overwrites it with ``iscrowd`` anyway).

    Args:
        truth: reference boxes, one entry per image. The image order must be the order of the
            COCO image ids (pycocotools sorts them); it decides ties between equal scores of
            different images.
        detections: detections, one entry per image, aligned with ``truth``.
        no_truth: what to do when no image has any reference box.

    Returns:
        The twelve ``COCOeval.stats`` values.

    Raises:
        ValueError: the two sequences differ in length, or no reference box exists and
            ``no_truth="raise"``.
    """
    if len(truth) != len(detections):
        msg = f"truth has {len(truth)} images but detections has {len(detections)}"
        raise ValueError(msg)
    n_images = len(truth)
    iou_thresholds = COCO_IOU_THRESHOLDS
    n_t = iou_thresholds.size
    area_ranges = np.asarray(COCO_AREA_RANGES, dtype=np.float64)
    n_a = area_ranges.shape[0]
    max_dets = COCO_MAX_DETECTIONS
    max_keep = max_dets[-1]

    # ---- flat tables -------------------------------------------------------------------------
    g_img = np.concatenate(
        [np.full(t.category_ids.size, i, dtype=np.int64) for i, t in enumerate(truth)]
        or [np.zeros(0, dtype=np.int64)]
    ).astype(np.int64)
    g_cat_raw = np.concatenate(
        [t.category_ids for t in truth] or [np.zeros(0, dtype=np.int64)]
    ).astype(np.int64)
    categories = np.unique(g_cat_raw)
    if categories.size == 0:
        if no_truth == "raise":
            msg = "no reference box in any image: COCO AP/AR are undefined"
            raise ValueError(msg)
        return CocoBoxStats(stats=(-1.0,) * 12)
    n_k = categories.size
    g_box = np.concatenate([t.boxes_xywh for t in truth]).reshape(-1, 4)
    g_area = np.concatenate([t.areas for t in truth])  # type: ignore[misc]
    g_crowd = np.concatenate([t.is_crowd for t in truth]).astype(bool)  # type: ignore[misc]
    g_cat = np.searchsorted(categories, g_cat_raw)
    g_pos = np.arange(g_img.size)  # position = image order, then the image's own order

    d_img = np.concatenate(
        [np.full(d.category_ids.size, i, dtype=np.int64) for i, d in enumerate(detections)]
        or [np.zeros(0, dtype=np.int64)]
    ).astype(np.int64)
    d_cat_raw = np.concatenate(
        [d.category_ids for d in detections] or [np.zeros(0, dtype=np.int64)]
    ).astype(np.int64)
    d_box = np.concatenate([d.boxes_xywh for d in detections] or [np.zeros((0, 4))]).reshape(-1, 4)
    d_score = np.concatenate([d.scores for d in detections] or [np.zeros(0)]).astype(np.float64)
    d_pos = np.arange(d_img.size)
    known = np.isin(d_cat_raw, categories)
    d_img, d_box, d_score, d_pos = d_img[known], d_box[known], d_score[known], d_pos[known]
    d_cat = np.searchsorted(categories, d_cat_raw[known])

    # group key = category-major, then image
    g_key = g_cat * n_images + g_img
    d_key = d_cat * n_images + d_img
    g_order = np.lexsort((g_pos, g_key))
    g_key, g_box, g_area, g_crowd = (
        g_key[g_order],
        g_box[g_order],
        g_area[g_order],
        g_crowd[g_order],
    )
    d_order = np.lexsort((d_pos, -d_score, d_key))
    d_key, d_box, d_score = d_key[d_order], d_box[d_order], d_score[d_order]

    groups, g_inverse = np.unique(np.concatenate([g_key, d_key]), return_inverse=True)
    g_group = g_inverse[: g_key.size]
    d_group = g_inverse[g_key.size :]
    n_groups = groups.size
    g_count = np.bincount(g_group, minlength=n_groups)
    g_start = np.concatenate([[0], np.cumsum(g_count)[:-1]])
    g_rank = np.arange(g_key.size) - g_start[g_group]
    d_count_all = np.bincount(d_group, minlength=n_groups)
    d_start = np.concatenate([[0], np.cumsum(d_count_all)[:-1]])
    d_rank = np.arange(d_key.size) - d_start[d_group]
    kept = d_rank < max_keep
    d_key, d_box, d_score, d_group, d_rank = (
        d_key[kept],
        d_box[kept],
        d_score[kept],
        d_group[kept],
        d_rank[kept],
    )
    d_count = np.minimum(d_count_all, max_keep)
    d_area = d_box[:, 2] * d_box[:, 3]

    # ignore flags per area range: (A, n_gt) and (A, n_dt)
    g_ignore = g_crowd[None, :] | (
        (g_area[None, :] < area_ranges[:, :1]) | (g_area[None, :] > area_ranges[:, 1:])
    )
    d_outside = (d_area[None, :] < area_ranges[:, :1]) | (d_area[None, :] > area_ranges[:, 1:])

    # ---- greedy matching, batched over groups of similar size ---------------------------------
    d_matched = np.zeros((n_a, n_t, d_key.size), dtype=bool)
    d_ignored = np.zeros((n_a, n_t, d_key.size), dtype=bool)
    thresholds = np.minimum(iou_thresholds, 1 - 1e-10)
    bucket = _ceil_pow2(np.maximum(d_count, 1)) * 4096 + _ceil_pow2(np.maximum(g_count, 1))
    active = (d_count > 0) & (g_count > 0)
    for bucket_id in np.unique(bucket[active]):
        members = np.flatnonzero(active & (bucket == bucket_id))
        n_b = members.size
        n_d = int(d_count[members].max())
        n_g = int(g_count[members].max())
        slot = np.full(n_groups, -1, dtype=np.int64)
        slot[members] = np.arange(n_b)
        g_sel = np.flatnonzero(slot[g_group] >= 0)
        d_sel = np.flatnonzero(slot[d_group] >= 0)
        gb, gr = slot[g_group[g_sel]], g_rank[g_sel]
        db, dr = slot[d_group[d_sel]], d_rank[d_sel]
        gbox = np.zeros((n_b, n_g, 4))
        gbox[gb, gr] = g_box[g_sel]
        gcrowd = np.zeros((n_b, n_g), dtype=bool)
        gcrowd[gb, gr] = g_crowd[g_sel]
        gvalid = np.zeros((n_b, n_g), dtype=bool)
        gvalid[gb, gr] = True
        gign = np.zeros((n_a, n_b, n_g), dtype=bool)
        gign[:, gb, gr] = g_ignore[:, g_sel]
        dbox = np.zeros((n_b, n_d, 4))
        dbox[db, dr] = d_box[d_sel]
        dvalid = np.zeros((n_b, n_d), dtype=bool)
        dvalid[db, dr] = True
        iou = _iou_padded(dbox, gbox, gcrowd)  # (B, D, G)
        taken = np.zeros((n_a, n_t, n_b, n_g), dtype=bool)
        match_flag = np.zeros((n_a, n_t, n_b, n_d), dtype=bool)
        match_ign = np.zeros((n_a, n_t, n_b, n_d), dtype=bool)
        reusable = gcrowd[None, None]
        regular = ~gign[:, None]  # (A, 1, B, G)
        for d in range(n_d):
            iou_d = iou[:, d, :]  # (B, G)
            passes = (iou_d[None] >= thresholds[:, None, None]) & gvalid[None]  # (T, B, G)
            eligible = passes[None] & ~(taken & ~reusable)  # (A, T, B, G)
            cand_regular = eligible & regular
            has_regular = cand_regular.any(axis=-1)
            cand = np.where(has_regular[..., None], cand_regular, eligible & ~regular)  # type: ignore[index]
            found = cand.any(axis=-1) & dvalid[None, None, :, d]
            value = np.where(cand, iou_d[None, None], -1.0)
            best = n_g - 1 - np.argmax(value[..., ::-1], axis=-1)  # last maximum
            a_idx, t_idx, b_idx = np.nonzero(found)
            m_idx = best[a_idx, t_idx, b_idx]
            taken[a_idx, t_idx, b_idx, m_idx] = True
            match_flag[a_idx, t_idx, b_idx, d] = True
            match_ign[a_idx, t_idx, b_idx, d] = gign[a_idx, b_idx, m_idx]
        d_matched[:, :, d_sel] = match_flag[:, :, db, dr]
        d_ignored[:, :, d_sel] = match_ign[:, :, db, dr]
    d_ignored |= ~d_matched & d_outside[:, None, :]

    # ---- accumulate exactly as COCOeval.accumulate ---------------------------------------------
    n_r = COCO_RECALL_THRESHOLDS.size
    n_m = len(max_dets)
    precision = -np.ones((n_t, n_r, n_k, n_a, n_m))
    recall = -np.ones((n_t, n_k, n_a, n_m))
    d_cat_sorted = d_key // n_images
    g_cat_sorted = g_key // n_images
    group_cat = groups // n_images
    for k in range(n_k):
        if not np.any(group_cat == k):
            continue
        in_cat = d_cat_sorted == k
        g_in_cat = g_cat_sorted == k
        for a in range(n_a):
            npig = int(np.count_nonzero(~g_ignore[a, g_in_cat]))
            if npig == 0:
                continue
            for m, max_det in enumerate(max_dets):
                sel = np.flatnonzero(in_cat & (d_rank < max_det))
                scores = d_score[sel]
                order = np.argsort(-scores, kind="mergesort")
                dtm = d_matched[a][:, sel[order]]
                dtig = d_ignored[a][:, sel[order]]
                tps = np.logical_and(dtm, np.logical_not(dtig))
                fps = np.logical_and(np.logical_not(dtm), np.logical_not(dtig))
                tp_sum = np.cumsum(tps, axis=1).astype(dtype=float)
                fp_sum = np.cumsum(fps, axis=1).astype(dtype=float)
                nd = sel.size
                for t in range(n_t):
                    tp, fp = tp_sum[t], fp_sum[t]
                    rc = tp / npig
                    pr = tp / (fp + tp + np.spacing(1))
                    recall[t, k, a, m] = rc[-1] if nd else 0
                    q = np.zeros(n_r)
                    if nd:
                        pr = np.maximum.accumulate(pr[::-1])[::-1]
                        inds = np.searchsorted(rc, COCO_RECALL_THRESHOLDS, side="left")
                        inside = inds < nd
                        q[inside] = pr[inds[inside]]
                    precision[t, :, k, a, m] = q

    # ---- summarize exactly as COCOeval.summarize ------------------------------------------------
    def _mean(values: npt.NDArray[np.float64]) -> float:
        defined = values[values > -1]
        return -1.0 if defined.size == 0 else float(np.mean(defined))

    last = n_m - 1
    t50 = int(np.flatnonzero(iou_thresholds == 0.5)[0])
    t75 = int(np.flatnonzero(iou_thresholds == 0.75)[0])
    stats = (
        _mean(precision[:, :, :, 0, last]),
        _mean(precision[[t50]][:, :, :, 0, last]),
        _mean(precision[[t75]][:, :, :, 0, last]),
        _mean(precision[:, :, :, 1, last]),
        _mean(precision[:, :, :, 2, last]),
        _mean(precision[:, :, :, 3, last]),
        _mean(recall[:, :, 0, 0]),
        _mean(recall[:, :, 0, 1]),
        _mean(recall[:, :, 0, last]),
        _mean(recall[:, :, 1, last]),
        _mean(recall[:, :, 2, last]),
        _mean(recall[:, :, 3, last]),
    )
    return CocoBoxStats(stats=stats)
