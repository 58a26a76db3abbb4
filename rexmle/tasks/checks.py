"""Reusable validity checks of submitted arrays (spec README §2.4): never repair, say what is wrong."""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import numpy.typing as npt

from rexmle.io import Geometry, Image, ImageReadError, ImageTooLarge, read_geometry, read_image
from rexmle.io.images import Reader
from rexmle.tasks.spec import FileRule

BUDGET_FACTOR = 4
"""A submitted image may declare at most this many times the values of its test image (room for
up to 4 channels or a few trailing axes, so that such files get their precise reason); anything
larger is refused from its header alone."""


class SubmissionWarning(str):
    """A finding that does not make a submission invalid (returned among a case's reasons)."""

    __slots__ = ()


def pixel_budget(expected_shape: tuple[int, ...]) -> int:
    """The most values a submitted image for a test image of ``expected_shape`` may declare.

    Definition: BUDGET_FACTOR * prod(expected_shape).
    """
    return BUDGET_FACTOR * math.prod(int(n) for n in expected_shape)


def budget_problem(err: ImageTooLarge, expected_shape: tuple[int, ...]) -> str:
    """The reason given for a file refused by its header (see :func:`pixel_budget`)."""
    return (
        f"{err} (at most {BUDGET_FACTOR} x the {math.prod(expected_shape)} values of the test "
        f"image, shape {tuple(expected_shape)}). Write the prediction on the input image's grid."
    )


def read_submitted_image(
    path: Path,
    *,
    suffixes: Iterable[str],
    expected_shape: tuple[int, ...],
    reader: Reader = "auto",
) -> tuple[Image | None, str | None]:
    """Read a submitted image whose name must end in one of ``suffixes``; (image, problem).

    ``expected_shape`` is the test image's shape: the file's header is checked against
    :func:`pixel_budget` of it before anything is decoded (a decompression bomb costs a header
    read). ``reader`` as in :func:`rexmle.io.read_image` (``"simpleitk"`` where the official
    evaluation reads predictions with SimpleITK).
    """
    allowed = tuple(suffixes)
    if not path.name.lower().endswith(allowed):
        return None, f"{path.name}: file type not accepted; use one of {', '.join(allowed)}"
    try:
        return read_image(path, reader=reader, max_pixels=pixel_budget(expected_shape)), None
    except ImageTooLarge as err:
        return None, budget_problem(err, expected_shape)
    except ImageReadError as err:
        return None, f"unreadable file: {err}"


def check_shape(
    actual: tuple[int, ...], expected: tuple[int, ...], *, what: str = "array"
) -> str | None:
    """A problem when shapes differ (no resampling is ever done), else None."""
    if tuple(actual) != tuple(expected):
        return (
            f"{what} has shape {tuple(actual)}, but the test image has {tuple(expected)}. "
            f"Write the prediction on the input image's grid; do not crop, pad or resample."
        )
    return None


def _distinct_small_integers(array: npt.NDArray[np.integer]) -> npt.NDArray[np.int64]:
    """Distinct values of an 8/16-bit integer array by chunked counting (no sort, no full copy)."""
    flat = np.ravel(array, order="K")  # a view for C- and Fortran-ordered arrays
    offset = int(np.iinfo(array.dtype).min)
    counts = np.zeros(int(np.iinfo(array.dtype).max) - offset + 1, dtype=np.int64)
    chunk = 1 << 23
    for start in range(0, flat.size, chunk):
        piece = flat[start : start + chunk].astype(np.int64) - offset
        counts += np.bincount(piece, minlength=counts.size)
    return np.flatnonzero(counts) + offset


PRESENCE_MAX_VALUE = 1 << 24
"""Wider integer arrays whose values lie in 0 ... PRESENCE_MAX_VALUE are counted by marking
each value in a boolean table (16 MiB at most) instead of sorting."""


def _distinct_by_presence(array: npt.NDArray[np.integer], top: int) -> npt.NDArray[np.generic]:
    """Distinct values of a non-negative integer array with maximum ``top`` (no sort)."""
    present = np.zeros(top + 1, dtype=bool)
    present[np.ravel(array, order="K")] = True
    return np.flatnonzero(present).astype(array.dtype)


