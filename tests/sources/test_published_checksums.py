"""Third-party checksums beside the live record's, and local files recognised by content.

The packaged table (``rexmle/sources/published_checksums.tsv``) is checked against the task
declarations; downloads run against the local source server, local folders are read offline.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import zipfile
from pathlib import Path

import pytest
from source_server import prepare_copy, serve_zenodo
from typer.testing import CliRunner

from rexmle.cli import app
from rexmle.errors import RexmleError
from rexmle.preparation import prepare_task
from rexmle.sources import fetch as fetch_module
from rexmle.sources.checksums import parse_checksum
from rexmle.sources.errors import ChecksumMismatchError, DownloadError
from rexmle.sources.fetch import fetch_task_raw
from rexmle.sources.published import PublishedChecksum, published_for, published_table
from rexmle.tasks.registry import all_tasks, get_task, load_task


def test_every_published_row_names_a_declared_file_and_its_evidence() -> None:
    tasks = all_tasks()
    rows = published_table()
    assert len(rows) == 11  # the rows of the spec table that state a size or a checksum
    for row in rows:
        assert row.evidence
        assert row.evidence_kind
        for value in row.checksums:
            parse_checksum(value)
        for task_id in row.task_ids:
            spec = tasks[task_id]
            matched = [
                f
                for source in spec.sources
                for f in source.files
                if (source.kind, source.record, f.name) == (row.kind, row.record, row.file_name)
            ]
            assert matched, (task_id, row.file_name)
            assert row in published_for(spec, *_source_and_file(spec, row.file_name))


def _source_and_file(spec, name):
    for source in spec.sources:
        for f in source.files:
            if f.name == name:
                return source, f
    raise AssertionError(name)


def test_info_shows_the_published_values_with_their_provenance() -> None:
    runner = CliRunner()
    text = runner.invoke(app, ["info", "isles22"]).output
    assert "ISLES-2022.zip: pinned in the task: nothing" in text
    assert "md5:302ee280373cdd5c190ab763d72a7a50, 1692717470 bytes" in text
    assert "torch-em" in text
    assert "f374895e383f725ddd280db41ef36ed975277c33de0e587a631ca7ea7ad45d6b" in text
    result = runner.invoke(app, ["info", "seg_a", "--json"])
    files = {f["name"]: f for s in json.loads(result.output)["sources"] for f in s["files"]}
    (kits,) = files["KiTS.zip"]["published"]
    assert kits["checksums"] == [
        "sha256:6c9c2ea31e5998348acf1c4f6683ae07041bd6c8caf309dd049adc7f222de26e"
    ]
    assert "torch_em/data/datasets/medical/sega.py" in kits["evidence"]
    no_value = runner.invoke(app, ["info", "usenhance"]).output
    assert "published: no third-party value found" in no_value


def test_a_third_party_mismatch_names_both_values_and_keeps_the_file(source_server, tmp_path):
    task = get_task("isles22")
    body = _zip({"ISLES-2022/readme.txt": b"not the real ISLES archive"})
    serve_zenodo(source_server, "7960856", {"ISLES-2022.zip": body})
    raw = tmp_path / "isles22" / "raw"
    with pytest.raises(ChecksumMismatchError) as caught:
        fetch_task_raw(task, raw, progress=False)
    message = str(caught.value)
    got_md5 = hashlib.md5(body).hexdigest()
    assert "matches the checksum of the source itself" in message
    assert "expected md5:302ee280373cdd5c190ab763d72a7a50 (published by a third-party loader" in (
        message
    )
    assert f"but got md5:{got_md5}" in message
    assert "f374895e383f725ddd280db41ef36ed975277c33de0e587a631ca7ea7ad45d6b" in message
    assert "expected 1692717470 bytes" in message
    assert "--no-published-checksums" in message
    downloads = [h for h in source_server.hits if h.path.endswith("/content")]
    assert len(downloads) == 1  # a file that matches its record is not fetched twice
    assert (raw.parent / "downloads" / "ISLES-2022.zip.part").read_bytes() == body

    manifest = fetch_task_raw(task, raw, progress=False, published_checksums=False)
    (done,) = manifest.files
    assert done.checksums["md5"] == got_md5
    assert done.verified_against == [
        f"md5:{got_md5} (published by zenodo record 7960856)",
        f"{len(body)} bytes (published by zenodo record 7960856)",
    ]


def _isles_zip(tmp_path: Path) -> bytes:
    root = tmp_path / "fixture"
    load_task("isles22").make_fixture(root, seed=0)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted((root / "ISLES-2022").rglob("*")):
            archive.write(path, path.relative_to(root).as_posix())
    return buffer.getvalue()


@pytest.mark.usefixtures("offline")
def test_a_published_checksum_verifies_a_local_copy_found_under_another_name(
    tmp_path, monkeypatch, caplog
):
    body = _isles_zip(tmp_path)
    digest = hashlib.sha256(body).hexdigest()
    row = PublishedChecksum(
        task_ids=("isles22",),
        kind="zenodo",
        record="7960856",
        file_name="ISLES-2022.zip",
        size_bytes=len(body),
        md5=None,
        sha256=digest,
        evidence="a test's own archive",
        evidence_kind="test",
    )
    monkeypatch.setattr(fetch_module, "published_for", lambda *_args: [row])
    shared = tmp_path / "browser-downloads"
    shared.mkdir()
    (shared / "ISLES-2022 (1).zip").write_bytes(body)
    (shared / "other.zip").write_bytes(b"PK\x05\x06" + bytes(18))
    with caplog.at_level(logging.WARNING, logger="rexmle.sources.fetch"):
        dirs, _ = prepare_task(
            "isles22", data_dir=tmp_path / "data", from_dir=shared, check_counts=False
        )
    (line,) = [r.getMessage() for r in caplog.records if "recognised" in r.getMessage()]
    assert "no file named 'ISLES-2022.zip'" in line
    assert "ISLES-2022 (1).zip" in line
    assert f"by content: {len(body)} bytes and sha256:{digest} (published by a test" in line
    manifest = json.loads((dirs.raw / ".rexmle-sources.json").read_text())
    assert manifest["files"][0]["source_url"].endswith("ISLES-2022%20%281%29.zip")
    assert any("published by a test" in v for v in manifest["files"][0]["verified_against"])
    assert (dirs.public / "sample_submission.csv").is_file()


@pytest.mark.usefixtures("offline")
def test_an_unpinned_copy_is_recognised_by_the_members_it_holds(tmp_path, caplog):
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "isles.zip").write_bytes(_isles_zip(tmp_path))
    (shared / "notes.zip").write_bytes(_zip({"README.txt": b"nothing of ISLES"}))
    with caplog.at_level(logging.WARNING, logger="rexmle.sources.fetch"):
        dirs, _ = prepare_copy("isles22", tmp_path / "data", from_dir=shared)
    (line,) = [r.getMessage() for r in caplog.records if "recognised" in r.getMessage()]
    assert "isles.zip, recognised by content: it holds 'ISLES-2022/derivatives/" in line
    assert (dirs.public / "sample_submission.csv").is_file()

    (shared / "isles-again.zip").write_bytes((shared / "isles.zip").read_bytes())
    with pytest.raises(DownloadError, match="several files could be it"):
        fetch_task_raw(
            get_task("isles22"),
            tmp_path / "other" / "raw",
            from_dir=shared,
            allow_unpinned=True,
            published_checksums=False,
            progress=False,
        )


@pytest.mark.usefixtures("offline")
def test_nothing_recognisable_says_what_it_looked_for(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "notes.zip").write_bytes(_zip({"README.txt": b"x"}))
    with pytest.raises(RexmleError) as caught:
        fetch_task_raw(
            get_task("isles22"),
            tmp_path / "raw",
            from_dir=shared,
            allow_unpinned=True,
            progress=False,
        )
    message = str(caught.value)
    assert "not found in from_dir" in message
    assert "md5:302ee280373cdd5c190ab763d72a7a50" in message
    assert "1692717470 bytes" in message
    without = pytest.raises(RexmleError, match="a member matching 'ISLES-2022/derivatives/\\*'")
    with without:
        fetch_task_raw(
            get_task("isles22"),
            tmp_path / "raw2",
            from_dir=shared,
            allow_unpinned=True,
            published_checksums=False,
            progress=False,
        )


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return buffer.getvalue()
