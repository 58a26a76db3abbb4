"""How each task's input image is shown under an overlay: which public file, which channel, and
how its values become grey levels; and the drawing of outlines, boxes and points on it.

Per task (``IMAGE_VIEWS``): the input image a challenge's readers look at (ISLES'22: the DWI;
TopCoW/TopBrain: the CTA or TOF-MRA, as a maximum-intensity projection along z under boxes;
DENTEX: the panoramic radiograph; PUMA: the H&E tile in colour), named by a template relative
to the task's ``public/`` folder with ``{case_id}`` replaced.

Grey levels (:func:`display_grey`), definitions:

- a *window* (level L, width W, in the image's units, e.g. Hounsfield units for CT) maps
  ``v`` to ``255 * clip((v - (L - W/2)) / W, 0, 1)``;
- *percentile scaling* (MRI, radiographs, microscopy: no absolute units) uses the window from
  the ``low``-th to the ``high``-th percentile of the shown slice's values;
- colour images (H&E) are shown as they are (their first three channels).

Display geometry: a 3-D slice ``array[:, :, z]`` is shown transposed, rows = y, columns = x
(axial, radiological: patient right on the left for an LPS image with identity direction);
2-D images as ``array[row, col]``. Panels are resampled by nearest neighbour to at most
``PANEL_MAX`` pixels (rows, columns) and at most ``MAX_UPSCALE`` x; outlines are computed at
display resolution so that they are never thinned away.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

GOLD = (40, 200, 90)
PRED = (230, 60, 50)
BOTH = (245, 215, 40)
"""Where the gold and the predicted outline coincide."""
PANEL_MAX = (300, 420)
"""Largest panel, (rows, columns) in display pixels."""
MAX_UPSCALE = 16


@dataclass(frozen=True)
class ImageView:
    """The input image of a task's case and how its values are shown."""

    template: str
    """Path relative to ``public/`` with ``{case_id}``; a ``*`` matches any file suffix."""
    what: str
    """The image in words, shown in captions (e.g. ``DWI``)."""
    window: tuple[float, float] | None = None
    """(level, width) in the image's units; None: percentile scaling."""
    percentiles: tuple[float, float] = (1.0, 99.0)
    colour: bool = False
    """Show the first three channels as RGB (H&E); else a single grey channel."""
    projection: Literal["slice", "mip"] = "slice"
    """``mip``: 3-D images under boxes are shown as a maximum-intensity projection along z."""

    @property
    def scaling(self) -> str:
        """The grey-level mapping in words."""
        if self.colour:
            return "colour as stored"
        if self.window is not None:
            level, width = self.window
            return f"window W {width:g} / L {level:g}"
        low, high = self.percentiles
        return f"{low:g}th–{high:g}th percentile"


_CTA = (200.0, 800.0)
"""Vascular CT window: level 200 HU, width 800 HU (contrast-filled vessels bright, bone white)."""
_TOPCOW_CT = ImageView("test/images/topcow_ct_{case_id}_0000.nii.gz", "CTA", window=_CTA)
_TOPCOW_MR = ImageView(
    "test/images/topcow_mr_{case_id}_0000.nii.gz", "TOF-MRA", percentiles=(1.0, 99.5)
)
_PUMA = ImageView("test/images/{case_id}.tif", "H&E", colour=True)
IMAGE_VIEWS: dict[str, ImageView] = {
    "isles22": ImageView("test/{case_id}_dwi.nii.gz", "DWI", percentiles=(0.5, 99.5)),
    "panther-task1": ImageView("test/images/{case_id}_0000.mha", "T1 CE (arterial)"),
    "panther-task2": ImageView("test/images/{case_id}_0000.mha", "T2 (MR-Linac)"),
    "seg_a": ImageView("test/images/{case_id}.nrrd", "CTA", window=_CTA),
    "topcow-track1-task1": _TOPCOW_CT,
    "topbrain-track1": _TOPCOW_CT,
    "topcow-track1-task2": ImageView(_TOPCOW_CT.template, "CTA (MIP)", _CTA, projection="mip"),
    "topcow-track2-task1": _TOPCOW_MR,
    "topbrain-track2": _TOPCOW_MR,
    "topcow-track2-task2": ImageView(
        _TOPCOW_MR.template, "TOF-MRA (MIP)", percentiles=(1.0, 99.5), projection="mip"
    ),
    "dentex": ImageView("test/images/{case_id}.png", "panoramic X-ray", percentiles=(0.5, 99.5)),
    "neurips-cellseg": ImageView("test/images/{case_id}.*", "microscopy", percentiles=(0.5, 99.5)),
    "puma-track1-task1": _PUMA,
    "puma-track1-task2": _PUMA,
    "puma-track2-task1": _PUMA,
    "puma-track2-task2": _PUMA,
}


