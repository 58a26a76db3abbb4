import hashlib
import json
from pathlib import Path

import pytest
from source_server import FAST_RETRIES, Route, make_task, serve_gdrive, serve_zenodo

from rexmle.sources import (
    ChecksumMismatchError,
    DiskSpaceError,
    DownloadError,
    HttpStatusError,
    UnsafeArchiveError,
    download_task_files,
    fetch_task_raw,
    read_manifest,
)
from rexmle.sources.manifest import MANIFEST_NAME
from rexmle.tasks.spec import SourceFile, SourceSpec

RECORD = "7812323"


def md5(data: bytes) -> str:
    return "md5:" + hashlib.md5(data).hexdigest()


def sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def zenodo_source(*files: SourceFile, record: str = RECORD) -> SourceSpec:
    return SourceSpec(kind="zenodo", record=record, files=list(files), licence="CC BY-SA 4.0")


@pytest.fixture
def two_archives(zip_builder):
    images = zip_builder(
        "images.zip", {"training_data/xrays/a.png": b"PNG-A" * 100, "training_data/b.json": b"{}"}
    )
    labels = zip_builder("labels.zip", {"l1.txt": b"one", "l2.txt": b"two", "l3.txt": b"three"})
    return images, labels


def test_zenodo_record_download_verify_extract(source_server, tmp_path, two_archives):
    images, labels = two_archives
    serve_zenodo(source_server, RECORD, {"images.zip": images, "labels.zip": labels, "x.csv": b"1"})
    task = make_task(
        [
            zenodo_source(
                SourceFile(name="images.zip", checksum=sha256(images), size_bytes=len(images)),
                SourceFile(name="labels.zip", extract_to="labels"),
            )
        ]
    )
    raw = tmp_path / "data" / task.raw_folder / "raw"
    manifest = fetch_task_raw(task, raw, progress=False, retry_policy=FAST_RETRIES)

    assert (raw / "training_data/xrays/a.png").read_bytes() == b"PNG-A" * 100
    assert (raw / "labels/l3.txt").read_bytes() == b"three"
    downloads = tmp_path / "data" / task.raw_folder / "downloads"
    assert sorted(p.name for p in downloads.iterdir()) == ["images.zip", "labels.zip"]
    # only the listed files were fetched, x.csv never
    assert source_server.hits_on(f"/api/records/{RECORD}/files/x.csv/content") == []

    assert manifest.complete
    by_name = {f.name: f for f in manifest.files}
    assert by_name["images.zip"].checksums["md5"] == md5(images).removeprefix("md5:")
    assert by_name["images.zip"].size_bytes == len(images)
    assert by_name["images.zip"].licence == "CC BY-SA 4.0"
    assert by_name["images.zip"].source_licence == "cc-by-4.0"
    assert by_name["images.zip"].source_url.endswith("/files/images.zip/content")
    assert any("published by zenodo record" in v for v in by_name["images.zip"].verified_against)
    assert any("pinned in the task YAML" in v for v in by_name["images.zip"].verified_against)
    placed = {e.name: e for e in manifest.extracted}
    # images.zip: 2 files (zipfile writes no folder entries); labels.zip: 3 files
    assert (placed["images.zip"].member_count, placed["images.zip"].target) == (2, ".")
    assert (placed["labels.zip"].member_count, placed["labels.zip"].target) == (3, "labels")
    on_disk = json.loads((raw / MANIFEST_NAME).read_text())
    assert on_disk["complete"] is True
    assert on_disk["task_ids"] == ["demo-task"]


def test_second_call_and_a_task_sharing_the_folder_are_no_ops(source_server, tmp_path, zip_builder):
    archive = zip_builder("shared.zip", {"shared/a.txt": b"a"})
    serve_zenodo(source_server, RECORD, {"shared.zip": archive})
    source = zenodo_source(SourceFile(name="shared.zip", checksum=md5(archive)))
    first = make_task([source], task_id="fam-task1", shared_raw="fam-shared")
    second = make_task([source], task_id="fam-task2", shared_raw="fam-shared")
    raw = tmp_path / "fam-shared" / "raw"
    fetch_task_raw(first, raw, progress=False, retry_policy=FAST_RETRIES)
    n_hits = len(source_server.hits)
    again = fetch_task_raw(first, raw, progress=False, retry_policy=FAST_RETRIES)
    other = fetch_task_raw(second, raw, progress=False, retry_policy=FAST_RETRIES)
    assert len(source_server.hits) == n_hits
    assert again.complete
    assert other.task_ids == ["fam-task1"]
    assert (raw / "shared/a.txt").read_bytes() == b"a"


