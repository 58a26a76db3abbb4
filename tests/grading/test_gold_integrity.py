"""Gold integrity: a private file changed after prepare is a harness error (exit 2) naming it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest

from rexmle.preparation import prepare_task

TASK = "isles22"


@pytest.fixture
def dirs(tmp_path: Path):
    """A copy of the task for this test alone (it breaks its gold)."""
    prepared, _ = prepare_task(TASK, data_dir=tmp_path / "data", mini=True)
    return prepared


def _grade(dirs, submission: Path, out: Path) -> tuple[int, str]:
    """Exit code and stderr (whitespace normalised: the console wraps lines) of ``rexmle grade``."""
    done = subprocess.run(
        [sys.executable, "-m", "rexmle.cli", "grade", TASK, str(submission), "--workers", "1",
         "--data-dir", str(dirs.root.parent), "--json", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    return done.returncode, " ".join(done.stderr.split())


def _sample(dirs, tmp_path: Path) -> Path:
    folder = tmp_path / "sample"
    shutil.copytree(dirs.public / "predictions", folder / "predictions")
    shutil.copy(dirs.public / "sample_submission.csv", folder / "submission.csv")
    return folder


def test_untouched_gold_grades(dirs, tmp_path) -> None:
    code, stderr = _grade(dirs, _sample(dirs, tmp_path), tmp_path / "grade.json")
    assert code == 0, stderr[-2000:]
    assert json.loads((tmp_path / "grade.json").read_text())["valid"] is True


def test_replaced_gold_mask_is_exit_2_naming_the_file(dirs, tmp_path) -> None:
    mask = sorted((dirs.gold / "predictions").glob("*.nii.gz"))[0]
    img = nib.load(str(mask))
    # a replacement that still loads and is a valid mask: grading would silently change scores
    nib.save(nib.Nifti1Image(np.ones(img.shape, np.uint8), img.affine, img.header), str(mask))
    code, stderr = _grade(dirs, _sample(dirs, tmp_path), tmp_path / "grade.json")
    assert code == 2
    assert f"private/gold/predictions/{mask.name} does not match prepared.json" in stderr
    assert not (tmp_path / "grade.json").exists()


def test_edited_split_or_missing_gold_file_is_exit_2(dirs, tmp_path) -> None:
    split = dirs.private / "split.json"
    split.write_text(split.read_text() + " ")
    code, stderr = _grade(dirs, dirs.gold, tmp_path / "a.json")
    assert code == 2
    assert "private/split.json does not match" in stderr
    prepare_task(TASK, data_dir=dirs.root.parent, mini=True, force=True)
    (dirs.gold / "submission.csv").unlink()
    (dirs.gold / "submission.csv").symlink_to(dirs.public / "sample_submission.csv")
    code, stderr = _grade(dirs, dirs.gold, tmp_path / "b.json")
    assert code == 2
    assert "private/gold/submission.csv is missing or not a regular file" in stderr


def _hashed_files(dirs, monkeypatch) -> list[str]:
    """Run the integrity check in-process; the private files it read and hashed."""
    from rexmle.grading import integrity

    hashed: list[str] = []
    real = integrity.sha256_file

    def counting(path: Path) -> str:
        hashed.append(path.relative_to(dirs.private).as_posix())
        return real(path)

    monkeypatch.setattr(integrity, "sha256_file", counting)
    integrity.check_private_files(TASK, dirs)
    return hashed


def test_a_verified_file_is_not_hashed_again_until_it_changes(dirs, monkeypatch) -> None:
    listed = json.loads(dirs.prepared_json.read_text())["files"]["private"]
    assert sorted(_hashed_files(dirs, monkeypatch)) == sorted(listed)
    assert _hashed_files(dirs, monkeypatch) == []
    split = dirs.private / "split.json"
    split.write_text(split.read_text())  # same bytes, new mtime and ctime: read once more
    assert _hashed_files(dirs, monkeypatch) == ["split.json"]
    assert _hashed_files(dirs, monkeypatch) == []


def test_an_edit_hidden_behind_a_restored_mtime_is_still_found(dirs, monkeypatch) -> None:
    from rexmle.errors import HarnessError

    assert _hashed_files(dirs, monkeypatch)  # the cache now remembers every file
    mask = sorted((dirs.gold / "predictions").glob("*.nii.gz"))[0]
    before = mask.stat()
    data = bytearray(mask.read_bytes())
    data[-1] ^= 0xFF  # same size, other content
    mask.write_bytes(bytes(data))
    os.utime(mask, ns=(before.st_atime_ns, before.st_mtime_ns))  # the mtime put back
    assert mask.stat().st_size == before.st_size
    assert mask.stat().st_mtime_ns == before.st_mtime_ns
    with pytest.raises(HarnessError, match=f"{mask.name} does not match prepared.json"):
        _hashed_files(dirs, monkeypatch)


def test_an_unwritable_private_folder_grades_without_a_cache(dirs, monkeypatch) -> None:
    from rexmle.grading import integrity

    def refuse(self: Path, *_args: object, **_kwargs: object) -> int:
        raise PermissionError(13, "read-only file system", str(self))

    monkeypatch.setattr(Path, "write_text", refuse)
    assert _hashed_files(dirs, monkeypatch)  # checked in full, nothing raised
    assert not (dirs.private / integrity.CACHE_NAME).exists()
