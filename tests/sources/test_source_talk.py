"""Downloads say what they do: each retry with its cause and the next wait, a host name that does
not resolve ends in seconds, and Ctrl-C stops a download at once (against the local server).
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import time

import pytest
from source_server import FAST_RETRIES, Route, serve_zenodo

from rexmle.sources.errors import DownloadError
from rexmle.sources.http import RetryPolicy, get_json, stream_to_part
from rexmle.sources.remote import ZENODO_URL_ENV
from rexmle.tasks.registry import get_task


def test_each_retry_is_logged_with_its_cause_and_the_next_wait(source_server, tmp_path, caplog):
    source_server.add("/f.bin", Route(body=b"x" * 100, statuses=[503, 502]))
    with caplog.at_level(logging.WARNING, logger="rexmle.sources.http"):
        result = stream_to_part(
            f"{source_server.url}/f.bin",
            tmp_path / "f.bin.part",
            algorithms=("sha256",),
            policy=FAST_RETRIES,
            context="demo file",
            sleep=lambda _s: None,
        )
    assert result.size_bytes == 100
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2
    assert lines[0].startswith("attempt 1 of 4 failed: demo file: ")
    assert "HTTP 503" in lines[0]
    assert "retrying in 0.0 s" in lines[0]  # FAST_RETRIES waits 0.01 s first
    assert "attempt 2 of 4 failed" in lines[1]
    assert "HTTP 502" in lines[1]


@pytest.mark.usefixtures("offline")
def test_a_host_name_that_does_not_resolve_fails_in_seconds(monkeypatch, caplog):
    def no_dns(*_args: object, **_kwargs: object) -> list[object]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    started = time.monotonic()
    with (
        caplog.at_level(logging.WARNING, logger="rexmle.sources.http"),
        pytest.raises(DownloadError) as caught,
    ):
        get_json("http://zenodo.example/api/records/1", policy=RetryPolicy(), context="record 1")
    elapsed = time.monotonic() - started
    message = str(caught.value)
    assert "gave up after 2 attempts" in message
    assert "cannot resolve the host name 'zenodo.example'" in message
    assert "offline" in message
    assert elapsed < 5.0  # one 2 s wait instead of 8 attempts over ~4 minutes
    (retry,) = [r.getMessage() for r in caplog.records]
    assert "attempt 1 of 2 failed" in retry
    assert "retrying in 2.0 s" in retry


def test_ctrl_c_stops_a_download_in_its_retry_wait_at_once(source_server, tmp_path):
    task = get_task("isles22")
    (source,) = task.sources
    (spec_file,) = source.files
    serve_zenodo(
        source_server,
        str(source.record),
        {spec_file.name: b"never served"},
        **{spec_file.name: {"statuses": [503] * 20}},
    )
    env = {**os.environ, ZENODO_URL_ENV: source_server.url, "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "-m", "rexmle.cli", "download", task.id, "--data-dir", "data"]
    process = subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        seen = []
        assert process.stderr is not None
        for line in process.stderr:  # the default policy waits 2, 4, then 8 s
            seen.append(line)
            if "attempt 3 of 8 failed" in line:
                break
        assert "HTTP 503" in seen[-1]
        assert "retrying in 8.0 s" in seen[-1]
        interrupted = time.monotonic()
        process.send_signal(signal.SIGINT)
        _, rest = process.communicate(timeout=30)
        elapsed = time.monotonic() - interrupted
    finally:
        if process.poll() is None:
            process.kill()
    assert elapsed < 3.0, elapsed
    assert process.returncode == 130
    assert "interrupted" in rest
    assert "resume on the next run" in rest
    assert list((tmp_path / "data" / "isles22" / "downloads").glob("*")) == []
