"""Test helpers for rexmle.sources: a real HTTP server on 127.0.0.1 standing in for Zenodo,
Figshare, Google Drive and plain URLs (with switches for dropped connections, corrupt bytes
and error statuses), a minimal TaskSpec factory and a tiny-backoff retry policy.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from rexmle.preparation import prepare_task
from rexmle.sources.http import RetryPolicy
from rexmle.tasks.folders import TaskDirs
from rexmle.tasks.spec import MetricSpec, SourceSpec, SplitSpec, TaskSpec


@dataclass
class Route:
    """What the server answers on one path."""

    body: bytes = b""
    content_type: str = "application/octet-stream"
    statuses: list[int] = field(default_factory=list)
    """Statuses answered (one per request, in order) before the body is served."""
    retry_after: str | None = None
    """Retry-After header sent with those statuses."""
    drop_after_bytes: int | None = None
    """On the next full GET, announce the whole length but close after this many bytes."""
    corrupt_times: int = 0
    """Serve a copy with one flipped byte this many times."""
    supports_range: bool = True
    delay_s: float = 0.0
    handler: Callable[[BaseHTTPRequestHandler, dict[str, str]], None] | None = None
    """Custom answer (gets the handler and the query parameters)."""


@dataclass
class Hit:
    path: str
    query: dict[str, str]
    range: str | None


class SourceServer:
    """Threaded HTTP server; ``routes`` maps a path (no query) to a `Route`."""

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.hits: list[Hit] = []
        self.active = 0
        self.max_active = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args: object) -> None:
                return

            def do_GET(self) -> None:
                parts = urllib.parse.urlsplit(self.path)
                query = dict(urllib.parse.parse_qsl(parts.query))
                with server._lock:
                    server.hits.append(Hit(parts.path, query, self.headers.get("Range")))
                    server.active += 1
                    server.max_active = max(server.max_active, server.active)
                try:
                    server._answer(self, parts.path, query)
                finally:
                    with server._lock:
                        server.active -= 1

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def add(self, path: str, route: Route) -> Route:
        self.routes[path] = route
        return route

    def add_json(self, path: str, text: str) -> Route:
        return self.add(path, Route(body=text.encode(), content_type="application/json"))

    def hits_on(self, path: str) -> list[Hit]:
        return [h for h in self.hits if h.path == path]

    def _answer(self, h: BaseHTTPRequestHandler, path: str, query: dict[str, str]) -> None:
        route = self.routes.get(path)
        if route is None:
            h.send_response(404)
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        if route.delay_s:
            time.sleep(route.delay_s)
        if route.statuses:
            status = route.statuses.pop(0)
            h.send_response(status)
            if route.retry_after is not None:
                h.send_header("Retry-After", route.retry_after)
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        if route.handler is not None:
            route.handler(h, query)
            return
        self.serve_body(h, route)

    def serve_body(self, h: BaseHTTPRequestHandler, route: Route) -> None:
        """Answer with the route's bytes: Range, corruption and dropping as configured."""
        body = route.body
        if route.corrupt_times > 0:
            route.corrupt_times -= 1
            middle = len(body) // 2
            body = body[:middle] + bytes([body[middle] ^ 0xFF]) + body[middle + 1 :]
        start = 0
        requested = h.headers.get("Range")
        if requested and route.supports_range:
            start = int(requested.removeprefix("bytes=").split("-")[0])
            if start >= len(body):
                h.send_response(416)
                h.send_header("Content-Range", f"bytes */{len(body)}")
                h.send_header("Content-Length", "0")
                h.end_headers()
                return
            h.send_response(206)
            h.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            h.send_response(200)
        h.send_header("Content-Type", route.content_type)
        h.send_header("Content-Length", str(len(body) - start))
        h.end_headers()
        payload = body[start:]
        if route.drop_after_bytes is not None and start == 0:
            cut = route.drop_after_bytes
            route.drop_after_bytes = None
            h.wfile.write(payload[:cut])
            h.wfile.flush()
            h.close_connection = True
            return
        h.wfile.write(payload)


