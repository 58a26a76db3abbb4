"""Overlap of axis-aligned voxel boxes in closed form (box IoU, TopCoW boundary IoU).

A box is given by `location` (index of its first voxel per axis) and `size` (number of voxels
per axis); it holds the voxels v with location_i ≤ v_i ≤ location_i + size_i − 1 on every axis
(inclusive voxel-index boxes). Counts are computed from the per-axis overlaps, never from
voxel sets, so any box size costs the same.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = [
    "boundary_iou",
    "box_intersection_voxels",
    "box_iou",
    "box_voxels",
    "enlarged_box_iou",
]


def _check_box(name: str, location: Sequence[int], size: Sequence[int]) -> None:
    if len(location) != len(size) or len(size) == 0:
        msg = f"{name}: location {tuple(location)} and size {tuple(size)} need the same length >= 1"
        raise ValueError(msg)
    for value in (*location, *size):
        if isinstance(value, bool) or not isinstance(value, int):
            msg = f"{name}: locations and sizes must be int, got {value!r}"
            raise TypeError(msg)
    if min(size) < 1:
        msg = f"{name}: every size must be >= 1, got {tuple(size)}"
        raise ValueError(msg)


def box_voxels(size: Sequence[int]) -> int:
    """Number of voxels of a box: the product of its sizes (0 if any size ≤ 0)."""
    return math.prod(max(int(s), 0) for s in size)


def _overlap_voxels(
    a_first: Sequence[int],
    a_last: Sequence[int],
    b_first: Sequence[int],
    b_last: Sequence[int],
) -> int:
    """Voxels shared by two inclusive boxes given by first and last index (empty if last < first)."""
    count = 1
    for a0, a1, b0, b1 in zip(a_first, a_last, b_first, b_last, strict=True):
        length = min(a1, b1) - max(a0, b0) + 1
        if length <= 0 or a1 < a0 or b1 < b0:
            return 0
        count *= length
    return count


def box_intersection_voxels(
    location_a: Sequence[int],
    size_a: Sequence[int],
    location_b: Sequence[int],
    size_b: Sequence[int],
) -> int:
    """Number of voxels in the intersection of two boxes.

    Definition: Π_i max(0, min(a_i + s_i − 1, b_i + t_i − 1) − max(a_i, b_i) + 1).

    Raises:
        TypeError: a location or size is not an int.
        ValueError: lengths differ or a size is < 1.
    """
    _check_box("box a", location_a, size_a)
    _check_box("box b", location_b, size_b)
    if len(size_a) != len(size_b):
        msg = f"boxes have {len(size_a)} and {len(size_b)} axes"
        raise ValueError(msg)
    last_a = [loc + s - 1 for loc, s in zip(location_a, size_a, strict=True)]
    last_b = [loc + s - 1 for loc, s in zip(location_b, size_b, strict=True)]
    return _overlap_voxels(location_a, last_a, location_b, last_b)


def box_iou(
    location_a: Sequence[int],
    size_a: Sequence[int],
    location_b: Sequence[int],
    size_b: Sequence[int],
) -> float:
    """Intersection over union of two inclusive voxel-index boxes.

    Definition: |A ∩ B| / (|A| + |B| − |A ∩ B|), voxel counts.
    Units: none, in [0, 1]; higher is better. Empty: boxes have size ≥ 1, so the union is never
        empty.
    Follows: TopCoW 2024 Task 2 `IoU` (= `boundary_iou` with ratio 0.5, whose shell is the
        whole box).

    Args:
        location_a: first voxel index of box A per axis.
        size_a: voxels of box A per axis (≥ 1).
        location_b: first voxel index of box B per axis.
        size_b: voxels of box B per axis (≥ 1).

    Returns:
        The IoU.

    Raises:
        TypeError: a location or size is not an int.
        ValueError: lengths differ or a size is < 1.
    """
    intersection = box_intersection_voxels(location_a, size_a, location_b, size_b)
    return intersection / (box_voxels(size_a) + box_voxels(size_b) - intersection)


def boundary_iou(
    location_a: Sequence[int],
    size_a: Sequence[int],
    location_b: Sequence[int],
    size_b: Sequence[int],
    *,
    ratio: float = 0.2,
) -> float:
    """Boundary IoU of two boxes: IoU of their boundary shells of relative thickness `ratio`.

    Definition: for a box X with size s, d_i = ceil(s_i · ratio) (float arithmetic, as the
        official code); shell(X) = voxels of X within d_i of either face on some axis i;
        core(X) = X shrunk by d_i on both sides of every axis (empty if a side length ≤ 0).
        Closed form: |shell(A) ∩ shell(B)| = |A∩B| − |core(A)∩B| − |A∩core(B)|
        + |core(A)∩core(B)|; |shell(X)| = |X| − |core(X)|;
        Boundary IoU = intersection / (|shell(A)| + |shell(B)| − intersection).
    Units: none, in [0, 1]; higher is better. Empty: a shell is never empty (sizes ≥ 1).
    Follows: TopCoW 2024 Task 2 `Boundary_IoU` (`boundary_iou_from_tuple`, ratio 0.2; ratio 0.5
        gives the plain `IoU`), CoWBenchmark/TopCoW_Eval_Metrics @25ca839.
    Differs: closed form instead of voxel sets (identical counts; boxes are used unclipped, as
        in the official metric).

    Args:
        location_a: first voxel index of box A per axis (may be negative).
        size_a: voxels of box A per axis (≥ 1).
        location_b: first voxel index of box B per axis.
        size_b: voxels of box B per axis (≥ 1).
        ratio: shell thickness relative to the box size, in (0, 0.5].

    Returns:
        The boundary IoU.

    Raises:
        TypeError: a location or size is not an int.
        ValueError: lengths differ, a size is < 1, or `ratio` is outside (0, 0.5].
    """
    if not (0.0 < ratio <= 0.5):
        msg = f"ratio must be in (0, 0.5], got {ratio}"
        raise ValueError(msg)
    box_intersection_voxels(location_a, size_a, location_b, size_b)  # validates both boxes

    def first_last_core(
        location: Sequence[int], size: Sequence[int]
    ) -> tuple[list[int], list[int], list[int], list[int]]:
        first = [int(loc) for loc in location]
        last = [loc + s - 1 for loc, s in zip(first, size, strict=True)]
        depth = [math.ceil(s * ratio) for s in size]
        core_first = [f + d for f, d in zip(first, depth, strict=True)]
        core_last = [e - d for e, d in zip(last, depth, strict=True)]
        return first, last, core_first, core_last

    a0, a1, ca0, ca1 = first_last_core(location_a, size_a)
    b0, b1, cb0, cb1 = first_last_core(location_b, size_b)
    both = _overlap_voxels(a0, a1, b0, b1)
    core_a_box_b = _overlap_voxels(ca0, ca1, b0, b1)
    box_a_core_b = _overlap_voxels(a0, a1, cb0, cb1)
    core_both = _overlap_voxels(ca0, ca1, cb0, cb1)
    intersection = both - core_a_box_b - box_a_core_b + core_both
    shell_a = _overlap_voxels(a0, a1, a0, a1) - _overlap_voxels(ca0, ca1, ca0, ca1)
    shell_b = _overlap_voxels(b0, b1, b0, b1) - _overlap_voxels(cb0, cb1, cb0, cb1)
    return intersection / (shell_a + shell_b - intersection)


def enlarged_box_iou(
    location_a: Sequence[int],
    size_a: Sequence[int],
    location_b: Sequence[int],
    size_b: Sequence[int],
    *,
    ratio: float,
) -> float:
    """IoU of the two boxes each grown outward by ceil(ratio · size) voxels on both sides.

    Definition: for a box X with size s and first index l, d_i = ceil(s_i · ratio); grown(X) has
        first index l_i − d_i and size s_i + 2·d_i; the result is `box_iou(grown(A), grown(B))`.
    Units: none, in [0, 1]; higher is better. Empty: sizes ≥ 1, the union is never empty.
    Follows: no challenge. It is the published study's reading of TopCoW's boundary IoU
        (its ``boundary_points_with_distances`` grows the box instead of taking the inner band);
        ratio 0.2 stands for its ``Boundary_IoU``, 0.5 for its ``IoU``. Not the official metric:
        see `boundary_iou` and `box_iou`.

    Args:
        location_a: first voxel index of box A per axis.
        size_a: voxels of box A per axis (≥ 1).
        location_b: first voxel index of box B per axis.
        size_b: voxels of box B per axis (≥ 1).
        ratio: the growth relative to the box size, > 0.

    Returns:
        The IoU of the grown boxes.

    Raises:
        TypeError: a location or size is not an int.
        ValueError: lengths differ, a size is < 1, or `ratio` is not > 0.
    """
    if not ratio > 0.0:
        msg = f"ratio must be > 0, got {ratio}"
        raise ValueError(msg)
    box_intersection_voxels(location_a, size_a, location_b, size_b)  # validates both boxes

    def grown(location: Sequence[int], size: Sequence[int]) -> tuple[list[int], list[int]]:
        depth = [math.ceil(s * ratio) for s in size]
        return (
            [int(loc) - d for loc, d in zip(location, depth, strict=True)],
            [int(s) + 2 * d for s, d in zip(size, depth, strict=True)],
        )

    return box_iou(*grown(location_a, size_a), *grown(location_b, size_b))
