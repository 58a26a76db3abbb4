"""Image I/O keeps data and geometry; the axis convention agrees with SimpleITK and nibabel."""

from __future__ import annotations

import numpy as np
import pytest
import SimpleITK as sitk

from rexmle.io import ImageReadError, read_geometry, read_image, write_image

SPACING = (0.4, 0.7, 2.5)
ORIGIN = (-10.0, 20.5, 3.0)
# a rotation about z by 90 degrees: columns are the world directions of the array axes
DIRECTION = ((0.0, -1.0, 0.0), (1.0, 0.0, 0.0), (0.0, 0.0, 1.0))


@pytest.fixture
def volume() -> np.ndarray:
    return np.random.default_rng(0).integers(0, 13, size=(5, 6, 7)).astype(np.uint8)


@pytest.mark.parametrize("suffix", [".nii.gz", ".nii", ".mha", ".nrrd", ".seg.nrrd"])
def test_round_trip_keeps_array_and_anisotropic_geometry(tmp_path, volume, suffix) -> None:
    path = tmp_path / f"img{suffix}"
    write_image(path, volume, spacing_mm=SPACING, origin_mm=ORIGIN, direction=DIRECTION)
    image = read_image(path)
    np.testing.assert_array_equal(image.array, volume)
    assert image.geometry.shape == (5, 6, 7)
    np.testing.assert_allclose(image.spacing_mm, SPACING, atol=1e-6)
    np.testing.assert_allclose(image.geometry.origin_mm, ORIGIN, atol=1e-5)
    np.testing.assert_allclose(image.geometry.direction, DIRECTION, atol=1e-6)
    header = read_geometry(path)
    assert header.shape == image.geometry.shape
    np.testing.assert_allclose(header.spacing_mm, image.spacing_mm)


@pytest.mark.parametrize("suffix", [".nii.gz", ".mha"])
def test_axis_order_is_simpleitk_index_order(tmp_path, volume, suffix) -> None:
    path = tmp_path / f"img{suffix}"
    write_image(path, volume, spacing_mm=SPACING, origin_mm=ORIGIN, direction=DIRECTION)
    itk = sitk.ReadImage(str(path))
    # SimpleITK: size and spacing are (x, y, z); its array is (z, y, x)
    assert itk.GetSize() == volume.shape
    np.testing.assert_allclose(itk.GetSpacing(), SPACING, atol=1e-6)
    np.testing.assert_allclose(itk.GetOrigin(), ORIGIN, atol=1e-5)
    np.testing.assert_allclose(itk.GetDirection(), np.ravel(DIRECTION), atol=1e-6)
    np.testing.assert_array_equal(sitk.GetArrayFromImage(itk), volume.transpose(2, 1, 0))


def test_nifti_array_order_is_nibabel_order(tmp_path, volume) -> None:
    import nibabel as nib

    path = tmp_path / "img.nii.gz"
    write_image(path, volume, spacing_mm=SPACING)
    np.testing.assert_array_equal(np.asarray(nib.load(str(path)).dataobj), volume)
    np.testing.assert_allclose(nib.load(str(path)).header.get_zooms(), SPACING, atol=1e-6)


def test_geometry_from_like(tmp_path, volume) -> None:
    write_image(tmp_path / "a.nii.gz", volume, spacing_mm=SPACING, origin_mm=ORIGIN)
    ref = read_geometry(tmp_path / "a.nii.gz")
    write_image(tmp_path / "b.mha", volume, like=ref)
    np.testing.assert_allclose(read_geometry(tmp_path / "b.mha").spacing_mm, SPACING, atol=1e-6)
    np.testing.assert_allclose(read_geometry(tmp_path / "b.mha").origin_mm, ORIGIN, atol=1e-5)


@pytest.mark.parametrize("suffix", [".png", ".tif", ".tiff"])
def test_2d_round_trip_is_row_major_without_geometry(tmp_path, suffix) -> None:
    image = np.arange(12, dtype=np.uint8).reshape(3, 4)
    write_image(tmp_path / f"x{suffix}", image)
    back = read_image(tmp_path / f"x{suffix}")
    np.testing.assert_array_equal(back.array, image)
    assert back.geometry.shape == (3, 4)
    assert back.geometry.has_geometry is False


def test_rgb_png_keeps_channels(tmp_path) -> None:
    rgb = np.zeros((4, 5, 3), dtype=np.uint8)
    rgb[..., 1] = 200
    write_image(tmp_path / "rgb.png", rgb)
    back = read_image(tmp_path / "rgb.png")
    assert back.array.shape == (4, 5, 3)
    assert back.geometry.channels == 3


def test_unreadable_missing_and_unknown_files_raise_with_the_name(tmp_path) -> None:
    (tmp_path / "broken.nii.gz").write_bytes(b"not a nifti file")
    with pytest.raises(ImageReadError, match=r"broken\.nii\.gz"):
        read_image(tmp_path / "broken.nii.gz")
    with pytest.raises(ImageReadError, match="no such file"):
        read_image(tmp_path / "absent.mha")
    (tmp_path / "x.xyz").write_bytes(b"")
    with pytest.raises(ImageReadError, match="unknown image format"):
        read_image(tmp_path / "x.xyz")


def test_simpleitk_reader_drops_trailing_singleton_axes_but_keeps_nan(tmp_path) -> None:
    import nibabel as nib

    volume = np.zeros((4, 5, 6, 1), np.float32)
    volume[1, 2, 3, 0] = np.nan
    nib.save(nib.Nifti1Image(volume, np.diag([0.5, 0.5, 2.0, 1.0])), str(tmp_path / "v.nii.gz"))
    assert read_image(tmp_path / "v.nii.gz").array.shape == (4, 5, 6, 1)
    image = read_image(tmp_path / "v.nii.gz", reader="simpleitk")
    assert image.array.shape == image.geometry.shape == (4, 5, 6)
    assert image.geometry.shape == sitk.ReadImage(str(tmp_path / "v.nii.gz")).GetSize()
    np.testing.assert_allclose(image.spacing_mm, (0.5, 0.5, 2.0))
    assert np.isnan(image.array[1, 2, 3])
