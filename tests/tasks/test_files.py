"""The kit's file helpers: CSV writing, the raw image/label grid check, hashing."""

from __future__ import annotations

import csv
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest

from rexmle.errors import DataError
from rexmle.io import write_image
from rexmle.tasks.files import check_image_label_grid, sha256_file, write_csv


def test_write_csv_round_trip_keeps_ids_and_quotes(tmp_path) -> None:
    path = tmp_path / "a" / "b" / "submission.csv"  # parents do not exist yet
    rows = [("001", "predictions/001.nii.gz"), ("0420", "x,y"), ("7", "")]
    write_csv(path, ("image_id", "predicted_mask_path"), rows)
    # csv.writer: "\r\n" line ends, a field with a comma is quoted, an empty field stays empty
    assert path.read_bytes() == (
        b'image_id,predicted_mask_path\r\n001,predictions/001.nii.gz\r\n0420,"x,y"\r\n7,\r\n'
    )
    with open(path, newline="", encoding="utf-8") as handle:
        read = [(r["image_id"], r["predicted_mask_path"]) for r in csv.DictReader(handle)]
    assert read == rows


def test_write_csv_writes_non_strings_with_str_and_a_header_only_file(tmp_path) -> None:
    path = tmp_path / "sizes.csv"
    write_csv(path, ("image_id", "height", "width"), iter([("002", 480, 640)]))
    assert path.read_text(encoding="utf-8").splitlines() == ["image_id,height,width", "002,480,640"]
    write_csv(path, ("image_id",), [])
    assert path.read_bytes() == b"image_id\r\n"


def _case(tmp_path: Path, label_spacing: tuple[float, ...]) -> tuple[Path, Path]:
    image, label = tmp_path / "img.nii.gz", tmp_path / "lbl.nii.gz"
    write_image(image, np.zeros((6, 5, 4), np.int16), spacing_mm=(0.5, 0.5, 1.0))
    labels = np.zeros((6, 5, 4), np.uint8)
    labels[2:4, 1:3, 1] = 1
    write_image(label, labels, spacing_mm=label_spacing)
    return image, label


def test_grid_check_accepts_spacing_within_the_tolerance(tmp_path) -> None:
    # |1.00005 - 1.0| = 5e-5 mm <= 1e-4 mm
    image, label = _case(tmp_path, (0.5, 0.5, 1.00005))
    geometry, read = check_image_label_grid("FAM", "c01", image, label, spacing_tol_mm=1e-4)
    assert geometry.shape == (6, 5, 4)
    assert geometry.spacing_mm == pytest.approx((0.5, 0.5, 1.0))
    assert int(np.asarray(read.array).sum()) == 4  # 2 x 2 x 1 foreground voxels


def _finer_z(label: Path) -> None:
    # |1.001 - 1.0| = 1e-3 mm > 1e-4 mm
    write_image(label, np.zeros((6, 5, 4), np.uint8), spacing_mm=(0.5, 0.5, 1.001))


def _fewer_slices(label: Path) -> None:
    write_image(label, np.zeros((6, 5, 3), np.uint8), spacing_mm=(0.5, 0.5, 1.0))


def _four_d(label: Path) -> None:
    nib.save(nib.Nifti1Image(np.zeros((6, 5, 4, 2), np.uint8), np.eye(4)), str(label))


@pytest.mark.parametrize(
    ("rewrite", "fragments"),
    [
        (_finer_z, ("spacing", "1.001", "lbl.nii.gz", "differs")),
        (_fewer_slices, ("(6, 5, 3)", "lbl.nii.gz", "differs")),
        (_four_d, ("(6, 5, 4, 2)", "3-D single-component")),
    ],
    ids=["spacing", "shape", "4-D"],
)
def test_grid_check_rejects_a_bad_label_naming_the_case(tmp_path, rewrite, fragments) -> None:
    image, label = _case(tmp_path, (0.5, 0.5, 1.0))
    rewrite(label)
    with pytest.raises(DataError) as err:
        check_image_label_grid("FAM", "c07", image, label, spacing_tol_mm=1e-4)
    message = str(err.value)
    assert message.startswith("FAM case c07: ")
    assert all(f in message for f in fragments), message


def test_grid_check_names_the_case_of_an_unreadable_file(tmp_path) -> None:
    image, label = _case(tmp_path, (0.5, 0.5, 1.0))
    label.write_bytes(b"not a NIfTI file")
    with pytest.raises(DataError, match=r"^FAM case c02: lbl\.nii\.gz: cannot read"):
        check_image_label_grid("FAM", "c02", image, label, spacing_tol_mm=1e-4)


def test_sha256_file_equals_hashlib_over_several_chunks(tmp_path) -> None:
    import hashlib

    path = tmp_path / "blob.bin"
    payload = np.random.default_rng(3).bytes(3 * 1024 + 17)
    path.write_bytes(payload)
    assert sha256_file(path, chunk_bytes=1024) == hashlib.sha256(payload).hexdigest()
