"""Format-dispatching image reader/writer that keeps spacing, origin and direction.

See :mod:`rexmle.io` for the axis convention. Formats: NIfTI (``.nii``, ``.nii.gz``) via nibabel;
MetaImage and NRRD (``.mha``, ``.mhd``, ``.nrrd``, ``.seg.nrrd``) via SimpleITK; TIFF via tifffile;
PNG/JPEG/BMP via Pillow.

Bounded decoding: :func:`read_geometry` reads headers only, for every format (nibabel's header,
SimpleITK's ``ReadImageInformation``, tifffile's page tags, Pillow's lazy open). With
``max_pixels``, :func:`read_image` compares the header's declared size with that budget before
any voxel is decoded, so a small compressed file whose header claims gigabytes is refused at the
cost of reading its header. The decoders then read exactly the declared amount: nibabel and
SimpleITK inflate a gzip/zlib stream into a buffer of the header's size and stop there, tifffile
decodes the declared tiles or strips, Pillow the declared rows. Pillow's own bomb guard stays on,
at :data:`MAX_IMAGE_PIXELS`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np
import numpy.typing as npt

from rexmle.errors import RexmleError

if TYPE_CHECKING:
    from PIL.Image import Image as PILImageType

_NIFTI = (".nii", ".nii.gz")
_ITK = (".mha", ".mhd", ".nrrd")
_TIFF = (".tif", ".tiff")
_PILLOW = (".png", ".jpg", ".jpeg", ".bmp")
Reader = Literal["auto", "simpleitk"]
MAX_IMAGE_PIXELS = 1 << 30
"""Pillow's decompression-bomb guard (``PIL.Image.MAX_IMAGE_PIXELS``) while this module reads:
above it Pillow warns, above twice it refuses. The budgets of :func:`read_image` are smaller."""
# NIfTI world is RAS, ITK world is LPS: flip the first two world axes.
_RAS_TO_LPS = np.diag([-1.0, -1.0, 1.0])


class ImageReadError(RexmleError):
    """A file could not be read as an image (missing, corrupt, or an unknown format)."""


class ImageTooLarge(ImageReadError):
    """The header declares more values than the reader's budget allows (nothing was decoded)."""


@dataclass(frozen=True)
class Geometry:
    """Shape and physical placement of an image (axis order: see :mod:`rexmle.io`)."""

    shape: tuple[int, ...]
    """Spatial shape only (no channel axis)."""
    spacing_mm: tuple[float, ...]
    origin_mm: tuple[float, ...]
    direction: tuple[tuple[float, ...], ...]
    """Row-major square matrix whose COLUMNS are the world directions of the array axes (LPS)."""
    has_geometry: bool = True
    channels: int = 1
    dtype: str = ""

    def matches(self, other: Geometry, *, spacing_tol_mm: float = 1e-4) -> bool:
        """True when shape equals and spacing differs by at most ``spacing_tol_mm`` per axis."""
        return self.shape == other.shape and all(
            abs(a - b) <= spacing_tol_mm
            for a, b in zip(self.spacing_mm, other.spacing_mm, strict=True)
        )


@dataclass(frozen=True)
class Image:
    """Pixel/voxel data with its geometry."""

    array: npt.NDArray[np.generic]
    geometry: Geometry = field(repr=False)

    @property
    def spacing_mm(self) -> tuple[float, ...]:
        """Voxel size per array axis, in mm."""
        return self.geometry.spacing_mm


def _suffix(path: Path) -> str:
    name = path.name.lower()
    for ext in (".nii.gz", ".seg.nrrd"):
        if name.endswith(ext):
            return ".nrrd" if ext == ".seg.nrrd" else ext
    return path.suffix.lower()


def _unit_geometry(shape: tuple[int, ...], *, channels: int, dtype: str) -> Geometry:
    n = len(shape)
    eye = tuple(tuple(1.0 if r == c else 0.0 for c in range(n)) for r in range(n))
    return Geometry(
        shape=shape,
        spacing_mm=(1.0,) * n,
        origin_mm=(0.0,) * n,
        direction=eye,
        has_geometry=False,
        channels=channels,
        dtype=dtype,
    )


