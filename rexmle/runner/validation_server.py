"""The validation server an agent calls to check its submission's format (never its score).

HTTP on ``127.0.0.1`` (stdlib ``http.server`` in a thread) and, for sandboxes without network, the
same handler on a unix socket. Endpoints:

- ``POST /validate``: body = the submission folder as a tar (optionally gzip) or zip archive.
  Answers 200 ``{"valid": bool, "reasons": [...], "warnings": [...], "n_cases": int}`` — a format
  check with the task's public data only (:func:`rexmle.grading.validate_submission` reads
  ``public/`` and ``prepared.json``, never ``private/``). No score, metric or position is ever
  computed here. 400: not a readable archive, or a member escapes the folder (reasons say which);
  411: no Content-Length; 413: upload (or its unpacked size) over the limit; 429: too many requests.
- ``GET /health``: ``{"ok": true, "task": ...}``.

Bounded memory: an upload is streamed to a file on disk (never held in memory; Content-Length at
most ``max_upload_bytes``). Each check (unpack + validate) runs in a child process of its own,
:mod:`rexmle.runner.validation_check`, under an address-space limit (``memory_bytes``) and killed
with the server's process, so a hostile upload can exhaust only that child: its failure is
answered 500 and the server goes on. The upload is unpacked by the one safe unpacker
(:func:`rexmle.sources.extract.safe_extract`) under the path rules of :mod:`rexmle.tasks.paths`:
members must be regular files or folders, with relative names without NUL bytes or backslashes,
at most MAX_MEMBER_DEPTH folders deep and MAX_MEMBER_NAME_BYTES long (400 with the reason
otherwise).
- ``POST /validate`` with ``multipart/form-data`` (ML-Master's protocol): the CSV as part
  ``file`` (+ the files it names as parts ``files``); answered as above plus ``is_valid`` and
  ``result`` (:meth:`ValidationServer.check_multipart`).
"""

from __future__ import annotations

import json
import socketserver
import subprocess
import tempfile
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType

from rexmle.runner.limits import DEFAULT_VALIDATION_MEMORY_BYTES, limited_argv, module_argv
from rexmle.sources.errors import ArchiveTooLarge, DamagedArchiveError, UnsafeArchiveError
from rexmle.sources.extract import ArchiveLimits, archive_format, safe_extract
from rexmle.tasks.paths import PathRules

MAX_MEMBERS = 10_000
"""Most files and folders an uploaded archive may hold."""

DEFAULT_MAX_UPLOAD_BYTES = 1 << 30
DEFAULT_MAX_UNPACKED_BYTES = 4 << 30
DEFAULT_MAX_REQUESTS_PER_MINUTE = 30
SOCKET_NAME = "validation.sock"
MAX_DISCARD_BYTES = 64 << 20
"""A refused body is read and dropped up to this size before the connection closes."""
DISCARD_TIMEOUT_S = 2.0
MAX_MEMBER_DEPTH = 64
"""Most nested folders an archive member's name may have."""
MAX_MEMBER_NAME_BYTES = 4096
"""Longest member name (bytes of UTF-8); a single component may have at most 255."""
CHECK_TIMEOUT_S = 900.0
"""Longest a validation check may run before it is killed (answered 500)."""
_STREAM_CHUNK = 1 << 20


class UploadError(ValueError):
    """The upload is not a usable archive of a submission folder (answered with 400)."""


class UploadTooLarge(UploadError):
    """The archive unpacks to more than the limit (answered with 413)."""


UPLOAD_PATHS = PathRules(max_depth=MAX_MEMBER_DEPTH, max_bytes=MAX_MEMBER_NAME_BYTES)
"""Member names of an upload: no backslash, at most MAX_MEMBER_DEPTH folders deep."""


def unpack_submission(payload: bytes | Path, target: Path, *, max_unpacked_bytes: int) -> Path:
    """Unpack a tar/tar.gz/zip of a submission folder into ``target``; return the folder.

    ``payload`` is the archive's bytes or the file holding them (read as a stream). The archive
    goes through the one safe unpacker (:func:`rexmle.sources.extract.safe_extract`) with the
    upload's limits: regular files and folders only (no links, devices, absolute paths or
    ``..``), names per ``UPLOAD_PATHS``, at most ``MAX_MEMBERS`` members and
    ``max_unpacked_bytes`` bytes. When the archive holds one top folder with ``submission.csv``
    inside and none at the root, that folder is the submission.

    Raises:
        UploadError: not a tar or zip archive, a damaged one, or a member that is not allowed.
        UploadTooLarge: the members add up to more than ``max_unpacked_bytes``.
    """
    limits = ArchiveLimits(
        paths=UPLOAD_PATHS,
        allow_links=False,
        max_members=MAX_MEMBERS,
        max_unpacked_bytes=max_unpacked_bytes,
        folder="submission folder",
    )
    with tempfile.TemporaryDirectory(prefix="rexmle-upload-", dir=target.parent) as scratch:
        archive = payload
        if not isinstance(payload, Path):
            archive = Path(scratch) / "upload"
            archive.write_bytes(payload)
        if not isinstance(archive, Path) or archive_format(archive) is None:
            msg = "the upload is neither a zip nor a tar (optionally gzip) archive"
            raise UploadError(msg)
        try:
            safe_extract(archive, target, limits=limits, label="the archive")
        except ArchiveTooLarge as err:
            raise UploadTooLarge(str(err)) from err
        except (UnsafeArchiveError, DamagedArchiveError) as err:
            raise UploadError(str(err)) from err
    if not (target / "submission.csv").exists():
        entries = [p for p in target.iterdir()]
        if len(entries) == 1 and (entries[0] / "submission.csv").is_file():
            return entries[0]
    return target