def test_removed_raw_folder_is_fetched_again_from_the_kept_download(
    source_server, tmp_path, zip_builder
):
    archive = zip_builder("a.zip", {"top/a.txt": b"a"})
    serve_zenodo(source_server, RECORD, {"a.zip": archive})
    task = make_task([zenodo_source(SourceFile(name="a.zip", extract_to="inner"))])
    raw = tmp_path / "t" / "raw"
    fetch_task_raw(task, raw, progress=False, retry_policy=FAST_RETRIES)
    import shutil

    shutil.rmtree(raw / "inner")
    manifest = fetch_task_raw(task, raw, progress=False, retry_policy=FAST_RETRIES)
    assert (raw / "inner/top/a.txt").exists()
    assert manifest.files[0].outcome == "reused"
    assert len(source_server.hits_on(f"/api/records/{RECORD}/files/a.zip/content")) == 1


def test_dropped_connection_resumes_and_verifies(source_server, tmp_path, zip_builder):
    archive = zip_builder("big.zip", {f"f{i}.bin": bytes([i]) * 50_000 for i in range(20)})
    half = len(archive) // 2
    serve_zenodo(
        source_server, RECORD, {"big.zip": archive}, **{"big.zip": {"drop_after_bytes": half}}
    )
    task = make_task([zenodo_source(SourceFile(name="big.zip", checksum=sha256(archive)))])
    raw = tmp_path / "t" / "raw"
    manifest = fetch_task_raw(task, raw, progress=False, retry_policy=FAST_RETRIES)
    hits = source_server.hits_on(f"/api/records/{RECORD}/files/big.zip/content")
    assert [h.range for h in hits] == [None, f"bytes={half}-"]
    assert manifest.files[0].outcome == "resumed"
    assert (raw / "f19.bin").read_bytes() == bytes([19]) * 50_000
    assert not list((tmp_path / "t" / "downloads").glob("*.part"))


def test_corrupt_once_is_retried_and_then_verifies(source_server, tmp_path, zip_builder):
    archive = zip_builder("a.zip", {"a.txt": b"a" * 1000})
    serve_zenodo(source_server, RECORD, {"a.zip": archive}, **{"a.zip": {"corrupt_times": 1}})
    task = make_task([zenodo_source(SourceFile(name="a.zip"))])
    manifest = fetch_task_raw(
        task, tmp_path / "t" / "raw", progress=False, retry_policy=FAST_RETRIES
    )
    assert manifest.complete
    assert len(source_server.hits_on(f"/api/records/{RECORD}/files/a.zip/content")) == 2


