"""Mask helpers the families' preparation and baselines share: copies, empty samples, components."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import numpy.typing as npt
from scipy import ndimage

from rexmle.io import Geometry, write_image

BOX_26 = np.ones((3, 3, 3), dtype=bool)
"""The 3 x 3 x 3 structuring element: 26-connectivity in 3-D."""


def copy_file(source: Path, target: Path) -> None:
    """Copy ``source`` to ``target`` byte for byte (parents created)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)


def write_empty_mask(path: Path, geometry: Geometry) -> None:
    """Write an all-zero ``uint8`` mask on ``geometry``'s grid (the sample submission's file)."""
    write_image(path, np.zeros(geometry.shape, dtype=np.uint8), like=geometry)


def largest_component(mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
    """The largest 26-connected component of a 3-D ``mask``; an empty or one-piece mask as is.

    Ties between equally large components keep the one with the lowest label (scan order).
    """
    labels, count = ndimage.label(mask, structure=BOX_26)
    if count <= 1:
        return mask
    sizes = np.bincount(labels.ravel())
    sizes[0] = 0
    return np.asarray(labels == int(np.argmax(sizes)))