def display_grey(values: npt.NDArray[np.generic], view: ImageView) -> npt.NDArray[np.uint8]:
    """A 2-D slice (or an (H, W, C) colour image) as display pixels: (H, W) grey levels by the
    view's window or percentiles, or (H, W, 3) colour (see the module docstring).
    """
    array = np.asarray(values)
    if view.colour and array.ndim == 3 and array.shape[2] >= 3:
        rgb = array[:, :, :3].astype(np.float64)
        top = 255.0 if rgb.max() <= 255 else float(rgb.max())
        return np.clip(rgb * (255.0 / top), 0, 255).astype(np.uint8)
    if array.ndim == 3:  # a colour image shown in grey: the channels' mean
        array = array[:, :, : min(3, array.shape[2])].mean(axis=2)
    data = array.astype(np.float64)
    finite = data[np.isfinite(data)]
    if view.window is not None:
        level, width = view.window
        low, high = level - width / 2, level + width / 2
    elif finite.size:
        low, high = (float(v) for v in np.percentile(finite, view.percentiles))
    else:
        low, high = 0.0, 1.0
    if not high > low:
        high = low + 1.0
    scaled = (np.nan_to_num(data, nan=low) - low) / (high - low)
    return (np.clip(scaled, 0.0, 1.0) * 255.0).round().astype(np.uint8)


def display_shape(shape: tuple[int, int]) -> tuple[int, int]:
    """(rows, columns) of the panel that shows an image of ``shape`` (aspect kept)."""
    rows, cols = shape
    scale = min(PANEL_MAX[0] / rows, PANEL_MAX[1] / cols, float(MAX_UPSCALE))
    return max(1, round(rows * scale)), max(1, round(cols * scale))


def resample(array: npt.NDArray[np.generic], shape: tuple[int, int]) -> npt.NDArray[np.generic]:
    """Nearest-neighbour resampling of the first two axes to ``shape``."""
    rows = (np.arange(shape[0]) * array.shape[0] // shape[0]).astype(np.intp)
    cols = (np.arange(shape[1]) * array.shape[1] // shape[1]).astype(np.intp)
    return np.asarray(array)[rows][:, cols]


def label_outline(labels: npt.NDArray[np.generic]) -> npt.NDArray[np.bool_]:
    """Labelled pixels (> 0) with a 4-neighbour of another label: the inner boundary of every
    label (between two touching labels as well as against the background).
    """
    padded = np.pad(np.asarray(labels), 1)
    centre = padded[1:-1, 1:-1]
    edge = np.zeros(centre.shape, dtype=bool)
    for shifted in (padded[:-2, 1:-1], padded[2:, 1:-1], padded[1:-1, :-2], padded[1:-1, 2:]):
        edge |= shifted != centre
    return edge & (centre > 0)  # type: ignore[operator]  # label arrays compare with 0


def thicken(edges: npt.NDArray[np.bool_], source: tuple[int, int]) -> npt.NDArray[np.bool_]:
    """Edges grown by one pixel (3 x 3) when the panel enlarges an image of ``source`` rows and
    columns at least 3 times, so that an outline stays visible; else unchanged.
    """
    if min(edges.shape[0] / source[0], edges.shape[1] / source[1]) < 3:
        return edges
    padded = np.pad(edges, 1)
    grown = np.zeros_like(edges)
    for dr in range(3):
        for dc in range(3):
            grown |= padded[dr : dr + edges.shape[0], dc : dc + edges.shape[1]]
    return grown


Box = tuple[float, float, float, float]
"""(x, y, width, height): x along columns, y along rows, in image pixels or voxels."""


def box_edges(
    boxes: list[Box], source: tuple[int, int], shape: tuple[int, int]
) -> npt.NDArray[np.bool_]:
    """The one-pixel edges of ``boxes`` (image coordinates of an image of ``source`` rows and
    columns) on a display panel of ``shape``.
    """
    edges = np.zeros(shape, dtype=bool)
    sy, sx = shape[0] / source[0], shape[1] / source[1]
    for x, y, w, h in boxes:
        c0 = min(max(math.floor(x * sx), 0), shape[1] - 1)
        r0 = min(max(math.floor(y * sy), 0), shape[0] - 1)
        c1 = min(max(math.ceil((x + w) * sx) - 1, c0), shape[1] - 1)
        r1 = min(max(math.ceil((y + h) * sy) - 1, r0), shape[0] - 1)
        edges[r0 : r1 + 1, [c0, c1]] = True
        edges[[r0, r1], c0 : c1 + 1] = True
    return edges


POINT_RADIUS = 3
"""Display radius (pixels) of the ring drawn around a point detection."""


def point_rings(
    points: list[tuple[float, float]], source: tuple[int, int], shape: tuple[int, int]
) -> npt.NDArray[np.bool_]:
    """Rings of radius ``POINT_RADIUS`` around ``points`` (x, y in image pixels) on a panel."""
    rings = np.zeros(shape, dtype=bool)
    sy, sx = shape[0] / source[0], shape[1] / source[1]
    offsets = [
        (dr, dc)
        for dr in range(-POINT_RADIUS, POINT_RADIUS + 1)
        for dc in range(-POINT_RADIUS, POINT_RADIUS + 1)
        if POINT_RADIUS - 1 <= math.hypot(dr, dc) <= POINT_RADIUS + 0.5
    ]
    for x, y in points:
        row, col = math.floor(y * sy), math.floor(x * sx)
        for dr, dc in offsets:
            r, c = row + dr, col + dc
            if 0 <= r < shape[0] and 0 <= c < shape[1]:
                rings[r, c] = True
    return rings