def test_corrupt_bytes_fail_after_one_retry_and_leave_nothing(source_server, tmp_path, zip_builder):
    archive = zip_builder("a.zip", {"a.txt": b"a" * 1000})
    serve_zenodo(source_server, RECORD, {"a.zip": archive}, **{"a.zip": {"corrupt_times": 99}})
    task = make_task([zenodo_source(SourceFile(name="a.zip"))])
    raw = tmp_path / "t" / "raw"
    with pytest.raises(ChecksumMismatchError) as err:
        fetch_task_raw(task, raw, progress=False, retry_policy=FAST_RETRIES)
    message = str(err.value)
    corrupt = bytearray(archive)
    corrupt[len(archive) // 2] ^= 0xFF
    # both sums: the published one and the one of the bytes received
    assert f"expected {md5(archive)}" in message
    assert f"got {md5(bytes(corrupt))}" in message
    assert "task 'demo-task'" in message
    assert f"zenodo record {RECORD}" in message
    assert "'a.zip'" in message
    assert len(source_server.hits_on(f"/api/records/{RECORD}/files/a.zip/content")) == 2
    assert list((tmp_path / "t" / "downloads").iterdir()) == []
    assert not raw.exists()


def test_pinned_checksum_differing_from_the_source_fails(source_server, tmp_path, zip_builder):
    archive = zip_builder("a.zip", {"a.txt": b"a"})
    serve_zenodo(source_server, RECORD, {"a.zip": archive})
    outdated = md5(b"an older version of the file")
    task = make_task([zenodo_source(SourceFile(name="a.zip", checksum=outdated))])
    with pytest.raises(ChecksumMismatchError, match=f"expected {outdated} \\(pinned"):
        fetch_task_raw(task, tmp_path / "t" / "raw", progress=False, retry_policy=FAST_RETRIES)
    assert list((tmp_path / "t" / "downloads").iterdir()) == []


@pytest.mark.usefixtures("source_server")
def test_missing_record_is_a_clear_404(tmp_path):
    task = make_task([zenodo_source(SourceFile(name="a.zip"), record="999")])
    with pytest.raises(HttpStatusError) as err:
        fetch_task_raw(task, tmp_path / "t" / "raw", progress=False, retry_policy=FAST_RETRIES)
    assert err.value.status == 404
    assert "task 'demo-task', zenodo record 999" in str(err.value)


@pytest.mark.parametrize("status", [403, 404, 410])
def test_file_refused_names_task_record_and_file(source_server, tmp_path, zip_builder, status):
    archive = zip_builder("a.zip", {"a.txt": b"a"})
    serve_zenodo(source_server, RECORD, {"a.zip": archive}, **{"a.zip": {"statuses": [status]}})
    task = make_task([zenodo_source(SourceFile(name="a.zip"))])
    with pytest.raises(HttpStatusError) as err:
        fetch_task_raw(task, tmp_path / "t" / "raw", progress=False, retry_policy=FAST_RETRIES)
    assert f"task 'demo-task', zenodo record {RECORD}, file 'a.zip'" in str(err.value)
    assert f"HTTP {status}" in str(err.value)


def test_transient_errors_then_success(source_server, tmp_path, zip_builder):
    archive = zip_builder("a.zip", {"a.txt": b"a"})
    serve_zenodo(source_server, RECORD, {"a.zip": archive}, **{"a.zip": {"statuses": [503, 429]}})
    task = make_task([zenodo_source(SourceFile(name="a.zip"))])
    manifest = fetch_task_raw(
        task, tmp_path / "t" / "raw", progress=False, retry_policy=FAST_RETRIES
    )
    assert manifest.complete
    assert len(source_server.hits_on(f"/api/records/{RECORD}/files/a.zip/content")) == 3


def test_file_not_in_record_lists_what_the_record_has(source_server, tmp_path, zip_builder):
    serve_zenodo(source_server, RECORD, {"other.zip": zip_builder("o.zip", {"o": b"o"})})
    task = make_task([zenodo_source(SourceFile(name="wanted.zip"))])
    with pytest.raises(DownloadError, match=r"no file \['wanted.zip'\]; it has \['other.zip'\]"):
        fetch_task_raw(task, tmp_path / "t" / "raw", progress=False, retry_policy=FAST_RETRIES)


def test_not_enough_disk_is_reported_before_downloading(
    source_server, tmp_path, zip_builder, monkeypatch
):
    archive = zip_builder("a.zip", {"a.txt": b"a"})
    serve_zenodo(source_server, RECORD, {"a.zip": archive})
    task = make_task([zenodo_source(SourceFile(name="a.zip"))])
    monkeypatch.setattr("rexmle.sources.disk.free_bytes", lambda _folder: 1000)
    with pytest.raises(DiskSpaceError) as err:
        fetch_task_raw(task, tmp_path / "t" / "raw", progress=False, retry_policy=FAST_RETRIES)
    assert err.value.available_bytes == 1000
    assert err.value.needed_bytes == len(archive)
    assert f"needs {len(archive)} bytes" in str(err.value)
    assert "has 1000 bytes" in str(err.value)
    assert source_server.hits_on(f"/api/records/{RECORD}/files/a.zip/content") == []


def test_unsafe_archive_from_a_source_is_refused(source_server, tmp_path, zip_builder):
    archive = zip_builder("evil.zip", {"ok.txt": b"ok", "../../evil.txt": b"pwned"})
    serve_zenodo(source_server, RECORD, {"evil.zip": archive})
    task = make_task([zenodo_source(SourceFile(name="evil.zip"))])
    raw = tmp_path / "t" / "raw"
    with pytest.raises(UnsafeArchiveError, match=r"(?s)task 'demo-task'.*'\.\.' component"):
        fetch_task_raw(task, raw, progress=False, retry_policy=FAST_RETRIES)
    assert not (tmp_path / "evil.txt").exists()
    assert not (tmp_path / "t" / "evil.txt").exists()
    manifest = read_manifest(raw)
    assert manifest is not None
    assert not manifest.complete
    assert not (raw / "ok.txt").exists()


def test_figshare_by_name_by_id_and_plain_url(source_server, tmp_path, zip_builder):
    dongyang = zip_builder("Dongyang.zip", {"D1/D1.nrrd": b"img"})
    rider = zip_builder("Rider.zip", {"R1/R1.nrrd": b"img"})
    notes = b"plain text notes"
    source_server.add("/ndownloader/files/30950971", Route(body=dongyang))
    source_server.add("/ndownloader/files/30950914", Route(body=rider))
    source_server.add("/static/notes.txt", Route(body=notes))
    article = {
        "id": 14806362,
        "license": {"name": "CC BY 4.0"},
        "files": [
            {
                "id": 30950971,
                "name": "Dongyang.zip",
                "size": len(dongyang),
                "computed_md5": hashlib.md5(dongyang).hexdigest(),
                "download_url": f"{source_server.url}/ndownloader/files/30950971",
            },
            {
                "id": 30950914,
                "name": "Rider.zip",
                "size": len(rider),
                "computed_md5": hashlib.md5(rider).hexdigest(),
                "download_url": f"{source_server.url}/ndownloader/files/30950914",
            },
        ],
    }
    source_server.add_json("/v2/articles/14806362/versions/1", json.dumps(article))
    task = make_task(
        [
            SourceSpec(
                kind="figshare",
                record="14806362",
                version="1",
                files=[
                    SourceFile(name="Dongyang.zip", extract_to="Dongyang"),
                    SourceFile(name="rider-by-id.zip", url="30950914", extract_to="Rider"),
                ],
                licence="CC BY 4.0",
            ),
            SourceSpec(
                kind="http",
                files=[
                    SourceFile(
                        name="notes.txt",
                        url=f"{source_server.url}/static/notes.txt",
                        checksum=sha256(notes),
                        extract=False,
                    )
                ],
            ),
        ]
    )
    raw = tmp_path / "seg_a" / "raw"
    manifest = fetch_task_raw(task, raw, progress=False, retry_policy=FAST_RETRIES)
    assert (raw / "Dongyang/D1/D1.nrrd").read_bytes() == b"img"
    assert (raw / "Rider/R1/R1.nrrd").read_bytes() == b"img"
    assert (raw / "notes.txt").read_bytes() == notes
    by_name = {f.name: f for f in manifest.files}
    assert by_name["Dongyang.zip"].source_licence == "CC BY 4.0"
    assert any(
        "figshare article 14806362" in v for v in by_name["rider-by-id.zip"].verified_against
    )
    assert by_name["notes.txt"].kind == "http"
    placed = {e.name: e for e in manifest.extracted}
    assert placed["notes.txt"].is_archive is False


def test_google_drive_confirm_flow_with_a_dropped_connection(source_server, tmp_path, zip_builder):
    file_id = "1DbZfTj4it-3QRTuJO73r1iQyHLRwPS6H"
    archive = zip_builder(
        "test_dataset.zip",
        {"LDCTIQAC_test/test.json": b"{}", "LDCTIQAC_test/images/0.tiff": bytes(range(256)) * 400},
    )
    half = len(archive) // 2
    confirmed = serve_gdrive(source_server, file_id, archive, drop_after_bytes=half)
    task = make_task(
        [
            SourceSpec(
                kind="gdrive",
                files=[SourceFile(name="test_dataset.zip", url=file_id, checksum=sha256(archive))],
            )
        ]
    )
    raw = tmp_path / "ldct" / "raw"
    manifest = fetch_task_raw(task, raw, progress=False, retry_policy=FAST_RETRIES)
    assert (raw / "LDCTIQAC_test/test.json").read_bytes() == b"{}"
    assert source_server.hits_on("/uc")[0].query == {"export": "download", "id": file_id}
    downloads = source_server.hits_on("/download")
    # redirect target (warning page), then the confirmed URL: cut halfway, resumed with Range
    assert [(h.query, h.range) for h in downloads] == [
        ({"id": file_id, "export": "download"}, None),
        (confirmed, None),
        (confirmed, f"bytes={half}-"),
    ]
    assert manifest.files[0].outcome == "resumed"
    assert "confirm=t" in manifest.files[0].source_url


def test_google_drive_page_without_link_is_a_clear_error(source_server, tmp_path):
    quota = b"<html><body><p>Too many users have viewed or downloaded this file.</p></body></html>"
    source_server.add("/uc", Route(body=quota, content_type="text/html"))
    task = make_task(
        [
            SourceSpec(
                kind="gdrive",
                files=[SourceFile(name="x.zip", url="1RrM8YIwAENxzONSEaVZCzDkiiPMSmDxH")],
            )
        ]
    )
    with pytest.raises(DownloadError, match="Too many users") as err:
        fetch_task_raw(task, tmp_path / "t" / "raw", progress=False, retry_policy=FAST_RETRIES)
    assert "google drive file 1RrM8YIwAENxzONSEaVZCzDkiiPMSmDxH" in str(err.value)


def test_at_most_max_parallel_downloads_run_at_once(source_server, tmp_path, zip_builder):
    files = {f"p{i}.zip": zip_builder(f"p{i}.zip", {f"p{i}/x": b"x"}) for i in range(4)}
    serve_zenodo(source_server, RECORD, files, **{name: {"delay_s": 0.15} for name in files})
    task = make_task([zenodo_source(*(SourceFile(name=n) for n in files))])
    paths = download_task_files(
        task, tmp_path / "dl", max_parallel=2, progress=False, retry_policy=FAST_RETRIES
    )
    assert [p.name for p in paths] == list(files)
    assert source_server.max_active == 2


def test_progress_bars_do_not_break_the_fetch(source_server, tmp_path, zip_builder):
    archive = zip_builder("a.zip", {"a.txt": b"a" * 10_000})
    serve_zenodo(source_server, RECORD, {"a.zip": archive})
    task = make_task([zenodo_source(SourceFile(name="a.zip"))])
    manifest = fetch_task_raw(
        task, tmp_path / "t" / "raw", progress=True, retry_policy=FAST_RETRIES
    )
    assert manifest.complete


@pytest.mark.usefixtures("offline")
def test_from_dir_works_with_no_server(tmp_path, zip_builder):
    archive = zip_builder("images.zip", {"top/a.txt": b"a"})
    shared = tmp_path / "cluster-share"
    shared.mkdir()
    (shared / "images.zip").write_bytes(archive)
    task = make_task(
        [
            zenodo_source(
                SourceFile(name="images.zip", checksum=md5(archive), size_bytes=len(archive))
            )
        ]
    )
    raw = tmp_path / "data" / "demo-task" / "raw"
    manifest = fetch_task_raw(task, raw, from_dir=shared, progress=False, retry_policy=FAST_RETRIES)
    assert (raw / "top/a.txt").read_bytes() == b"a"
    assert manifest.files[0].outcome == "from_dir"
    assert manifest.files[0].path == str((shared / "images.zip").resolve())
    assert (shared / "images.zip").exists()
    assert not (tmp_path / "data" / "demo-task" / "downloads").exists()


@pytest.mark.usefixtures("offline")
def test_from_dir_refuses_a_wrong_or_missing_or_unpinned_file(tmp_path, zip_builder):
    archive = zip_builder("images.zip", {"top/a.txt": b"a"})
    shared = tmp_path / "share"
    shared.mkdir()
    (shared / "images.zip").write_bytes(archive + b"tail")
    pinned = make_task([zenodo_source(SourceFile(name="images.zip", checksum=md5(archive)))])
    with pytest.raises(ChecksumMismatchError, match=f"expected {md5(archive)}"):
        fetch_task_raw(pinned, tmp_path / "a" / "raw", from_dir=shared, progress=False)
    # a mismatch in a shared folder is reported, never deleted: it is not ours
    assert (shared / "images.zip").exists()

    sized = make_task([zenodo_source(SourceFile(name="images.zip", size_bytes=len(archive)))])
    with pytest.raises(DownloadError, match="pins no checksum"):
        fetch_task_raw(sized, tmp_path / "b" / "raw", from_dir=shared, progress=False)
    with pytest.raises(ChecksumMismatchError, match=f"expected {len(archive)} bytes"):
        fetch_task_raw(
            sized, tmp_path / "b" / "raw", from_dir=shared, progress=False, allow_unpinned=True
        )

    missing = make_task([zenodo_source(SourceFile(name="absent.zip", checksum=md5(b"")))])
    with pytest.raises(DownloadError, match="not found in from_dir"):
        fetch_task_raw(missing, tmp_path / "c" / "raw", from_dir=shared, progress=False)


@pytest.mark.usefixtures("offline")
def test_from_dir_finds_another_data_dirs_downloads(tmp_path, zip_builder):
    archive = zip_builder("a.zip", {"a.txt": b"a"})
    other = tmp_path / "other-data"
    (other / "fam-shared" / "downloads").mkdir(parents=True)
    (other / "fam-shared" / "downloads" / "a.zip").write_bytes(archive)
    task = make_task(
        [zenodo_source(SourceFile(name="a.zip", checksum=sha256(archive)))], shared_raw="fam-shared"
    )
    paths = download_task_files(task, tmp_path / "unused", from_dir=other, progress=False)
    assert paths == [(other / "fam-shared" / "downloads" / "a.zip").resolve()]


def test_several_failures_are_reported_together(source_server, tmp_path, zip_builder):
    a = zip_builder("a.zip", {"a": b"a"})
    b = zip_builder("b.zip", {"b": b"b"})
    serve_zenodo(
        source_server,
        RECORD,
        {"a.zip": a, "b.zip": b},
        **{"a.zip": {"statuses": [404]}, "b.zip": {"statuses": [403]}},
    )
    task = make_task([zenodo_source(SourceFile(name="a.zip"), SourceFile(name="b.zip"))])
    with pytest.raises(DownloadError, match="2 of 2 files") as err:
        download_task_files(task, tmp_path / "dl", progress=False, retry_policy=FAST_RETRIES)
    assert "'a.zip'" in str(err.value)
    assert "'b.zip'" in str(err.value)
    assert Path(tmp_path / "dl").is_dir()


def test_zenodo_record_without_inline_files_is_listed_through_files_endpoint(
    source_server, tmp_path, zip_builder
):
    archive = zip_builder("a.zip", {"a.txt": b"a"})
    path = f"/api/records/{RECORD}/files/a.zip/content"
    source_server.add(path, Route(body=archive))
    source_server.add_json(f"/api/records/{RECORD}", json.dumps({"files": {"enabled": True}}))
    listing = {
        "entries": [
            {
                "key": "a.zip",
                "size": len(archive),
                "checksum": md5(archive),
                "links": {"content": f"{source_server.url}{path}"},
            }
        ]
    }
    source_server.add_json(f"/api/records/{RECORD}/files", json.dumps(listing))
    task = make_task([zenodo_source(SourceFile(name="a.zip"))])
    manifest = fetch_task_raw(
        task, tmp_path / "t" / "raw", progress=False, retry_policy=FAST_RETRIES
    )
    assert manifest.files[0].checksums["md5"] == md5(archive).removeprefix("md5:")


def test_raw_problems_before_and_after_a_fetch(source_server, tmp_path, zip_builder):
    from rexmle.sources import raw_problems, task_raw_dir

    archive = zip_builder("a.zip", {"a.txt": b"a"})
    serve_zenodo(source_server, RECORD, {"a.zip": archive})
    task = make_task([zenodo_source(SourceFile(name="a.zip"))], shared_raw="fam-shared")
    raw = task_raw_dir(task, tmp_path)
    assert raw == tmp_path / "fam-shared" / "raw"
    assert raw_problems(task, raw) == [f"no readable .rexmle-sources.json in {raw}"]
    fetch_task_raw(task, raw, progress=False, retry_policy=FAST_RETRIES)
    assert raw_problems(task, raw) == []
    pinned_elsewhere = make_task(
        [zenodo_source(SourceFile(name="a.zip", checksum=md5(b"other")))], shared_raw="fam-shared"
    )
    assert raw_problems(pinned_elsewhere, raw) == [
        f"a.zip: verified bytes do not have {md5(b'other')}"
    ]
