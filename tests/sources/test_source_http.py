import hashlib
import time
from datetime import UTC, datetime

import pytest
from source_server import FAST_RETRIES, Route

from rexmle.sources.errors import DownloadError, HttpStatusError
from rexmle.sources.http import (
    RetryableError,
    RetryPolicy,
    call_with_retries,
    get_json,
    parse_retry_after,
    stream_to_part,
)

BODY = bytes(range(256)) * 4096  # 1 MiB


def _stream(url, part, **kwargs):
    return stream_to_part(
        url,
        part,
        algorithms=("md5", "sha256"),
        policy=kwargs.pop("policy", FAST_RETRIES),
        context="task 't', file 'f'",
        **kwargs,
    )


def test_retry_after_seconds_and_http_date():
    assert parse_retry_after("7") == 7.0
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    # 30 s after `now`
    assert parse_retry_after("Thu, 01 Jan 2026 12:00:30 GMT", now=now) == 30.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None


def test_backoff_doubles_and_caps():
    policy = RetryPolicy(backoff_initial_s=1.0, backoff_factor=2.0, backoff_max_s=5.0)
    # 1, 2, 4, then capped at 5
    assert [policy.backoff_s(n) for n in (1, 2, 3, 4, 5)] == [1.0, 2.0, 4.0, 5.0, 5.0]


def test_retries_stop_after_max_attempts():
    calls = []
    sleeps = []

    def always_fails():
        calls.append(1)
        raise RetryableError("boom")

    policy = RetryPolicy(max_attempts=3, backoff_initial_s=0.5, max_total_wait_s=100)
    with pytest.raises(DownloadError, match="gave up after 3 attempts"):
        call_with_retries(always_fails, policy=policy, sleep=sleeps.append)
    # 3 attempts, waits 0.5 and 1.0 between them
    assert len(calls) == 3
    assert sleeps == [0.5, 1.0]


def test_retries_stop_when_the_wait_budget_would_be_exceeded():
    sleeps = []

    def always_fails():
        raise RetryableError("boom")

    policy = RetryPolicy(max_attempts=100, backoff_initial_s=1.0, max_total_wait_s=5.0)
    with pytest.raises(DownloadError, match=r"retry budget of 5\.0 s"):
        call_with_retries(always_fails, policy=policy, sleep=sleeps.append)
    # waits 1 + 2 = 3 s; the next (4 s) would make 7 > 5
    assert sleeps == [1.0, 2.0]


def test_retry_after_within_bound_is_waited(source_server):
    source_server.add("/j", Route(body=b"[1]", statuses=[429, 503], retry_after="1"))
    sleeps = []
    policy = RetryPolicy(max_attempts=5, max_total_wait_s=10.0, timeout_s=5)
    assert get_json(f"{source_server.url}/j", policy=policy, context="c", sleep=sleeps.append) == [
        1
    ]
    # two transient answers, each asking for 1 s
    assert sleeps == [1.0, 1.0]


def test_retry_after_beyond_the_budget_fails_at_once(source_server):
    source_server.add("/j", Route(body=b"[1]", statuses=[429], retry_after="3600"))
    sleeps = []
    start = time.monotonic()
    with pytest.raises(DownloadError, match=r"Retry-After.*exceed"):
        get_json(f"{source_server.url}/j", policy=FAST_RETRIES, context="c", sleep=sleeps.append)
    assert sleeps == []
    assert time.monotonic() - start < 5


def test_persistent_503_gives_up_within_count_and_time(source_server, tmp_path):
    source_server.add("/f", Route(body=BODY, statuses=[503] * 50))
    start = time.monotonic()
    with pytest.raises(DownloadError, match="gave up after 4 attempts") as err:
        _stream(f"{source_server.url}/f", tmp_path / "f.part")
    assert "HTTP 503" in str(err.value)
    assert len(source_server.hits_on("/f")) == FAST_RETRIES.max_attempts
    assert time.monotonic() - start < 5


def test_connection_refused_is_retried_then_fails(tmp_path):
    sleeps = []
    with pytest.raises(DownloadError, match="cannot reach"):
        _stream("http://127.0.0.1:9/x", tmp_path / "x.part", sleep=sleeps.append)
    # 4 attempts, 3 waits: 0.01, 0.02, 0.04
    assert sleeps == pytest.approx([0.01, 0.02, 0.04])


@pytest.mark.parametrize("status", [403, 404, 410])
def test_fatal_statuses_are_not_retried(source_server, tmp_path, status):
    source_server.add("/f", Route(statuses=[status] * 5))
    with pytest.raises(HttpStatusError) as err:
        _stream(f"{source_server.url}/f", tmp_path / "f.part")
    assert err.value.status == status
    assert "task 't', file 'f'" in str(err.value)
    assert f"HTTP {status}" in str(err.value)
    assert len(source_server.hits_on("/f")) == 1


def test_dropped_connection_resumes_with_range(source_server, tmp_path):
    half = len(BODY) // 2
    source_server.add("/f", Route(body=BODY, drop_after_bytes=half))
    part = tmp_path / "f.part"
    sleeps = []
    result = _stream(f"{source_server.url}/f", part, sleep=sleeps.append)
    hits = source_server.hits_on("/f")
    assert [h.range for h in hits] == [None, f"bytes={half}-"]
    assert part.read_bytes() == BODY
    assert result.resumed
    assert result.size_bytes == len(BODY)
    assert result.digests["sha256"] == hashlib.sha256(BODY).hexdigest()
    assert len(sleeps) == 1


def test_existing_part_is_continued(source_server, tmp_path):
    source_server.add("/f", Route(body=BODY))
    part = tmp_path / "f.part"
    part.write_bytes(BODY[:1000])
    result = _stream(f"{source_server.url}/f", part)
    assert source_server.hits_on("/f")[0].range == "bytes=1000-"
    assert part.read_bytes() == BODY
    assert result.digests["md5"] == hashlib.md5(BODY).hexdigest()


def test_server_ignoring_range_restarts_from_zero(source_server, tmp_path):
    source_server.add("/f", Route(body=BODY, supports_range=False))
    part = tmp_path / "f.part"
    part.write_bytes(b"garbage that must not stay in front")
    result = _stream(f"{source_server.url}/f", part)
    assert part.read_bytes() == BODY
    assert not result.resumed


def test_complete_part_answered_416_is_handed_to_verification(source_server, tmp_path):
    source_server.add("/f", Route(body=BODY))
    part = tmp_path / "f.part"
    part.write_bytes(BODY)
    result = _stream(f"{source_server.url}/f", part)
    assert result.size_bytes == len(BODY)
    assert result.digests["sha256"] == hashlib.sha256(BODY).hexdigest()


def test_html_page_is_refused_when_a_file_is_expected(source_server, tmp_path):
    source_server.add(
        "/f",
        Route(body=b"<html><body>Quota exceeded</body></html>", content_type="text/html"),
    )
    with pytest.raises(DownloadError, match="Quota exceeded"):
        _stream(f"{source_server.url}/f", tmp_path / "f.part", reject_html=True)


def test_get_json_rejects_non_json(source_server):
    source_server.add("/j", Route(body=b"<html>", content_type="text/html"))
    with pytest.raises(DownloadError, match="did not return JSON"):
        get_json(f"{source_server.url}/j", policy=FAST_RETRIES, context="c")
