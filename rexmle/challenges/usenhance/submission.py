"""USenhance validity rules (spec usenhance.md): PNG, Pillow mode ``L``, the size of image_sizes.csv."""

from __future__ import annotations

import csv
import functools
from pathlib import Path

import numpy as np
from PIL import UnidentifiedImageError

from rexmle.io import open_pillow
from rexmle.tasks.checks import pixel_budget


@functools.cache
def expected_sizes(public_dir: Path) -> dict[str, tuple[int, int]]:
    """(height, width) per test id from ``public/test/image_sizes.csv``."""
    with open(public_dir / "test" / "image_sizes.csv", newline="", encoding="utf-8") as handle:
        return {r["image_id"]: (int(r["height"]), int(r["width"])) for r in csv.DictReader(handle)}


def read_gray_png(path: Path) -> np.ndarray:
    """Pixels of an 8-bit grayscale PNG as uint8 (height, width)."""
    with open_pillow(path) as image:
        image.load()
        return np.asarray(image, dtype=np.uint8)


def check_enhanced_png(case_id: str, path: Path, public_dir: Path) -> list[str]:
    """Reasons why ``path`` is not a valid enhanced image for ``case_id``."""
    if not path.name.lower().endswith(".png"):
        return [f"{path.name}: write a PNG file (.png)"]
    expected = expected_sizes(public_dir)[case_id]
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