def _nifti_geometry(img: object) -> Geometry:
    header = img.header  # type: ignore[attr-defined]
    shape = tuple(int(s) for s in img.shape)  # type: ignore[attr-defined]
    affine = np.asarray(img.affine, dtype=np.float64)  # type: ignore[attr-defined]
    ndim = len(shape)
    zooms = tuple(float(z) for z in header.get_zooms()[:ndim])
    if ndim >= 3:
        lin = _RAS_TO_LPS @ affine[:3, :3]
        norms = np.linalg.norm(lin, axis=0)
        norms[norms == 0] = 1.0
        direction_full = lin / norms
        origin = tuple(float(v) for v in _RAS_TO_LPS @ affine[:3, 3])
        # Extra axes (4-D) get identity directions; spatial part is 3x3.
        direction = tuple(tuple(float(v) for v in row) for row in direction_full)
        spacing = zooms
    else:
        direction = tuple(tuple(1.0 if r == c else 0.0 for c in range(ndim)) for r in range(ndim))
        origin = (0.0,) * ndim
        spacing = zooms
    return Geometry(
        shape=shape,
        spacing_mm=spacing,
        origin_mm=origin,
        direction=direction,
        dtype=str(header.get_data_dtype()),
    )


def _itk_geometry(reader: object) -> Geometry:
    size = tuple(int(s) for s in reader.GetSize())  # type: ignore[attr-defined]
    ndim = len(size)
    flat = reader.GetDirection()  # type: ignore[attr-defined]
    direction = tuple(tuple(float(flat[r * ndim + c]) for c in range(ndim)) for r in range(ndim))
    return Geometry(
        shape=size,
        spacing_mm=tuple(float(s) for s in reader.GetSpacing()),  # type: ignore[attr-defined]
        origin_mm=tuple(float(o) for o in reader.GetOrigin()),  # type: ignore[attr-defined]
        direction=direction,
        channels=int(reader.GetNumberOfComponents()),  # type: ignore[attr-defined]
    )


def read_geometry(path: Path) -> Geometry:
    """Read only the header of an image: shape, spacing, origin, direction (no voxel data).

    Raises:
        ImageReadError: the file is missing, unreadable or of an unknown format.
    """
    path = Path(path)
    suffix = _suffix(path)
    if not path.is_file():
        msg = f"{path}: no such file"
        raise ImageReadError(msg)
    try:
        if suffix in _NIFTI:
            import nibabel as nib

            return _nifti_geometry(nib.load(str(path)))
        if suffix in _ITK:
            import SimpleITK as sitk

            reader = sitk.ImageFileReader()
            reader.SetFileName(str(path))
            reader.ReadImageInformation()
            return _itk_geometry(reader)
        if suffix in _TIFF:
            return _tiff_geometry(path)
        if suffix in _PILLOW:
            with open_pillow(path) as pil:
                return _pillow_geometry(pil)
    except (ImageReadError, MemoryError, ImportError):
        raise  # out of memory or a broken installation is the harness's problem, not the file's
    except Exception as err:  # the parsers raise many types; any of them means "unreadable"
        msg = f"{path.name}: cannot read the image header ({type(err).__name__}: {err})"
        raise ImageReadError(msg) from err
    msg = (
        f"{path.name}: unknown image format {suffix!r}; expected one of "
        f"{', '.join(_NIFTI + _ITK + _TIFF + _PILLOW)}"
    )
    raise ImageReadError(msg)


def n_values(geometry: Geometry) -> int:
    """Number of values an image holds: the product of its shape times its components."""
    count = max(1, geometry.channels)
    for n in geometry.shape:
        count *= int(n)
    return count


def check_budget(path: Path, max_pixels: int) -> Geometry:
    """Read the header of ``path`` and return its geometry if it holds at most ``max_pixels`` values.

    Raises:
        ImageTooLarge: the header declares more values (the voxels are never decoded).
        ImageReadError: the header cannot be read.
    """
    geometry = read_geometry(path)
    declared = n_values(geometry)
    if declared > max_pixels:
        msg = (
            f"{Path(path).name}: the header declares shape {geometry.shape} with "
            f"{geometry.channels} component(s), {declared} values, more than the {max_pixels} "
            f"allowed; the file was not decoded"
        )
        raise ImageTooLarge(msg)
    return geometry


def _tiff_geometry(path: Path) -> Geometry:
    import tifffile

    with tifffile.TiffFile(str(path)) as tif:
        series = tif.series[0]
        return _geometry_2d(tuple(int(n) for n in series.shape), str(series.dtype))


def open_pillow(path: Path) -> PILImageType:
    """Open an image with Pillow lazily (header only), its bomb guard at MAX_IMAGE_PIXELS."""
    from PIL import Image as PILImage

    PILImage.MAX_IMAGE_PIXELS = MAX_IMAGE_PIXELS
    return PILImage.open(path)


