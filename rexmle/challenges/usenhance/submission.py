"""USenhance validity rules (spec usenhance.md): PNG, Pillow mode ``L``, the size of image_sizes.csv."""

from __future__ import annotations

import csv
import functools
from pathlib import Path

import numpy as np
from PIL import UnidentifiedImageError

from rexmle.io import open_pillow
from rexmle.tasks.checks import pixel_budget
from rexmle.tasks.jobs import CheckContext
from rexmle.tasks.submission import SubmissionCase

SIZES_CSV = "test/image_sizes.csv"
"""Public file ``<id column>,height,width``: the size each enhanced image must have."""


@functools.cache
def expected_sizes(public_dir: Path, id_column: str) -> dict[str, tuple[int, int]]:
    """(height, width) per test id from ``public/test/image_sizes.csv``."""
    with open(public_dir / SIZES_CSV, newline="", encoding="utf-8") as handle:
        return {r[id_column]: (int(r["height"]), int(r["width"])) for r in csv.DictReader(handle)}


def read_gray_png(path: Path) -> np.ndarray:
    """Pixels of an 8-bit grayscale PNG as uint8 (height, width)."""
    with open_pillow(path) as image:
        image.load()
        return np.asarray(image, dtype=np.uint8)


def check_case(case: SubmissionCase, context: CheckContext) -> list[str]:
    """Reasons why the case's file (named ``.png``, as declared) is not a valid enhanced image.

    The file must be a PNG that Pillow reads, in mode ``L`` (8-bit single channel), of the
    height x width given in ``public/test/image_sizes.csv``; nothing is converted or resized.
    """
    assert context.task.submission is not None  # the YAML declares the columns
    (path,) = case.paths.values()
    expected = expected_sizes(context.public, context.task.submission.id_column)[case.case_id]
    try:
        with open_pillow(path) as image:  # lazy: the header only, until load()
            mode, (width, height), fmt = image.mode, image.size, image.format
            declared = width * height * len(image.getbands())
            if declared > pixel_budget(expected):
                return [
                    f"{path.name}: the header declares {height} x {width} pixels with "
                    f"{len(image.getbands())} band(s), more than {pixel_budget(expected)} values "
                    f"allowed (the expected size is {expected[0]} x {expected[1]}); the file was "
                    f"not decoded"
                ]
            image.load()
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as err:
        return [f"unreadable file {path.name}: {err}"]
    if fmt != "PNG":
        return [f"{path.name}: the file is {fmt}, not PNG"]
    reasons = []
    if mode != "L":
        reasons.append(
            f"{path.name}: Pillow mode {mode!r}; write 8-bit single-channel grayscale (mode 'L'). "
            f"Nothing is converted for you."
        )
    if (height, width) != expected:
        reasons.append(
            f"{path.name}: height x width {height} x {width}, expected {expected[0]} x {expected[1]} "
            f"(public/test/image_sizes.csv); nothing is resized for you"
        )
    return reasons
