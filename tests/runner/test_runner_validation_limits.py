"""The validation server under hostile uploads: bounded memory, every bad member a 400."""

from __future__ import annotations

import http.client
import io
import json
import sys
import tarfile
from pathlib import Path

import pytest

from rexmle.agents.dummy import copy_sample_submission
from rexmle.runner.validation_server import MAX_MEMBER_DEPTH, ValidationServer
from rexmle.tasks.registry import load_task

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "grading"))
from bomb_files import bomb_submission, upload_peak_rss

SERVER_PEAK_LIMIT_MIB = 320
"""The server process with a client in it peaks near 130 MiB on a small upload."""


def _post(server: ValidationServer, body: bytes) -> tuple[int, dict]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    connection.request("POST", "/validate", body=body, headers={"Content-Length": str(len(body))})
    response = connection.getresponse()
    answer = json.loads(response.read())
    connection.close()
    return response.status, answer


def _tar(members: dict[str, bytes]) -> bytes:
    """An uncompressed tar; every name is also written as a pax ``path`` record, verbatim (NUL
    bytes included: a plain tar header would cut the name at the first NUL).
    """
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name, data in members.items():
            info = tarfile.TarInfo("member")
            info.pax_headers = {"path": name}
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.fixture
def server(isles22_dirs):
    with ValidationServer("isles22", data_dir=isles22_dirs.root.parent) as running:
        yield running


def test_nul_and_deep_members_are_400_with_a_reason(server):
    status, answer = _post(server, _tar({"submission.csv": b"x", "pred\x00ictions/a.nii.gz": b"1"}))
    assert status == 400, answer
    assert "NUL byte" in answer["reasons"][0]
    deep = "d/" * 1100 + "f.nii.gz"
    status, answer = _post(server, _tar({"submission.csv": b"x", deep: b"1"}))
    assert status == 400, answer
    assert f"1100 folders deep (at most {MAX_MEMBER_DEPTH})" in answer["reasons"][0]
    long_part = "p" * 300 + ".nii.gz"
    status, answer = _post(server, _tar({long_part: b"1"}))
    assert status == 400
    assert "part over 255 bytes" in answer["reasons"][0]
    # the server still answers normally afterwards
    status, answer = _post(server, b"not an archive")
    assert status == 400
    assert answer["valid"] is False


def test_truncated_or_corrupt_compressed_archives_are_400(server, isles22_dirs, tmp_path):
    folder = tmp_path / "sample"
    copy_sample_submission(isles22_dirs.public, folder)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(folder, arcname=".")
    whole = buffer.getvalue()
    for body in (whole[: len(whole) // 2], whole[:10] + bytes(200) + whole[210:]):
        status, answer = _post(server, body)
        assert status == 400, answer
        assert answer["valid"] is False
        assert answer["reasons"]


def test_bomb_upload_keeps_the_server_process_small(isles22_dirs, tmp_path):
    impl = load_task("isles22").columns
    (column,) = impl.path_columns
    folder = bomb_submission(
        isles22_dirs.gold, ".nii.gz", tmp_path / "sub", id_column=impl.id_column, path_column=column
    )
    with tarfile.open(tmp_path / "upload.tar.gz", "w:gz") as archive:
        archive.add(folder, arcname="submission")
    row = upload_peak_rss("isles22", isles22_dirs.root.parent, tmp_path / "upload.tar.gz")
    assert row["status"] == 200
    assert row["answer"]["valid"] is False
    assert any("not decoded" in r for r in row["answer"]["reasons"])
    assert row["server"] < SERVER_PEAK_LIMIT_MIB, row
    assert row["check"] < SERVER_PEAK_LIMIT_MIB, row


def test_large_upload_is_streamed_to_disk_not_held_in_memory(isles22_dirs, tmp_path):
    body = tmp_path / "big.bin"
    with open(body, "wb") as handle:
        handle.write(b"not a tar header" * 32)  # then zeros, 400 MiB in all: not an archive
        handle.truncate(400 << 20)
    row = upload_peak_rss("isles22", isles22_dirs.root.parent, body)
    assert row["status"] == 400
    assert row["server"] < SERVER_PEAK_LIMIT_MIB, row


def test_a_check_over_its_memory_limit_is_a_500_and_the_server_goes_on(isles22_dirs, tmp_path):
    folder = tmp_path / "sample"
    copy_sample_submission(isles22_dirs.public, folder)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(folder, arcname=".")
    with ValidationServer(
        "isles22", data_dir=isles22_dirs.root.parent, memory_bytes=64 << 20
    ) as starved:
        status, answer = _post(starved, buffer.getvalue())
        assert status == 500
        assert "memory limit 64 MiB" in answer["error"]
        assert starved.n_requests == 1
    with ValidationServer("isles22", data_dir=isles22_dirs.root.parent) as normal:
        status, answer = _post(normal, buffer.getvalue())
        assert status == 200
        assert answer["valid"] is True