def distinct_values(array: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
    """The distinct values of ``array``, ascending (the one counter every family uses).

    8/16-bit integers are counted in chunks (no sort, no full copy); wider integers within
    0 ... :data:`PRESENCE_MAX_VALUE` are marked in a table (no sort); booleans give 0/1 as
    int64; other dtypes use ``numpy.unique``. The result equals ``numpy.unique(array)`` (as
    int64 for 8/16-bit integers and booleans, in the array's dtype otherwise).
    """
    if array.dtype.kind == "b":
        return np.unique(array).astype(np.int64)
    if array.dtype.kind in "iu" and array.dtype.itemsize <= 2:
        return _distinct_small_integers(array)  # type: ignore[arg-type]  # kind is i or u
    if array.dtype.kind in "iu" and array.size:
        low, high = int(array.min()), int(array.max())
        if low >= 0 and high <= PRESENCE_MAX_VALUE:
            return _distinct_by_presence(array, high)  # type: ignore[arg-type]  # kind i or u
    return np.unique(array)


def check_allowed_values(array: npt.NDArray[np.generic], allowed: Iterable[int]) -> str | None:
    """A problem when ``array`` holds NaN/inf or any value not exactly in ``allowed``, else None.

    Float arrays are accepted when every element equals one of the allowed integers exactly
    (0.0/1.0 masks are fine; 0.5 or NaN is not). Nothing is cast or thresholded.
    """
    allowed_set = sorted({int(v) for v in allowed})
    if array.dtype.kind not in "biuf":
        return f"unsupported data type {array.dtype}; write an integer label array"
    if array.dtype.kind == "f" and not np.isfinite(array).all():
        n_bad = int(np.count_nonzero(~np.isfinite(array)))
        return f"{n_bad} voxel(s) are NaN or infinite"
    values = distinct_values(array)
    bad = [v for v in values.tolist() if v not in allowed_set]
    if bad:
        shown = ", ".join(repr(v) for v in bad[:8])
        more = " ..." if len(bad) > 8 else ""
        return f"values {shown}{more} are not allowed; allowed values are {allowed_set}"
    return None


def check_declared_file(path: Path, rule: FileRule, public_dir: Path, case_id: str) -> list[str]:
    """Reasons (and :class:`SubmissionWarning` findings) of a submitted file against its rule.

    The one validity check of submitted label volumes: the name ends in one of the suffixes;
    for ``label-volume``, the header fits the pixel budget of the ``grid_from`` image, the
    array is 3-D with one component and exactly that image's shape (never resampled), every
    value is one of ``values``, the voxel size agrees with it within ``spacing_tolerance_mm``
    per axis, and origin and direction x spacing agree with it within ``placement_tolerance``
    (each an error or a warning, as declared).
    """
    suffixes = tuple(rule.suffixes)
    if rule.format == "any":
        if not path.name.lower().endswith(suffixes):
            return [f"{path.name}: file type not accepted; use one of {', '.join(suffixes)}"]
        return []
    assert rule.grid_from is not None  # FileRule requires it for label volumes
    grid = read_geometry(public_dir / rule.grid_from.replace("{case_id}", case_id))
    image, problem = read_submitted_image(
        path, suffixes=suffixes, expected_shape=grid.shape, reader=rule.reader
    )
    if image is None:
        return [str(problem)]
    array = image.array
    if array.ndim != 3 or image.geometry.channels != 1:
        return [
            f"{path.name}: the mask is {array.ndim}-D with array shape {array.shape} and "
            f"{image.geometry.channels} component(s); write a 3-D single-component mask"
            f"{rule.wrong_ndim_hint}"
        ]
    shape_problem = check_shape(array.shape, grid.shape, what=path.name)
    if shape_problem:
        return [shape_problem]
    findings: list[str] = []
    if rule.values is not None:
        value_problem = check_allowed_values(array, rule.values)
        if value_problem:
            findings.append(f"{path.name}: {value_problem}")
    if rule.spacing_tolerance_mm is not None:
        spacing_problem = spacing_difference(image.geometry, grid, rule.spacing_tolerance_mm)
        if spacing_problem:
            text = f"{path.name}: {spacing_problem}"
            findings.append(text if rule.spacing == "error" else SubmissionWarning(text))
    if rule.placement_tolerance is not None:
        placement = placement_difference(image.geometry, grid)
        if placement > rule.placement_tolerance:
            text = (
                f"{path.name}: affine differs from the test image's by {placement:.3g} (origin "
                f"or direction x spacing; tolerance {rule.placement_tolerance}); voxels are "
                f"compared in array order, but save masks with the test image's header"
            )
            findings.append(text if rule.placement == "error" else SubmissionWarning(text))
    return findings


def placement_difference(image: Geometry, reference: Geometry) -> float:
    """Largest absolute difference of origin (mm) and of direction x spacing between two grids."""
    placement = np.asarray(image.direction) * np.asarray(image.spacing_mm)
    expected = np.asarray(reference.direction) * np.asarray(reference.spacing_mm)
    offset = np.abs(np.asarray(image.origin_mm) - np.asarray(reference.origin_mm))
    return float(max(np.abs(placement - expected).max(), offset.max()))


def spacing_difference(image: Geometry, reference: Geometry, tolerance_mm: float) -> str | None:
    """A problem when a voxel size of ``image`` differs from ``reference``'s by more than
    ``tolerance_mm`` on some axis, else None (spacings shown rounded to 6 decimals).
    """
    offset = np.abs(np.asarray(image.spacing_mm) - np.asarray(reference.spacing_mm)).max()
    if offset <= tolerance_mm:
        return None
    shown = tuple(round(float(s), 6) for s in image.spacing_mm)
    expected = tuple(round(float(s), 6) for s in reference.spacing_mm)
    return (
        f"spacing {shown} mm differs from the test image's {expected} mm by more than "
        f"{tolerance_mm} mm; save the mask with the test image's header"
    )
