"""File helpers every family uses: CSV writing, raw image/label grid checks, hashing."""

from __future__ import annotations

import csv
import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path

from rexmle.errors import DataError
from rexmle.io import Geometry, Image, ImageReadError, read_geometry, read_image


def write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    """Write a UTF-8 CSV file: ``header`` first, then ``rows`` as given (parents created).

    Values are written with :func:`csv.writer`, so strings keep every character (ids with
    leading zeros stay as they are) and non-strings are written with ``str``.

    Args:
        path: The CSV file to create or overwrite.
        header: Column names.
        rows: One sequence of values per row, in the order of ``header``.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)


def check_image_label_grid(
    family: str, case_id: str, image_path: Path, label_path: Path, *, spacing_tol_mm: float
) -> tuple[Geometry, Image]:
    """Read a raw case's image header and label; check both are one 3-D grid.

    Args:
        family: The challenge name that starts every message (``"PANTHER"``, ``"TopBrain ct"``).
        case_id: The case id named in every message.
        image_path: The image; only its header is read.
        label_path: The label map; read whole.
        spacing_tol_mm: Largest allowed difference of the voxel size per axis, in mm.

    Returns:
        The image geometry and the label image.

    Raises:
        DataError: a file is unreadable, either is not a 3-D single-component volume, or the
            shapes differ or a spacing differs by more than ``spacing_tol_mm``.
    """
    where = f"{family} case {case_id}"
    try:
        image = read_geometry(image_path)
        label = read_image(label_path)
    except ImageReadError as err:
        msg = f"{where}: {err}"
        raise DataError(msg) from err
    grid = label.geometry
    if len(image.shape) != 3 or len(grid.shape) != 3 or image.channels != 1 or grid.channels != 1:
        msg = (
            f"{where}: image {image.shape} ({image.channels} component(s)) and label "
            f"{label_path.name} {grid.shape} ({grid.channels} component(s)) must both be 3-D "
            f"single-component volumes"
        )
        raise DataError(msg)
    if not image.matches(grid, spacing_tol_mm=spacing_tol_mm):
        msg = (
            f"{where}: label {label_path.name} grid {grid.shape} (spacing {grid.spacing_mm} mm) "
            f"differs from the image grid {image.shape} (spacing {image.spacing_mm} mm; "
            f"tolerance {spacing_tol_mm} mm)"
        )
        raise DataError(msg)
    return image, label


def sha256_file(path: Path, *, chunk_bytes: int = 1 << 20) -> str:
    """Hex SHA-256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(chunk_bytes):
            digest.update(chunk)
    return digest.hexdigest()