FAST_RETRIES = RetryPolicy(
    max_attempts=4,
    backoff_initial_s=0.01,
    backoff_factor=2.0,
    backoff_max_s=0.05,
    max_total_wait_s=1.0,
    timeout_s=5.0,
)
"""Tiny backoff for tests: never sleeps long."""


def make_task(
    sources: list[SourceSpec], *, task_id: str = "demo-task", shared_raw: str | None = None
) -> TaskSpec:
    """A minimal valid TaskSpec around the given sources."""
    return TaskSpec(
        id=task_id,
        name="Demo task",
        family="demo",
        task_type="segmentation",
        modality="CT",
        anatomy="none",
        sources=sources,
        shared_raw=shared_raw,
        metrics=[MetricSpec(key="dice", direction="higher", headline=True)],
        split=SplitSpec(rule="random 80/20"),
    )


def prepare_copy(
    task_id: str, data_dir: Path, *, from_dir: Path | None = None
) -> tuple[TaskDirs, bool]:
    """``prepare_task`` on real-data paths for a mini copy of a real source: its case counts
    and the third parties' checksums of the real files are not expected, nothing is pinned.
    """
    return prepare_task(
        task_id,
        data_dir=data_dir,
        from_dir=from_dir,
        allow_unpinned=True,
        check_counts=False,
        published_checksums=False,
    )


def build_zip(path: Path, members: dict[str, bytes]) -> bytes:
    """Write a zip with the given members; return its bytes."""
    import zipfile

    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, content in members.items():
            zf.writestr(name, content)
    return path.read_bytes()


def md5_checksum(data: bytes) -> str:
    """``md5:<hex>`` of ``data``."""
    return "md5:" + hashlib.md5(data).hexdigest()


def serve_zenodo(server, record: str, files: dict[str, bytes], *, licence="cc-by-4.0", **routes):
    """Zenodo record API + file routes; ``routes`` may override a file's Route options."""
    entries = []
    for name, body in files.items():
        path = f"/api/records/{record}/files/{name}/content"
        server.add(path, Route(body=body, **routes.get(name, {})))
        entries.append(
            {
                "key": name,
                "size": len(body),
                "checksum": md5_checksum(body),
                "links": {"self": f"{server.url}{path}"},
            }
        )
    document = {"id": int(record), "metadata": {"license": {"id": licence}}, "files": entries}
    server.add_json(f"/api/records/{record}", json.dumps(document))


def serve_gdrive(server, file_id: str, body: bytes, **file_options) -> dict[str, str]:
    """Drive-like flow: /uc redirects (303) to /download?id=..&export=download, which
    answers a virus-scan warning page; its form leads to the same path with
    confirm=t&uuid=.., the only URL that serves the bytes. Returns that query.
    """
    confirmed = {"id": file_id, "export": "download", "confirm": "t", "uuid": "5f0c-uuid"}

    def uc(handler, query):
        handler.send_response(303)
        handler.send_header("Location", f"/download?id={query['id']}&export=download")
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    def warning_page(handler, query):
        page = f"""<!DOCTYPE html><html><head><title>Google Drive - Virus scan warning</title>
        </head><body><p>Google Drive can't scan this file for viruses.</p>
        <form id="download-form" action="{server.url}/download" method="get">
        <input type="submit" id="uc-download-link" value="Download anyway"/>
        <input type="hidden" name="id" value="{query.get("id")}">
        <input type="hidden" name="export" value="download">
        <input type="hidden" name="confirm" value="t">
        <input type="hidden" name="uuid" value="5f0c-uuid"></form></body></html>"""
        data = page.encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html; charset=utf-8")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    file_route = Route(body=body, **file_options)

    def download(handler, query):
        if query == confirmed:
            server.serve_body(handler, file_route)
        else:
            warning_page(handler, query)

    server.add("/uc", Route(handler=uc))
    server.add("/download", Route(handler=download))
    return confirmed
