"""HTTP with the standard library: bounded retries, JSON requests, resumable streaming.

A download streams into a ``.part`` file; an interrupted transfer resumes with an HTTP
``Range`` request on the next attempt. Retries cover connection errors, truncated bodies,
429 and 5xx, with exponential backoff bounded in attempt count and in total waiting time;
403, 404, 410 and other client errors end the download at once.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import logging
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from http.cookiejar import CookieJar
from pathlib import Path
from typing import Any, TypeVar

from rexmle import __version__
from rexmle.sources.checksums import MultiHasher
from rexmle.sources.errors import DownloadError, HttpStatusError

log = logging.getLogger(__name__)

USER_AGENT = f"rexmle/{__version__} (python-urllib)"
CHUNK_BYTES = 1 << 20
MAX_PAGE_BYTES = 4 << 20
"""Largest HTML/JSON body read into memory."""

T = TypeVar("T")
ProgressCallback = Callable[[int, int | None], None]
"""Called with (bytes of the file on disk so far, total bytes or None when unknown)."""

_FATAL_HINTS = {
    401: "the source requires a login; rexmle only fetches openly downloadable files",
    403: "access is forbidden: the file may be restricted, or the source rate-limits this host",
    404: "not found: the record, version or file name in the task YAML may be wrong or removed",
    410: "gone: the source removed this file or record",
}


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry transient failures.

    The loop stops at ``max_attempts`` attempts or when the next wait would take the
    summed waiting time over ``max_total_wait_s``, whichever comes first. Each attempt is
    itself bounded by ``timeout_s`` per socket operation, so a dead connection cannot
    hang forever.
    """

    max_attempts: int = 8
    """Attempts in total (the first one included)."""
    backoff_initial_s: float = 2.0
    """Wait after the first failure; doubles (``backoff_factor``) after each further one."""
    backoff_factor: float = 2.0
    backoff_max_s: float = 120.0
    """Cap for a single backoff wait."""
    max_total_wait_s: float = 900.0
    """Cap for the sum of all waits, ``Retry-After`` included."""
    timeout_s: float = 60.0
    """Socket timeout per connect/read."""
    max_dns_attempts: int = 2
    """Attempts in total when the host name cannot be resolved (no network, no DNS): such a
    failure rarely heals within minutes, so it ends after one short wait instead of the full
    backoff."""

    def backoff_s(self, failures: int) -> float:
        """Exponential wait after ``failures`` consecutive failures (1-based)."""
        raw = self.backoff_initial_s * self.backoff_factor ** max(failures - 1, 0)
        return min(raw, self.backoff_max_s)


class RetryableError(Exception):
    """A transient failure: the caller may try again (after ``retry_after_s`` if given)."""

    def __init__(self, message: str, *, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class NameResolutionError(RetryableError):
    """The host name did not resolve: retried only ``RetryPolicy.max_dns_attempts`` times."""


def make_opener() -> urllib.request.OpenerDirector:
    """An opener that follows redirects and keeps cookies (Google Drive's confirm flow)."""
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))
    opener.addheaders = [("User-Agent", USER_AGENT)]
    return opener


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    now = now or datetime.now(UTC)
    return max((when - now).total_seconds(), 0.0)


def open_url(
    url: str,
    *,
    context: str,
    timeout_s: float,
    headers: dict[str, str] | None = None,
    opener: urllib.request.OpenerDirector | None = None,
) -> http.client.HTTPResponse:
    """Open ``url`` once and classify failures.

    Args:
        url: the address to GET.
        context: what is being fetched (task, record, file), prefixed to every message.
        timeout_s: socket timeout.
        headers: extra request headers (e.g. ``Range``).
        opener: opener to use; a fresh one from `make_opener` when None.

    Returns:
        The open response (status 2xx); the caller closes it.

    Raises:
        RetryableError: connection failure, timeout, 429 or 5xx.
        HttpStatusError: any other 4xx (403, 404 and 410 with a hint at the likely cause).
    """
    opener = opener or make_opener()
    request = urllib.request.Request(url, headers=headers or {})
    try:
        return opener.open(request, timeout=timeout_s)
    except urllib.error.HTTPError as err:
        status = err.code
        retry_after = parse_retry_after(err.headers.get("Retry-After") if err.headers else None)
        err.close()
        if status == 429 or 500 <= status < 600:
            msg = f"{context}: {url} answered HTTP {status} {err.reason}"
            raise RetryableError(msg, retry_after_s=retry_after) from err
        hint = _FATAL_HINTS.get(status, "the request was refused")
        msg = f"{context}: {url} answered HTTP {status} {err.reason} ({hint})"
        raise HttpStatusError(msg, status=status, url=url) from err
    except (urllib.error.URLError, OSError, http.client.HTTPException) as err:
        reason = err.reason if isinstance(err, urllib.error.URLError) else err
        if isinstance(reason, socket.gaierror):
            host = urllib.parse.urlsplit(url).hostname
            msg = (
                f"{context}: cannot resolve the host name {host!r} of {url} ({reason}); "
                "is this machine offline, or its DNS not working?"
            )
            raise NameResolutionError(msg) from err
        msg = f"{context}: cannot reach {url}: {err}"
        raise RetryableError(msg) from err


