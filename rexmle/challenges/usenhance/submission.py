"""USenhance validity rules (spec usenhance.md): PNG, Pillow mode ``L``, the size of image_sizes.csv."""

from __future__ import annotations

import csv
import functools
from pathlib import Path

import numpy as np
from PIL import Image, UnidentifiedImageError


@functools.cache
def expected_sizes(public_dir: Path) -> dict[str, tuple[int, int]]:
    """(height, width) per test id from ``public/test/image_sizes.csv``."""
    with open(public_dir / "test" / "image_sizes.csv", newline="", encoding="utf-8") as handle:
        return {r["image_id"]: (int(r["height"]), int(r["width"])) for r in csv.DictReader(handle)}


def read_gray_png(path: Path) -> np.ndarray:
    """Pixels of an 8-bit grayscale PNG as uint8 (height, width)."""
    with Image.open(path) as image:
        image.load()
        return np.asarray(image, dtype=np.uint8)


def check_enhanced_png(case_id: str, path: Path, public_dir: Path) -> list[str]:
    """Reasons why ``path`` is not a valid enhanced image for ``case_id``."""
    if not path.name.lower().endswith(".png"):
        return [f"{path.name}: write a PNG file (.png)"]
    try:
        with Image.open(path) as image:
            image.load()
            mode, (width, height), fmt = image.mode, image.size, image.format
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
    expected = expected_sizes(public_dir)[case_id]
    if (height, width) != expected:
        reasons.append(
            f"{path.name}: height x width {height} x {width}, expected {expected[0]} x {expected[1]} "
            f"(public/test/image_sizes.csv); nothing is resized for you"
        )
    return reasons