class RateLimiter:
    """At most ``limit`` requests in any 60-second window."""

    def __init__(self, limit: int, *, window_s: float = 60.0) -> None:
        self.limit = limit
        self.window_s = window_s
        self._times: deque[float] = deque()
        self._lock = threading.Lock()

    def retry_after_s(self) -> float:
        """0 when a request is allowed now (and counts it), else seconds until one is."""
        now = time.monotonic()
        with self._lock:
            while self._times and now - self._times[0] >= self.window_s:
                self._times.popleft()
            if len(self._times) >= self.limit:
                return max(0.0, self.window_s - (now - self._times[0]))
            self._times.append(now)
            return 0.0


class _Handler(BaseHTTPRequestHandler):
    server_version = "rexmle-validation/1"
    owner: ValidationServer

    def address_string(self) -> str:
        return "local"

    def log_message(self, _format: str, *_args: object) -> None:
        return

    def _reply(
        self, status: int, body: dict[str, object], headers: dict[str, str] | None = None
    ) -> None:
        data = (json.dumps(body) + "\n").encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _discard(self, length: int) -> None:
        """Read and drop (part of) a refused body, so the client sees the answer, not a reset."""
        self.wfile.flush()
        self.connection.settimeout(DISCARD_TIMEOUT_S)
        left = min(length, MAX_DISCARD_BYTES)
        try:
            while left > 0 and (chunk := self.rfile.read(min(left, 1 << 16))):
                left -= len(chunk)
        except OSError:
            return

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("", "/health"):
            self._reply(200, {"ok": True, "task": self.owner.task_id})
            return
        self._reply(404, {"error": f"unknown path {self.path!r}; POST /validate"})

    def do_POST(self) -> None:
        if self.path.rstrip("/") != "/validate":
            self._reply(404, {"error": f"unknown path {self.path!r}; POST /validate"})
            return
        wait_s = self.owner.limiter.retry_after_s()
        if wait_s > 0:
            self.close_connection = True
            self._reply(
                429,
                {"error": f"too many validation requests; retry in {wait_s:.0f} s"},
                {"Retry-After": str(max(1, round(wait_s)))},
            )
            return
        length_text = self.headers.get("Content-Length")
        if length_text is None or not length_text.isdigit():
            self.close_connection = True
            self._reply(411, {"error": "send the archive with a Content-Length header"})
            return
        length = int(length_text)
        if length > self.owner.max_upload_bytes:
            self.close_connection = True
            self._reply(
                413,
                {
                    "error": f"upload of {length} bytes is over the limit of "
                    f"{self.owner.max_upload_bytes} bytes"
                },
            )
            self._discard(length)
            return
        with tempfile.TemporaryDirectory(prefix="rexmle-upload-") as scratch:
            upload = Path(scratch) / "upload"
            received = self._receive(upload, length)
            if received < length:
                self.close_connection = True
                self._reply(400, {"error": f"the upload ended after {received} of {length} bytes"})
                return
            content_type = self.headers.get("Content-Type", "")
            if content_type.lower().startswith("multipart/form-data"):
                self._reply(*self.owner.check_multipart(upload, content_type))
                return
            self._reply(*self.owner.check(upload))

    def _receive(self, path: Path, length: int) -> int:
        """Copy the body (``length`` bytes at most) to ``path`` in chunks; bytes received."""
        received = 0
        with open(path, "wb") as sink:
            while received < length:
                chunk = self.rfile.read(min(_STREAM_CHUNK, length - received))
                if not chunk:
                    break
                sink.write(chunk)
                received += len(chunk)
        return received


