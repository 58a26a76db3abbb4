"""Mini raw fixture of USenhance: ``train_datasets/<organ>/{low_quality,high_quality}/<name>.png``.

Five organs x four pairs named ``1, 2, 10, 11`` (string order differs from numeric order), 8-bit
48 x 64 (height x width) images: the high-quality image is smooth anatomy with speckle; the
low-quality one is its blurred, noisier copy. The liver's high-quality images are stored as RGB
with equal channels (the real release mixes modes; prepare converts them to 8-bit grayscale).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image
from scipy import ndimage

from .prepare import ORGANS

NAMES = ("1", "2", "10", "11")
HEIGHT, WIDTH = 48, 64


def _pair(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    y, x = np.mgrid[:HEIGHT, :WIDTH]
    cy, cx = rng.uniform(14, 34), rng.uniform(18, 46)
    ry, rx = rng.uniform(6, 12), rng.uniform(8, 16)
    inside = ((y - cy) / ry) ** 2 + ((x - cx) / rx) ** 2 <= 1
    anatomy = 60 + 40 * (y / HEIGHT) + 90 * inside
    speckle = ndimage.gaussian_filter(rng.gamma(4.0, 0.25, anatomy.shape), 0.7)
    high = np.clip(anatomy * speckle, 0, 255)
    low = ndimage.gaussian_filter(high, 1.5) + rng.normal(0, 12, high.shape)
    return high.astype(np.uint8), np.clip(low, 0, 255).astype(np.uint8)


def make_fixture(raw_dir: Path, *, seed: int = 0) -> None:
    """Write 20 pairs under ``raw_dir/train_datasets``."""
    rng = np.random.default_rng(seed)
    for organ in ORGANS:
        for name in NAMES:
            high, low = _pair(rng)
            for quality, array in (("high_quality", high), ("low_quality", low)):
                folder = raw_dir / "train_datasets" / organ / quality
                folder.mkdir(parents=True, exist_ok=True)
                image = Image.fromarray(array)
                if organ == "liver" and quality == "high_quality":
                    image = Image.merge("RGB", (image, image, image))
                image.save(folder / f"{name}.png")