def _pillow_geometry(pil: PILImageType) -> Geometry:
    from PIL import ImageMode

    mode = ImageMode.getmode(pil.mode)  # what numpy.asarray(pil) gives: bands and type
    shape: tuple[int, ...] = (int(pil.height), int(pil.width))
    if len(mode.bands) != 1:
        shape = (*shape, len(mode.bands))
    return _geometry_2d(shape, str(np.dtype(mode.typestr)))


def read_image(path: Path, *, reader: Reader = "auto", max_pixels: int | None = None) -> Image:
    """Read an image with its geometry (axis order: see :mod:`rexmle.io`).

    ``max_pixels`` (untrusted files): the most values (shape times components, as the header
    declares them) the file may hold; the header is checked first (:func:`check_budget`) and
    nothing is decoded when it declares more.

    ``reader="simpleitk"`` gives NIfTI files the dimensionality SimpleITK gives them, for challenges
    whose official evaluation reads with SimpleITK: trailing singleton axes beyond the third are
    dropped (an (x, y, z, 1) file is 3-D there, 4-D in nibabel). The voxels still come from nibabel,
    which keeps NaN values (SimpleITK's NIfTI reader turns them into 0, hiding invalid input).

    Raises:
        ImageTooLarge: the header declares more than ``max_pixels`` values.
        ImageReadError: the file is missing, unreadable or of an unknown format.
    """
    path = Path(path)
    suffix = _suffix(path)
    if not path.is_file():
        msg = f"{path}: no such file"
        raise ImageReadError(msg)
    if max_pixels is not None:
        check_budget(path, max_pixels)
    try:
        if suffix in _NIFTI:
            image = _read_nifti(path)
            return image if reader == "auto" else _drop_trailing_singletons(image)
        if suffix in _ITK:
            return _read_itk(path)
        if suffix in _TIFF:
            return _read_tiff(path)
        if suffix in _PILLOW:
            return _read_pillow(path)
    except (MemoryError, ImportError):
        raise  # out of memory or a broken installation is the harness's problem, not the file's
    except Exception as err:  # the parsers raise many types; any of them means "unreadable"
        msg = f"{path.name}: cannot read the image ({type(err).__name__}: {err})"
        raise ImageReadError(msg) from err
    msg = (
        f"{path.name}: unknown image format {suffix!r}; expected one of "
        f"{', '.join(_NIFTI + _ITK + _TIFF + _PILLOW)}"
    )
    raise ImageReadError(msg)


def _read_nifti(path: Path) -> Image:
    import nibabel as nib

    img = nib.load(str(path))
    array = np.asanyarray(img.dataobj)  # type: ignore[attr-defined]
    return Image(array=array, geometry=_nifti_geometry(img))


def _drop_trailing_singletons(image: Image) -> Image:
    array, geometry = image.array, image.geometry
    ndim = array.ndim
    while ndim > 3 and array.shape[ndim - 1] == 1:
        ndim -= 1
    if ndim == array.ndim:
        return image
    shape = tuple(int(n) for n in array.shape[:ndim])
    array = array.reshape(shape)
    return Image(
        array=array,
        geometry=Geometry(
            shape=shape,
            spacing_mm=geometry.spacing_mm[:ndim],
            origin_mm=geometry.origin_mm[:ndim],
            direction=geometry.direction,
            channels=geometry.channels,
            dtype=geometry.dtype,
        ),
    )


def _read_itk(path: Path) -> Image:
    import SimpleITK as sitk

    itk = sitk.ReadImage(str(path))
    array = sitk.GetArrayFromImage(itk)
    spatial = itk.GetDimension()
    # (z, y, x[, c]) -> (x, y, z[, c]): a transposed view (Fortran order, like nibabel's arrays),
    # no copy of the voxels
    axes = tuple(range(spatial - 1, -1, -1)) + tuple(range(spatial, array.ndim))
    array = array.transpose(axes)
    flat = itk.GetDirection()
    direction = tuple(
        tuple(float(flat[r * spatial + c]) for c in range(spatial)) for r in range(spatial)
    )
    geometry = Geometry(
        shape=tuple(int(s) for s in itk.GetSize()),
        spacing_mm=tuple(float(s) for s in itk.GetSpacing()),
        origin_mm=tuple(float(o) for o in itk.GetOrigin()),
        direction=direction,
        channels=int(itk.GetNumberOfComponentsPerPixel()),
        dtype=str(array.dtype),
    )
    return Image(array=array, geometry=geometry)


def _read_tiff(path: Path) -> Image:
    import tifffile

    array = tifffile.imread(str(path))
    return _image_2d(array)


def _read_pillow(path: Path) -> Image:
    # Whole-slide microscopy images exceed Pillow's default guard (89.5 MP): the guard is set to
    # MAX_IMAGE_PIXELS, and callers reading untrusted files pass a budget of their own.
    with open_pillow(path) as pil:
        pil.load()
        array = np.asarray(pil)
    return _image_2d(array)


