"""Topology of masks and label maps: connected components, Betti numbers, clDice, neighbours."""

from __future__ import annotations

import cc3d
import numpy as np
import numpy.typing as npt

__all__ = [
    "VALID_CONNECTIVITIES",
    "component_count",
    "connected_components",
]

VALID_CONNECTIVITIES: dict[int, tuple[int, ...]] = {2: (4, 8), 3: (6, 18, 26)}
"""Allowed `connectivity` values per number of array dimensions.

In 3-D, 6 joins voxels that share a face, 18 a face or an edge, 26 a face, an edge or a corner.
In 2-D, 4 joins pixels that share an edge, 8 an edge or a corner::

    6 / 4 (faces)     26 / 8 (faces, edges, corners)
      . x .               x x x
      x o x               x o x
      . x .               x x x
"""


def _check_connectivity(ndim: int, connectivity: int) -> None:
    allowed = VALID_CONNECTIVITIES.get(ndim)
    if allowed is None:
        msg = f"connected components need a 2-D or 3-D array, got {ndim} dimensions"
        raise ValueError(msg)
    if connectivity not in allowed:
        msg = f"connectivity for a {ndim}-D array must be one of {allowed}, got {connectivity}"
        raise ValueError(msg)


def connected_components(
    mask: npt.NDArray[np.bool_], *, connectivity: int
) -> tuple[npt.NDArray[np.uint32], int]:
    """Label the connected components of a binary mask.

    Definition: two foreground voxels are connected when they are neighbours under
        `connectivity` (see `VALID_CONNECTIVITIES`); a component is a maximal connected set.
        Components are numbered 1..N in raster order of their first voxel; background is 0.
    Empty: an empty mask has N = 0 and an all-zero label array.
    Follows: `cc3d.connected_components`, used by the ISLES'22, TopCoW and TopBrain codes.

    Args:
        mask: 2-D or 3-D binary mask.
        connectivity: 4 or 8 in 2-D; 6, 18 or 26 in 3-D. No default: the challenges differ.

    Returns:
        The label array (uint32, same shape as `mask`) and the number of components N.

    Raises:
        TypeError: `mask` is not a boolean array.
        ValueError: `mask` is not 2-D or 3-D, or `connectivity` is not allowed for it.
    """
    if not isinstance(mask, np.ndarray) or mask.dtype != np.bool_:
        msg = "mask must be a numpy array of dtype bool"
        raise TypeError(msg)
    _check_connectivity(mask.ndim, connectivity)
    labels, count = cc3d.connected_components(
        mask, connectivity=connectivity, return_N=True, out_dtype=np.uint32
    )
    return labels, int(count)


def component_count(mask: npt.NDArray[np.bool_], *, connectivity: int) -> int:
    """Number of connected components of a binary mask (Betti number b0).

    Definition: N of `connected_components`. Units: components. Empty: 0.

    Args:
        mask: 2-D or 3-D binary mask.
        connectivity: 4 or 8 in 2-D; 6, 18 or 26 in 3-D.

    Returns:
        The number of components.

    Raises:
        TypeError: `mask` is not a boolean array.
        ValueError: `mask` is not 2-D or 3-D, or `connectivity` is not allowed for it.
    """
    return connected_components(mask, connectivity=connectivity)[1]
