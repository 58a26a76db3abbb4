"""Read and write images with their geometry.

Axis convention (the one place it is stated; every module follows it):

* 3-D volumes: ``array[i, j, k]`` with ``i, j, k`` the image's index axes x, y, z — the order NIfTI
  (nibabel) stores and the order of SimpleITK's ``GetSize()``/``GetSpacing()``. SimpleITK's
  ``GetArrayFromImage`` returns (z, y, x); this package transposes it to (x, y, z).
* ``spacing_mm[a]`` is the voxel size along array axis ``a``; ``origin_mm`` and the columns of
  ``direction`` are in the same order. World coordinates are LPS (ITK convention); NIfTI affines (RAS)
  are converted on read and back on write.
* 2-D images (PNG, JPEG, BMP, TIFF): ``array[row, col]`` or ``array[row, col, channel]``; they carry no
  physical geometry (``spacing_mm`` = 1.0 per axis, ``has_geometry`` False).
"""

from rexmle.io.images import (
    Geometry,
    Image,
    ImageReadError,
    ImageTooLarge,
    check_budget,
    n_values,
    open_pillow,
    read_geometry,
    read_image,
    write_image,
)

__all__ = [
    "Geometry",
    "Image",
    "ImageReadError",
    "ImageTooLarge",
    "check_budget",
    "n_values",
    "open_pillow",
    "read_geometry",
    "read_image",
    "write_image",
]
