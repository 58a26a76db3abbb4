"""The validation server: valid and invalid uploads with reasons, never a score, limits enforced."""

from __future__ import annotations

import http.client
import io
import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from rexmle.agents.dummy import copy_sample_submission
from rexmle.runner.validation_server import MAX_MEMBERS, ValidationServer, unpack_submission
from rexmle.runner.workspace import build_workspace

SCORE_WORDS = ("dice", "lesion_f1", "abs_volume_diff", "score", "percentile", "metric", "medal")


def tar_of(folder: Path, *, arcname: str = ".") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(folder, arcname=arcname)
    return buffer.getvalue()


def zip_of(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(folder.rglob("*")):
            archive.write(path, path.relative_to(folder).as_posix())
    return buffer.getvalue()


def post(server: ValidationServer, body: bytes, *, length: int | None = None) -> tuple[int, dict]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    connection.putrequest("POST", "/validate")
    connection.putheader("Content-Length", str(len(body) if length is None else length))
    connection.endheaders()
    if length is None:
        connection.send(body)
    response = connection.getresponse()
    answer = json.loads(response.read())
    connection.close()
    return response.status, answer


@pytest.fixture
def sample(isles22_dirs, tmp_path: Path) -> Path:
    folder = tmp_path / "sample"
    copy_sample_submission(isles22_dirs.public, folder)
    return folder


@pytest.fixture
def server(isles22_dirs):
    with ValidationServer(
        "isles22", data_dir=isles22_dirs.root.parent, max_upload_bytes=200_000
    ) as running:
        yield running


def assert_no_score(answer: dict) -> None:
    assert set(answer) <= {"valid", "reasons", "warnings", "n_cases", "error"}
    text = json.dumps(answer).lower()
    for word in SCORE_WORDS:
        assert word not in text, word


def test_valid_upload_is_answered_valid_without_any_score(server, sample):
    status, answer = post(server, tar_of(sample))
    assert status == 200
    assert answer == {"valid": True, "reasons": [], "warnings": [], "n_cases": 2}
    assert_no_score(answer)


def test_zip_upload_and_a_single_top_folder_are_accepted(server, sample):
    assert post(server, zip_of(sample))[1]["valid"] is True
    # `tar -C parent submission`: one top folder holding submission.csv
    assert post(server, tar_of(sample, arcname="submission"))[1]["valid"] is True


def test_invalid_upload_lists_the_reasons_and_no_score(server, sample):
    masks = sorted((sample / "predictions").glob("*.nii.gz"))
    masks[0].unlink()
    status, answer = post(server, tar_of(sample))
    assert status == 200
    assert answer["valid"] is False
    assert len(answer["reasons"]) == 1
    assert masks[0].name in answer["reasons"][0]
    assert_no_score(answer)


def test_oversized_upload_is_refused_with_413(server, sample):
    # announced size over the limit: refused before the body is read
    status, answer = post(server, b"", length=200_001)
    assert status == 413
    assert "200000" in answer["error"]
    # a real body over the limit
    padding = sample / "padding.bin"
    padding.write_bytes(os.urandom(300_000))
    assert post(server, tar_of(sample))[0] == 413


def test_archive_that_unpacks_too_large_is_refused(isles22_dirs, sample):
    # 1 MB of zeros gzips to about 1 kB: small upload, large content
    (sample / "zeros.bin").write_bytes(bytes(1_000_000))
    with ValidationServer(
        "isles22", data_dir=isles22_dirs.root.parent, max_unpacked_bytes=500_000
    ) as small:
        status, answer = post(small, tar_of(sample))
    assert status == 413
    assert "500000" in answer["reasons"][0]


def test_request_rate_is_bounded_with_429(isles22_dirs, sample):
    payload = tar_of(sample)
    with ValidationServer(
        "isles22", data_dir=isles22_dirs.root.parent, max_requests_per_minute=2
    ) as limited:
        assert post(limited, payload)[0] == 200
        assert post(limited, payload)[0] == 200
        status, answer = post(limited, payload)
    assert status == 429
    assert "too many" in answer["error"]


def test_members_escaping_the_folder_or_links_are_rejected(tmp_path: Path):
    # "C:/x" is a folder named "C:" to tar on Linux; the one path rule set calls it absolute
    for n, name in enumerate(("../evil.txt", "/abs.txt", "C:/evil.txt", "c:evil.txt")):
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            info = tarfile.TarInfo(name)
            info.size = 1
            archive.addfile(info, io.BytesIO(b"x"))
        target = tmp_path / f"t{n}"
        target.mkdir()
        with pytest.raises(ValueError, match="outside the submission folder"):
            unpack_submission(buffer.getvalue(), target, max_unpacked_bytes=10)
        assert not any(target.iterdir())
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        link = tarfile.TarInfo("submission.csv")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        archive.addfile(link)
    with pytest.raises(ValueError, match="not a regular file"):
        unpack_submission(buffer.getvalue(), tmp_path, max_unpacked_bytes=10)
    with pytest.raises(ValueError, match="neither a zip nor a tar"):
        unpack_submission(b"plain bytes", tmp_path, max_unpacked_bytes=10)


def test_file_and_folder_of_one_name_and_too_many_members_are_400(server, tmp_path: Path):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name in ("x", "x/y"):
            info = tarfile.TarInfo(name)
            info.size = 1
            archive.addfile(info, io.BytesIO(b"1"))
    status, answer = post(server, buffer.getvalue())
    assert status == 400
    assert "cannot be unpacked" in answer["reasons"][0]
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for n in range(MAX_MEMBERS + 1):
            archive.addfile(tarfile.TarInfo(f"f{n}"), io.BytesIO(b""))
    with pytest.raises(ValueError, match=f"more than {MAX_MEMBERS} members"):
        unpack_submission(buffer.getvalue(), tmp_path, max_unpacked_bytes=10)


def test_bad_archive_is_answered_400(server):
    status, answer = post(server, b"this is not an archive")
    assert status == 400
    assert answer["valid"] is False


def test_workspace_validate_script_reports_valid_and_invalid(server, isles22_dirs, tmp_path: Path):
    workspace = build_workspace(
        tmp_path / "ws",
        task_id="isles22",
        public_dir=isles22_dirs.public,
        time_limit_s=60,
        validation={
            "url": server.url,
            "max_upload_bytes": server.max_upload_bytes,
            "max_requests_per_minute": 30,
        },
        data_mode="copy",
    )
    env = {"PATH": os.environ["PATH"], "SUBMISSION_DIR": str(workspace.submission)}
    script = [sys.executable, str(workspace.validate_script)]
    empty = subprocess.run(script, env=env, capture_output=True, text=True, check=False)
    assert empty.returncode == 1
    assert "submission.csv does not exist" in empty.stdout
    copy_sample_submission(workspace.data, workspace.submission)
    valid = subprocess.run(script, env=env, capture_output=True, text=True, check=False)
    assert (valid.returncode, valid.stdout.strip()) == (0, "valid (2 cases)")
    # a link to a file inside the folder is sent as a copy, as the run's end treats it
    masks = sorted((workspace.submission / "predictions").glob("*.nii.gz"))
    kept = masks[0].with_name("kept.nii.gz")
    masks[0].rename(kept)
    masks[0].symlink_to(kept)
    linked = subprocess.run(script, env=env, capture_output=True, text=True, check=False)
    assert (linked.returncode, linked.stdout.strip()) == (0, "valid (2 cases)")
    (workspace.submission / "submission.csv").write_text("case_id,predicted_mask_path\nnope,x\n")
    invalid = subprocess.run(script, env=env, capture_output=True, text=True, check=False)
    assert invalid.returncode == 1
    assert "'nope' is not a test id" in invalid.stdout
    assert "test id(s) missing" in invalid.stdout