class _UnixHTTPServer(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True


class ValidationServer:
    """One task's validation server; use as a context manager (starts and stops its threads)."""

    def __init__(
        self,
        task_id: str,
        *,
        data_dir: Path | None = None,
        socket_dir: Path | None = None,
        max_upload_bytes: int = DEFAULT_MAX_UPLOAD_BYTES,
        max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES,
        max_requests_per_minute: int = DEFAULT_MAX_REQUESTS_PER_MINUTE,
        workers: int = 1,
        memory_bytes: int | None = DEFAULT_VALIDATION_MEMORY_BYTES,
    ) -> None:
        self.task_id = task_id
        self.data_dir = data_dir
        self.socket_dir = socket_dir
        self.max_upload_bytes = max_upload_bytes
        self.max_unpacked_bytes = max_unpacked_bytes
        self.limiter = RateLimiter(max_requests_per_minute)
        self.workers = workers
        self.memory_bytes = memory_bytes
        """Address-space limit of each check's child process (None: no limit)."""
        self.n_requests = 0
        self._check_lock = threading.Lock()
        self._servers: list[socketserver.BaseServer] = []
        self._threads: list[threading.Thread] = []
        self.port = 0

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>/validate``."""
        return f"http://127.0.0.1:{self.port}/validate"

    @property
    def socket_path(self) -> Path | None:
        """The unix socket (when ``socket_dir`` was given)."""
        return None if self.socket_dir is None else self.socket_dir / SOCKET_NAME

    def check(
        self, payload: bytes | Path, *, multipart: str | None = None
    ) -> tuple[int, dict[str, object]]:
        """Unpack and validate one upload (its bytes or the file holding them) in a child process
        under ``memory_bytes``; returns (HTTP status, JSON body). Never a score.

        ``multipart``: the Content-Type of a multipart upload (converted in the child).
        """
        with self._check_lock:
            self.n_requests += 1
            with tempfile.TemporaryDirectory(prefix="rexmle-check-") as scratch:
                archive = payload if isinstance(payload, Path) else Path(scratch) / "upload"
                if not isinstance(payload, Path):
                    archive.write_bytes(payload)
                unpacked = Path(scratch) / "unpacked"
                unpacked.mkdir()
                return self._run_check(archive, unpacked, multipart=multipart)

    def _run_check(
        self, archive: Path, unpacked: Path, *, multipart: str | None
    ) -> tuple[int, dict[str, object]]:
        argv = [*module_argv("rexmle.runner.validation_check"), self.task_id,
                str(archive), str(unpacked), "--workers", str(self.workers),
                "--max-unpacked-bytes", str(self.max_unpacked_bytes)]  # fmt: skip
        if self.data_dir is not None:
            argv += ["--data-dir", str(self.data_dir)]
        if multipart is not None:
            argv += ["--multipart", multipart]
        try:
            done = subprocess.run(
                limited_argv(argv, memory_bytes=self.memory_bytes),
                capture_output=True,
                stdin=subprocess.DEVNULL,
                timeout=CHECK_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return 500, {"error": f"the validation check took longer than {CHECK_TIMEOUT_S:g} s"}
        lines = done.stdout.decode("utf-8", errors="replace").strip().splitlines()
        if done.returncode != 0 or not lines:
            tail = done.stderr.decode("utf-8", errors="replace")[-1000:]
            limit = f"{self.memory_bytes >> 20} MiB" if self.memory_bytes else "no limit"
            msg = (
                f"the validation check failed (exit {done.returncode}; memory limit {limit}); "
                f"it ended with: {tail}"
            )
            return 500, {"error": msg}
        answer = json.loads(lines[-1])
        return int(answer["status"]), answer["body"]

    def check_multipart(
        self, body: bytes | Path, content_type: str
    ) -> tuple[int, dict[str, object]]:
        """ML-Master's upload (see :mod:`rexmle.runner.multipart_upload`), answered in its form.

        The answer adds ``is_valid`` and ``result`` (``"valid"`` or the reasons, one a line) to
        the usual keys; an unreadable upload also gets ``details``. Never a score. The body is
        turned into a tar in the check's child process, under its memory limit.
        """
        status, answer = self.check(body, multipart=content_type)
        if status == 200:
            reasons = [str(r) for r in answer["reasons"]]  # type: ignore[attr-defined]
            answer["is_valid"] = answer["valid"]
            answer["result"] = "valid" if answer["valid"] else "\n".join(reasons)
        else:
            answer.setdefault("details", answer.get("error") or answer.get("reasons"))
        return status, answer

    def start(self) -> ValidationServer:
        """Bind 127.0.0.1 (free port) and the unix socket; serve in daemon threads."""
        handler = type("Handler", (_Handler,), {"owner": self})
        tcp = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        tcp.daemon_threads = True
        self.port = tcp.server_address[1]
        self._servers.append(tcp)
        if self.socket_path is not None:
            self.socket_path.parent.mkdir(parents=True, exist_ok=True)
            self.socket_path.unlink(missing_ok=True)
            unix = _UnixHTTPServer(str(self.socket_path), handler)
            self._servers.append(unix)
        for server in self._servers:
            thread = threading.Thread(target=server.serve_forever, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        """Stop serving and release the port and socket."""
        for server in self._servers:
            server.shutdown()
            server.server_close()
        for thread in self._threads:
            thread.join(timeout=5)
        if self.socket_path is not None:
            self.socket_path.unlink(missing_ok=True)
        self._servers.clear()
        self._threads.clear()

    def __enter__(self) -> ValidationServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
