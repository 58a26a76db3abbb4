"""Download -> verify -> extract -> prepare through the real task code, against a local server.

The mini fixtures are packed into archives named and laid out as the real sources, served by the
test server as a Zenodo record, a Google Drive confirm flow or Figshare files; ``prepare_task``
then runs exactly as for the real data (only the real case counts and the third parties'
published checksums, which describe the real files, are not expected).
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path

import pytest
from source_server import Route, prepare_copy, serve_gdrive, serve_zenodo

from rexmle.grading import grade_submission
from rexmle.tasks.registry import get_task, load_task


def _zip_folders(root: Path, folders: list[str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for folder in folders:
            for path in sorted((root / folder).rglob("*")):
                archive.write(path, path.relative_to(root).as_posix())
    return buffer.getvalue()


def _zip_contents(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            archive.write(path, path.relative_to(folder).as_posix())
    return buffer.getvalue()


def _fixture(task_id: str, tmp_path: Path) -> Path:
    root = tmp_path / "fixture"
    root.mkdir()
    load_task(task_id).make_fixture(root, seed=0)
    return root


def _serve(server, task_id: str, archives: dict[str, bytes]) -> None:
    for source in get_task(task_id).sources:
        files = {f.name: archives[f.name] for f in source.files}
        if source.kind == "zenodo":
            serve_zenodo(server, source.record, files)
        elif source.kind == "gdrive":
            for spec_file in source.files:
                serve_gdrive(server, spec_file.url, files[spec_file.name])
        elif source.kind == "figshare":
            _serve_figshare(server, source, files)
        else:
            pytest.fail(f"no test route for {source.kind}")


def _serve_figshare(server, source, files: dict[str, bytes]) -> None:
    entries = []
    for spec_file in source.files:
        body = files[spec_file.name]
        path = f"/ndownloader/files/{spec_file.url}"
        server.add(path, Route(body=body))
        entries.append(
            {
                "id": int(spec_file.url),
                "name": spec_file.name,
                "size": len(body),
                "computed_md5": hashlib.md5(body).hexdigest(),
                "download_url": f"{server.url}{path}",
            }
        )
    article = {"id": int(source.record), "license": {"name": "CC BY 4.0"}, "files": entries}
    server.add_json(f"/v2/articles/{source.record}/versions/{source.version}", json.dumps(article))


def _prepare_and_grade_gold(task_id: str, data_dir: Path) -> None:
    dirs, did_work = prepare_copy(task_id, data_dir)
    assert did_work
    report = grade_submission(task_id, dirs.gold, data_dir=data_dir, workers=1)
    assert report.valid
    assert report.ranking.percentile == 1.0
    manifest = (dirs.raw / ".rexmle-sources.json").read_text()
    assert '"complete": true' in manifest


def test_zenodo_record_to_prepared_isles22(source_server, tmp_path) -> None:
    root = _fixture("isles22", tmp_path)
    _serve(source_server, "isles22", {"ISLES-2022.zip": _zip_folders(root, ["ISLES-2022"])})
    _prepare_and_grade_gold("isles22", tmp_path / "data")


def test_zenodo_and_drive_confirm_flow_to_prepared_ldct_iqa(source_server, tmp_path) -> None:
    root = _fixture("ldct-iqa", tmp_path)
    archives = {
        "LDCTIQAG2023_train.zip": _zip_folders(root, ["LDCTIQAG2023_train"]),
        "test_dataset.zip": _zip_folders(root, ["LDCTIQAC_test"]),
    }
    _serve(source_server, "ldct-iqa", archives)
    _prepare_and_grade_gold("ldct-iqa", tmp_path / "data")
    assert source_server.hits_on("/uc"), "the Google Drive file was not fetched via /uc"


def test_figshare_files_to_prepared_seg_a(source_server, tmp_path) -> None:
    root = _fixture("seg_a", tmp_path)
    archives = {f"{name}.zip": _zip_contents(root / name) for name in ("Dongyang", "KiTS", "Rider")}
    _serve(source_server, "seg_a", archives)
    _prepare_and_grade_gold("seg_a", tmp_path / "data")


def test_multi_file_zenodo_record_shared_by_two_panther_tasks(source_server, tmp_path) -> None:
    root = _fixture("panther-task1", tmp_path)
    archives = {f"{n}.zip": _zip_contents(root / n) for n in ("PANTHER_Task1", "PANTHER_Task2")}
    _serve(source_server, "panther-task1", archives)
    _prepare_and_grade_gold("panther-task1", tmp_path / "data")
    _prepare_and_grade_gold("panther-task2", tmp_path / "data")
    downloads = [h for h in source_server.hits if h.path.endswith("/content")]
    assert len(downloads) == 2, "the shared record must be downloaded once for both tasks"


def test_drive_with_dropped_connection_to_prepared_usenhance(source_server, tmp_path) -> None:
    root = _fixture("usenhance", tmp_path)
    body = _zip_folders(root, ["train_datasets"])
    file_id = get_task("usenhance").sources[0].files[0].url
    serve_gdrive(source_server, file_id, body, drop_after_bytes=len(body) // 2)
    _prepare_and_grade_gold("usenhance", tmp_path / "data")
    ranges = [h.range for h in source_server.hits_on("/download") if h.range]
    assert ranges, "the interrupted download was not resumed with a Range request"


@pytest.mark.usefixtures("offline")
def test_prepare_from_a_local_folder_never_goes_online(tmp_path) -> None:
    root = _fixture("isles22", tmp_path)
    shared = tmp_path / "shared-disk"
    shared.mkdir()
    (shared / "ISLES-2022.zip").write_bytes(_zip_folders(root, ["ISLES-2022"]))
    dirs, _ = prepare_copy("isles22", tmp_path / "data", from_dir=shared)
    assert (dirs.public / "sample_submission.csv").is_file()
    assert (shared / "ISLES-2022.zip").is_file()