def _geometry_2d(shape: tuple[int, ...], dtype: str) -> Geometry:
    """Geometry of a 2-D format's array of ``shape``: (row, col[, channel]), else as given."""
    if len(shape) == 3:
        return _unit_geometry((shape[0], shape[1]), channels=shape[2], dtype=dtype)
    return _unit_geometry(shape, channels=1, dtype=dtype)


def _image_2d(array: npt.NDArray[np.generic]) -> Image:
    return Image(array, _geometry_2d(tuple(int(n) for n in array.shape), str(array.dtype)))


def write_image(
    path: Path,
    array: npt.NDArray[np.generic],
    *,
    like: Geometry | None = None,
    spacing_mm: tuple[float, ...] | None = None,
    origin_mm: tuple[float, ...] | None = None,
    direction: tuple[tuple[float, ...], ...] | None = None,
) -> None:
    """Write ``array`` (axis order: see :mod:`rexmle.io`) with the given geometry.

    Geometry comes from ``like`` (typically the input image's header), overridden by the explicit
    keywords. 2-D formats (PNG, TIFF) store no geometry. Raises ValueError for unknown formats or
    a geometry whose dimension differs from the array's.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    suffix = _suffix(path)
    ndim = array.ndim
    if like is not None:
        spacing_mm = spacing_mm or like.spacing_mm
        origin_mm = origin_mm or like.origin_mm
        direction = direction or like.direction
    spacing_mm = tuple(spacing_mm) if spacing_mm else (1.0,) * ndim
    origin_mm = tuple(origin_mm) if origin_mm else (0.0,) * ndim
    if direction is None:
        direction = tuple(tuple(1.0 if r == c else 0.0 for c in range(ndim)) for r in range(ndim))
    if suffix in _NIFTI or suffix in _ITK:
        spatial = min(ndim, len(spacing_mm))
        if len(spacing_mm) != spatial or len(origin_mm) != spatial:
            msg = f"geometry has {len(spacing_mm)} axes but the array has {ndim}"
            raise ValueError(msg)
    if suffix in _NIFTI:
        _write_nifti(path, array, spacing_mm, origin_mm, direction)
    elif suffix in _ITK:
        _write_itk(path, array, spacing_mm, origin_mm, direction)
    elif suffix in _TIFF:
        import tifffile

        tifffile.imwrite(str(path), array)
    elif suffix in _PILLOW:
        from PIL import Image as PILImage

        PILImage.fromarray(array).save(path)
    else:
        msg = f"{path.name}: cannot write unknown image format {suffix!r}"
        raise ValueError(msg)


def _write_nifti(
    path: Path,
    array: npt.NDArray[np.generic],
    spacing_mm: tuple[float, ...],
    origin_mm: tuple[float, ...],
    direction: tuple[tuple[float, ...], ...],
) -> None:
    import nibabel as nib

    affine = np.eye(4)
    n = min(3, len(spacing_mm))
    lin = np.eye(3)
    org = np.zeros(3)
    lin[:n, :n] = np.asarray(direction, dtype=float)[:n, :n] * np.asarray(spacing_mm[:n])
    org[:n] = np.asarray(origin_mm[:n], dtype=float)
    affine[:3, :3] = _RAS_TO_LPS @ lin
    affine[:3, 3] = _RAS_TO_LPS @ org
    img = nib.Nifti1Image(np.asarray(array), affine)
    img.header.set_zooms(tuple(spacing_mm) + (1.0,) * (array.ndim - len(spacing_mm)))
    img.set_qform(affine, code=1)
    img.set_sform(affine, code=1)
    nib.save(img, str(path))


def _write_itk(
    path: Path,
    array: npt.NDArray[np.generic],
    spacing_mm: tuple[float, ...],
    origin_mm: tuple[float, ...],
    direction: tuple[tuple[float, ...], ...],
) -> None:
    import SimpleITK as sitk

    spatial = len(spacing_mm)
    axes = tuple(range(spatial - 1, -1, -1)) + tuple(range(spatial, array.ndim))
    itk = sitk.GetImageFromArray(
        np.ascontiguousarray(np.asarray(array).transpose(axes)), isVector=array.ndim > spatial
    )
    itk.SetSpacing(tuple(float(s) for s in spacing_mm))
    itk.SetOrigin(tuple(float(o) for o in origin_mm))
    itk.SetDirection(tuple(float(v) for row in direction for v in row))
    sitk.WriteImage(itk, str(path), useCompression=True)
