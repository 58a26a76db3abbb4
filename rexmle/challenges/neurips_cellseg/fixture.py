"""Mini raw fixture of NeurIPS-CellSeg: the extracted ``Training-labeled/`` and ``Tuning/`` trees.

Layout and naming follow the real release: ``<source>/images/cell_NNNNN.<ext>`` with mixed
extensions (png, bmp, tif, tiff), grayscale or RGB, one channel-first 3 x H x W TIFF, and
``<source>/labels/cell_NNNNN_label.tiff`` (uint16 instance maps). The Tuning stems collide with
Training-labeled stems on purpose. Images are 48 x 64: bright discs and rectangles (the cells) on
a dark noisy background; some cells touch the 2-pixel border band, and one test image has cells
only there (its GT is empty after boundary removal, which caps every submission).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt
import tifffile
from PIL import Image

from rexmle.split import shuffle_split

SHAPE = (48, 64)
TRAINING_NAMES: tuple[str, ...] = (
    "cell_00001.png",
    "cell_00002.bmp",
    "cell_00003.tif",
    "cell_00004.tiff",
    "cell_00005.png",
    "cell_00006.bmp",
    "cell_00007.tif",
    "cell_00008.png",
    "cell_00009.png",
    "cell_00010.tif",
    "cell_00011.bmp",
    "cell_00012.png",
)
TUNING_NAMES: tuple[str, ...] = (
    "cell_00001.tif",
    "cell_00002.png",
    "cell_00003.bmp",
    "cell_00004.png",
)
CHANNEL_FIRST = ("Training-labeled", "cell_00003.tif")
"""The one image stored channel-first (3 x H x W)."""

Key = tuple[str, str]
"""(source folder, image file name)."""


def split_test_keys(training: tuple[str, ...], tuning: tuple[str, ...]) -> set[Key]:
    """The pairs the split rule sends to test (same ordering and rule as prepare)."""
    keys = [("Training-labeled", n) for n in training] + [("Tuning", n) for n in tuning]
    ordered = sorted(keys, key=lambda k: Path(k[1]).stem)
    names = [f"{i:06d}" for i in range(len(ordered))]
    split = shuffle_split(names, test_fraction=0.2, seed=42, sort_keys=False)
    return {ordered[int(i)] for i in split.test}


def draw_cells(
    shape: tuple[int, int],
    n_cells: int,
    rng: np.random.Generator,
    *,
    border_cells: int = 0,
    interior: bool = True,
) -> npt.NDArray[np.uint16]:
    """An instance map with up to ``n_cells`` discs/rectangles on a jittered grid, plus
    ``border_cells`` rectangles inside the 2-pixel border band. Ids are 1..n in drawing order.
    """
    height, width = shape
    labels = np.zeros(shape, dtype=np.uint16)
    next_id = 1
    if interior and n_cells > 0:
        pitch = max(8.0, float(np.sqrt(height * width / n_cells)))
        rows, cols = int(height // pitch), int(width // pitch)
        cells = rng.permutation(rows * cols)[:n_cells]
        for cell in cells:
            r, c = divmod(int(cell), cols)
            radius = rng.uniform(0.22, 0.34) * pitch
            cy = (r + 0.5) * pitch + rng.uniform(-0.1, 0.1) * pitch
            cx = (c + 0.5) * pitch + rng.uniform(-0.1, 0.1) * pitch
            r0, r1 = max(0, int(cy - radius)), min(height, int(cy + radius) + 1)
            c0, c1 = max(0, int(cx - radius)), min(width, int(cx + radius) + 1)
            yy, xx = np.mgrid[r0:r1, c0:c1]
            if rng.uniform() < 0.5:
                inside = (yy - cy) ** 2 + (xx - cx) ** 2 <= radius**2
            else:
                inside = (np.abs(yy - cy) <= radius * 0.8) & (np.abs(xx - cx) <= radius)
            window = labels[r0:r1, c0:c1]
            window[inside & (window == 0)] = next_id
            next_id += 1
    for k in range(border_cells):
        column = int(rng.integers(4, width - 12))
        if k % 2 == 0:
            labels[0:5, column : column + 7] = next_id  # touches rows 0 and 1
        else:
            labels[height - 6 : height, column : column + 7] = next_id
        next_id += 1
    return labels


def _image_for(
    labels: npt.NDArray[np.uint16], name: str, rng: np.random.Generator, key: Key
) -> npt.NDArray[np.generic]:
    cells = labels > 0
    base = rng.normal(30.0, 8.0, labels.shape) + 120.0 * cells
    suffix = Path(name).suffix
    if key == CHANNEL_FIRST:
        return np.clip(np.stack([base, 0.6 * base, 0.3 * base]), 0, 255).astype(np.uint8)
    if suffix == ".bmp":
        return np.clip(np.stack([base, 0.5 * base, base], axis=-1), 0, 255).astype(np.uint8)
    if suffix in (".tif", ".tiff"):
        return np.clip(base * 200.0, 0, 65535).astype(np.uint16)
    return np.clip(base, 0, 255).astype(np.uint8)


def write_dataset(
    raw_dir: Path,
    *,
    training: tuple[str, ...],
    tuning: tuple[str, ...],
    seed: int,
    shape_for: Callable[[Key, bool], tuple[int, int]],
    cells_for: Callable[[Key, bool, np.random.Generator], int],
    border_only: Key | None = None,
) -> None:
    """Write image/label pairs for the given file names in the real folder layout.

    ``shape_for(key, is_test)`` and ``cells_for(key, is_test, rng)`` choose each image's size
    and number of interior cells; ``border_only`` names the pair whose cells all touch the band.
    """
    rng = np.random.default_rng(seed)
    tests = split_test_keys(training, tuning)
    for source, names in (("Training-labeled", training), ("Tuning", tuning)):
        (raw_dir / source / "images").mkdir(parents=True)
        (raw_dir / source / "labels").mkdir(parents=True)
        for index, name in enumerate(names):
            key = (source, name)
            is_test = key in tests
            shape = shape_for(key, is_test)
            if key == border_only:
                labels = draw_cells(shape, 0, rng, border_cells=2, interior=False)
            else:
                labels = draw_cells(
                    shape, cells_for(key, is_test, rng), rng, border_cells=index % 3
                )
            stem = Path(name).stem
            tifffile.imwrite(str(raw_dir / source / "labels" / f"{stem}_label.tiff"), labels)
            pixels = _image_for(labels, name, rng, key)
            target = raw_dir / source / "images" / name
            if key == CHANNEL_FIRST:
                tifffile.imwrite(str(target), pixels, photometric="rgb", planarconfig="separate")
            elif Path(name).suffix in (".tif", ".tiff"):
                tifffile.imwrite(str(target), pixels)
            else:
                Image.fromarray(pixels).save(target)  # type: ignore[arg-type]


def make_fixture(raw_dir: Path, *, seed: int = 0) -> None:
    """Write the 12 + 4 mini pairs (16 -> 12 train / 4 test)."""
    tests = sorted(split_test_keys(TRAINING_NAMES, TUNING_NAMES))
    write_dataset(
        raw_dir,
        training=TRAINING_NAMES,
        tuning=TUNING_NAMES,
        seed=seed,
        shape_for=lambda _key, _is_test: SHAPE,
        cells_for=lambda _key, _is_test, rng: int(rng.integers(3, 9)),
        border_only=tests[0],
    )