def call_with_retries(
    attempt: Callable[[], T],
    *,
    policy: RetryPolicy,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run ``attempt`` until it succeeds, retrying `RetryableError` within ``policy``.

    Each retry is logged (warning) with its cause, the attempt count and the wait before it.
    A host name that does not resolve is retried ``policy.max_dns_attempts`` times in all.

    Raises:
        DownloadError: attempts or waiting budget exhausted; the message gives the count,
            the time waited and the last error.
    """
    failures = 0
    waited_s = 0.0
    while True:
        try:
            return attempt()
        except RetryableError as err:
            failures += 1
            limit = (
                min(policy.max_dns_attempts, policy.max_attempts)
                if isinstance(err, NameResolutionError)
                else policy.max_attempts
            )
            if failures >= limit:
                msg = (
                    f"gave up after {failures} attempts ({waited_s:.1f} s spent waiting "
                    f"between them); last error: {err}"
                )
                raise DownloadError(msg) from err
            if err.retry_after_s is not None:
                delay_s = err.retry_after_s
                reason = f"the server asked to wait {delay_s:.1f} s (Retry-After)"
            else:
                delay_s = policy.backoff_s(failures)
                reason = f"backoff {delay_s:.1f} s"
            if waited_s + delay_s > policy.max_total_wait_s:
                msg = (
                    f"gave up after {failures} attempts: {reason}, which would exceed the "
                    f"retry budget of {policy.max_total_wait_s:.1f} s ({waited_s:.1f} s "
                    f"already spent); last error: {err}"
                )
                raise DownloadError(msg) from err
            log.warning(
                "attempt %d of %d failed: %s; retrying in %.1f s%s",
                failures,
                limit,
                err,
                delay_s,
                " (the server's Retry-After)" if err.retry_after_s is not None else "",
            )
            sleep(delay_s)
            waited_s += delay_s


def get_json(
    url: str,
    *,
    policy: RetryPolicy,
    context: str,
    opener: urllib.request.OpenerDirector | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Any:
    """GET a JSON document with retries.

    Raises:
        DownloadError: unreachable after retries, a fatal status, or a body that is not JSON.
    """

    def attempt() -> bytes:
        with open_url(url, context=context, timeout_s=policy.timeout_s, opener=opener) as resp:
            try:
                return resp.read(MAX_PAGE_BYTES)
            except (OSError, http.client.HTTPException) as err:
                msg = f"{context}: reading {url} failed: {err}"
                raise RetryableError(msg) from err

    body = call_with_retries(attempt, policy=policy, sleep=sleep)
    try:
        return json.loads(body)
    except json.JSONDecodeError as err:
        msg = f"{context}: {url} did not return JSON ({err}); first bytes: {body[:120]!r}"
        raise DownloadError(msg) from err


@dataclass(frozen=True)
class StreamResult:
    """What `stream_to_part` wrote."""

    size_bytes: int
    digests: dict[str, str]
    """Hex digest per algorithm of the whole file (resumed bytes included)."""
    resumed: bool
    """Whether some attempt continued a partial file with a Range request."""


_CONTENT_RANGE = re.compile(r"bytes\s+(\d+)-(\d+)/(\d+|\*)")


def stream_to_part(
    url: str,
    part_path: Path,
    *,
    algorithms: tuple[str, ...],
    policy: RetryPolicy,
    context: str,
    opener: urllib.request.OpenerDirector | None = None,
    on_progress: ProgressCallback | None = None,
    reject_html: bool = False,
    sleep: Callable[[float], None] = time.sleep,
) -> StreamResult:
    """Download ``url`` into ``part_path``, resuming what is already there.

    A non-empty ``part_path`` is continued with ``Range: bytes=<size>-``; a server that
    ignores the range (status 200) restarts the file from byte 0. A body shorter than its
    ``Content-Length`` counts as a transient failure and the next attempt resumes.

    Args:
        url: the file's download address.
        part_path: partial file; created or appended to, never renamed here.
        algorithms: hash algorithms to compute over the whole file.
        policy: retry bounds.
        context: task, record and file, for messages.
        opener: opener (cookies) to reuse.
        on_progress: called with (bytes on disk, total or None) as data arrives.
        reject_html: fail when the server sends an HTML page (Google Drive error pages).
        sleep: waiting function (tests pass a no-op).

    Raises:
        DownloadError: a fatal status, an HTML page where a file was expected, or retries
            exhausted.
    """
    state = {"resumed": False}

    def attempt() -> StreamResult:
        existing = part_path.stat().st_size if part_path.exists() else 0
        headers = {"Range": f"bytes={existing}-"} if existing else {}
        try:
            resp = open_url(
                url, context=context, timeout_s=policy.timeout_s, headers=headers, opener=opener
            )
        except HttpStatusError as err:
            if err.status == 416 and existing:
                # The part already holds every byte the server has: let verification decide.
                digests = _digests_of(part_path, algorithms)
                return StreamResult(existing, digests, resumed=True)
            raise
        with resp:
            return _receive(resp, existing)

    def _receive(resp: http.client.HTTPResponse, existing: int) -> StreamResult:
        hasher = MultiHasher(algorithms)
        start = 0
        if resp.status == 206:
            match = _CONTENT_RANGE.match(resp.headers.get("Content-Range", ""))
            start = int(match.group(1)) if match else -1
            if start != existing:
                part_path.unlink(missing_ok=True)
                msg = (
                    f"{context}: asked {url} for bytes from {existing} but got "
                    f"Content-Range {resp.headers.get('Content-Range')!r}; restarting"
                )
                raise RetryableError(msg)
            if start:
                hasher.update_from_file(part_path)
                state["resumed"] = True
        content_type = resp.headers.get("Content-Type", "")
        if reject_html and content_type.lower().startswith("text/html"):
            page = resp.read(4096).decode("utf-8", "replace")
            msg = (
                f"{context}: {url} returned an HTML page instead of the file (quota exceeded, "
                f"file not shared, or a changed download flow); page starts: {_text_of(page)!r}"
            )
            raise DownloadError(msg)
        length_header = resp.headers.get("Content-Length")
        body_bytes = int(length_header) if length_header and length_header.isdigit() else None
        total = start + body_bytes if body_bytes is not None else None
        received = 0
        with part_path.open("ab" if start else "wb") as out:
            while True:
                try:
                    chunk = resp.read(CHUNK_BYTES)
                except (OSError, http.client.HTTPException) as err:
                    msg = (
                        f"{context}: connection to {url} broke after {start + received} bytes: "
                        f"{err}"
                    )
                    raise RetryableError(msg) from err
                if not chunk:
                    break
                out.write(chunk)
                hasher.update(chunk)
                received += len(chunk)
                if on_progress is not None:
                    on_progress(start + received, total)
        if body_bytes is not None and received < body_bytes:
            msg = f"{context}: connection to {url} closed after {start + received} of {total} bytes"
            raise RetryableError(msg)
        return StreamResult(start + received, hasher.digests(), resumed=state["resumed"])

    return call_with_retries(attempt, policy=policy, sleep=sleep)


def _digests_of(path: Path, algorithms: tuple[str, ...]) -> dict[str, str]:
    hasher = MultiHasher(algorithms)
    hasher.update_from_file(path)
    return hasher.digests()


def _text_of(page: str) -> str:
    """Visible text of the start of an HTML page, for error messages."""
    text = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S | re.I)
    text = re.sub(r"<[^>]+>", " ", text)
    return " ".join(text.split())[:200]
