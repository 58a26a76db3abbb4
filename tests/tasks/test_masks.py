"""The kit's mask helpers against direct numpy/scipy computations."""

from __future__ import annotations

import numpy as np

from rexmle.io import read_image, write_image
from rexmle.tasks.masks import copy_file, largest_component, write_empty_mask


def test_largest_component_keeps_the_biggest_26_connected_piece() -> None:
    mask = np.zeros((8, 8, 8), dtype=bool)
    mask[0:2, 0:2, 0:2] = True  # 8 voxels
    mask[2, 2, 2] = True  # touches the first block at a corner only: joins it (26-connectivity)
    mask[5:8, 5:8, 5:7] = True  # 18 voxels, separate
    kept = largest_component(mask)
    assert kept.sum() == 18
    assert kept[5:8, 5:8, 5:7].all()
    assert not kept[0:3, 0:3, 0:3].any()
    corner = np.zeros((4, 4, 4), dtype=bool)
    corner[0, 0, 0] = corner[1, 1, 1] = True
    assert largest_component(corner).sum() == 2  # one piece under 26-connectivity
    empty = np.zeros((3, 3, 3), dtype=bool)
    assert not largest_component(empty).any()


def test_empty_mask_has_the_grid_of_its_image_and_copies_are_exact(tmp_path) -> None:
    image = tmp_path / "image.nii.gz"
    write_image(image, np.ones((5, 4, 3), np.int16), spacing_mm=(0.5, 0.7, 2.0))
    grid = read_image(image).geometry
    write_empty_mask(tmp_path / "sample" / "mask.nii.gz", grid)
    written = read_image(tmp_path / "sample" / "mask.nii.gz")
    assert written.array.dtype == np.uint8
    assert not written.array.any()
    assert written.geometry.shape == grid.shape
    assert written.geometry.spacing_mm == grid.spacing_mm
    copy_file(image, tmp_path / "a" / "b" / "copy.nii.gz")
    assert (tmp_path / "a" / "b" / "copy.nii.gz").read_bytes() == image.read_bytes()
