"""ML-Master's validation protocol: multipart CSV to POST /validate, GET /health, answered by the
validation server (format only) directly and through the adapter's forwarder (which adds the
files the CSV names).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from rexmle.agents.adapters import adapter_runtime as runtime
from rexmle.agents.adapters import ml_master
from rexmle.agents.dummy import copy_sample_submission
from rexmle.runner.validation_server import ValidationServer

SCORE_WORDS = ("dice", "f1", "volume_diff", "score", "percentile", "medal")


@pytest.fixture
def server(prepared_mini, mini_data_dir):
    prepared_mini("isles22")
    with ValidationServer("isles22", data_dir=mini_data_dir, max_requests_per_minute=1000) as live:
        yield live


def post_multipart(url: str, csv_bytes: bytes, files: dict[str, bytes] | None = None):
    body, content_type = ml_master.multipart_body(csv_bytes, files or {})
    request = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": content_type, "exp-id": "isles22"}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_multipart_csv_with_its_files_is_valid_and_without_them_invalid(
    server, prepared_mini, tmp_path: Path
):
    sample = tmp_path / "sample"
    copy_sample_submission(prepared_mini("isles22").public, sample)
    csv_bytes = (sample / "submission.csv").read_bytes()
    files = {
        p.relative_to(sample).as_posix(): p.read_bytes()
        for p in sample.rglob("*")
        if p.is_file() and p.name != "submission.csv"
    }
    assert files  # isles22 names one mask file per test case
    status, answer = post_multipart(server.url, csv_bytes, files)
    assert status == 200
    assert answer["is_valid"] is True
    assert answer["result"] == "valid"
    status, alone = post_multipart(server.url, csv_bytes)
    assert status == 200
    assert alone["is_valid"] is False
    missing = next(iter(files))
    assert missing in alone["result"]  # the reasons name the files that were not sent
    for word in SCORE_WORDS:
        assert word not in json.dumps(answer).lower()
    body, content_type = b"--x\r\n\r\n--x--\r\n", "multipart/form-data; boundary=x"
    request = urllib.request.Request(
        server.url, data=body, method="POST", headers={"Content-Type": content_type}
    )
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(request, timeout=60)
    assert error.value.code == 400
    assert "no 'file' part" in json.loads(error.value.read())["details"]


def test_forwarder_adds_the_named_files_from_ml_masters_submission_folder(
    server, prepared_mini, tmp_path: Path
):
    work = tmp_path / "agent"
    folder = work / "workspaces" / "rexmle" / "submission"
    copy_sample_submission(prepared_mini("isles22").public, folder)
    node_csv = folder / "submission_node7.csv"
    (folder / "submission.csv").rename(node_csv)
    config = {
        "validation_url": server.url,
        "work_dir": str(work),
        "forwarder_port": runtime.free_port(),
    }
    forwarder = ml_master.ValidationForwarder(config)
    forwarder.start()
    base = f"http://127.0.0.1:{config['forwarder_port']}"
    with urllib.request.urlopen(f"{base}/health", timeout=30) as response:
        assert response.status == 200
    # exactly what ML-Master sends: the node's CSV alone
    status, answer = post_multipart(f"{base}/validate", node_csv.read_bytes())
    assert status == 200
    assert answer["is_valid"] is True
    broken = b"\n".join(node_csv.read_bytes().splitlines()[:-1]) + b"\n"
    status, answer = post_multipart(f"{base}/validate", broken)
    assert status == 200
    assert answer["is_valid"] is False
    assert answer["result"]
    forwarder.server.shutdown()
