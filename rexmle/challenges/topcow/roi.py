"""The CoW region-of-interest box: the raw ``.txt`` format, the JSON form and the Task-1 crop.

A box is ``size`` (voxels along x, y, z) and ``location`` (0-based voxel index of its x-min, y-min,
z-min corner), both in SimpleITK index order (x, y, z) = the array order of :mod:`rexmle.io`.
It covers the indices ``[location, location + size - 1]`` on every axis.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from rexmle.errors import DataError

_INTEGER = re.compile(r"\b\d+\b")


@dataclass(frozen=True)
class Box:
    """An axis-aligned voxel box in (x, y, z) index order."""

    size: tuple[int, int, int]
    location: tuple[int, int, int]

    def to_json(self) -> dict[str, list[int]]:
        """The submission form ``{"size": [sx, sy, sz], "location": [x, y, z]}``."""
        return {"size": list(self.size), "location": list(self.location)}

    def crop(self, shape: tuple[int, ...]) -> tuple[slice, slice, slice]:
        """Array slices of this box clipped to an array of ``shape`` (official Task-1 crop).

        Per axis: start = max(0, location), end = min(dim - 1, location + size - 1), inclusive.

        Raises:
            ValueError: the box does not overlap the array.
        """
        slices = []
        for axis, (start, size, dim) in enumerate(
            zip(self.location, self.size, shape, strict=True)
        ):
            first, last = max(0, start), min(dim - 1, start + size - 1)
            if last < first:
                msg = f"box {self} lies outside the array of shape {tuple(shape)} on axis {axis}"
                raise ValueError(msg)
            slices.append(slice(first, last + 1))
        return slices[0], slices[1], slices[2]


def parse_roi_text(text: str, *, where: str) -> Box:
    r"""Parse the raw ROI file: line 2 holds the size, line 3 the location (3 integers each).

    Follows the official parser: every ``\b\d+\b`` token of line 2 and of line 3, e.g.
    ``Size (Voxels): 96 68 36`` / ``Location (Voxels): 103 93 77``.

    Raises:
        DataError: fewer than 3 lines, or a line without exactly 3 integer tokens.
    """
    lines = text.splitlines()
    if len(lines) < 3:
        msg = f"{where}: ROI file has {len(lines)} line(s); expected a header, size and location"
        raise DataError(msg)
    values = []
    for number, what in ((1, "size"), (2, "location")):
        tokens = [int(t) for t in _INTEGER.findall(lines[number])]
        if len(tokens) != 3:
            msg = (
                f"{where}: line {number + 1} ({what}) must hold 3 integers, "
                f"found {len(tokens)} in {lines[number]!r}"
            )
            raise DataError(msg)
        values.append((tokens[0], tokens[1], tokens[2]))
    return Box(size=values[0], location=values[1])


def read_roi(path: Path) -> Box:
    """Read and parse a raw ROI ``.txt`` file (see :func:`parse_roi_text`)."""
    return parse_roi_text(Path(path).read_text(encoding="utf-8"), where=str(path))


def format_roi_text(box: Box) -> str:
    """The raw 3-line ROI text of ``box`` (the format of the official release)."""
    sx, sy, sz = box.size
    x, y, z = box.location
    return f"--- ROI Meta Data ---\nSize (Voxels): {sx} {sy} {sz}\nLocation (Voxels): {x} {y} {z}\n"
