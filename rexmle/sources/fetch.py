"""Make a task's raw folder: resolve, download (or take from a local folder), verify, extract.

Layout under the data dir, for a task whose ``raw_folder`` is ``F``::

    F/downloads/<name>.part    partial download (resumed on the next run)
    F/downloads/<name>         verified download (only ever renamed from .part)
    F/raw/                     extracted sources, what prepare reads
    F/raw/.rexmle-sources.json manifest; "complete" only after every extraction

Tasks that share ``raw_folder`` fetch once: the second call finds a complete manifest
covering its files and returns it without touching the network.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from rich.progress import TaskID

from rexmle.sources.checksums import algorithms_needed, checksum_problems, file_digests
from rexmle.sources.disk import ensure_free_space
from rexmle.sources.errors import ChecksumMismatchError, DownloadError, UnsafeArchiveError
from rexmle.sources.extract import (
    archive_format,
    member_path_problem,
    safe_extract,
    uncompressed_size,
)
from rexmle.sources.figshare import resolve_figshare
from rexmle.sources.gdrive import resolve_download_url
from rexmle.sources.http import RetryPolicy, make_opener, stream_to_part
from rexmle.sources.manifest import (
    DownloadedFile,
    ExtractedArchive,
    Outcome,
    SourceManifest,
    now_utc,
    read_manifest,
    write_manifest,
)
from rexmle.sources.progress import TransferProgress, member_progress
from rexmle.sources.published import PublishedChecksum, published_for
from rexmle.sources.recognise import LocalMatch, holds_text, recognise_by_content
from rexmle.sources.remote import RemoteFile
from rexmle.sources.zenodo import resolve_zenodo
from rexmle.tasks.spec import SourceFile, SourceSpec, TaskSpec

log = logging.getLogger(__name__)

LOCK_NAME = ".rexmle-fetch.lock"
_PINNED = "pinned in the task YAML"

Sleep = Callable[[float], None]


@dataclass(frozen=True)
class _Job:
    """One task file to obtain."""

    task_id: str
    raw_folder: str
    source: SourceSpec
    file: SourceFile
    remote: RemoteFile | None = None
    """Resolved download; None when files come from a local folder."""
    published: tuple[PublishedChecksum, ...] = ()
    """Third parties' sizes and checksums of this file (checked beside the source's own)."""

    @property
    def context(self) -> str:
        return f"task {self.task_id!r}, {_where(self.source, self.file)}, file {self.file.name!r}"


def _where(source: SourceSpec, file: SourceFile) -> str:
    if source.kind == "zenodo":
        return f"zenodo record {source.record}"
    if source.kind == "figshare":
        version = f" version {source.version}" if source.version else ""
        return f"figshare article {source.record}{version}"
    if source.kind == "gdrive":
        return f"google drive file {file.url}"
    return f"URL {file.url}"


class _Cancelled(DownloadError):
    """Raised inside a worker when the fetch is interrupted."""


def task_raw_dir(task: TaskSpec, data_dir: Path) -> Path:
    """``<data_dir>/<task.raw_folder>/raw``: where `fetch_task_raw` puts a task's sources."""
    return Path(data_dir) / task.raw_folder / "raw"


def fetch_task_raw(
    task: TaskSpec,
    raw_dir: Path,
    *,
    from_dir: Path | None = None,
    max_parallel: int = 2,
    progress: bool = True,
    retry_policy: RetryPolicy | None = None,
    allow_unpinned: bool = False,
    published_checksums: bool = True,
    sleep: Sleep = time.sleep,
) -> SourceManifest:
    """Make ``raw_dir`` hold the task's extracted sources.

    Skips all work when ``raw_dir/.rexmle-sources.json`` says a complete, verified fetch
    covers every file of the task. Otherwise downloads (or, with ``from_dir``, takes local
    files without going online), verifies, and extracts safely; archives are kept in
    ``raw_dir.parent / "downloads"``. A lock file in ``raw_dir.parent`` serialises
    concurrent fetches of one raw folder (tasks sharing a download).

    Args:
        task: the task whose ``sources`` are fetched.
        raw_dir: ``<data_dir>/<task.raw_folder>/raw``.
        from_dir: folder of already-downloaded files (e.g. a cluster's shared disk); the
            files are verified against pinned checksums and sizes and extracted from there.
        max_parallel: files downloaded at the same time.
        progress: show rich progress bars.
        retry_policy: retry bounds for network errors (defaults to `RetryPolicy()`).
        allow_unpinned: with ``from_dir``, accept files the task pins no checksum for.
        published_checksums: also check the third parties' published values
            (`rexmle.sources.published`); off only after checking the live record, or for
            copies of a source that are not the real file (tests).
        sleep: waiting function between retries.

    Returns:
        The manifest written to (or found in) ``raw_dir``.

    Raises:
        DownloadError: (or a subclass) any file could not be obtained, verified or
            extracted; the message names task, record and file.
    """
    raw_dir = Path(raw_dir)
    manifest = _covering_manifest(task, raw_dir)
    if manifest is not None:
        return manifest
    with _folder_lock(raw_dir.parent):
        manifest = _covering_manifest(task, raw_dir)
        if manifest is not None:
            return manifest
        previous = read_manifest(raw_dir)
        jobs_and_files = _obtain(
            task,
            raw_dir.parent / "downloads",
            from_dir=from_dir,
            max_parallel=max_parallel,
            progress=progress,
            policy=retry_policy or RetryPolicy(),
            allow_unpinned=allow_unpinned,
            published_checksums=published_checksums,
            sleep=sleep,
        )
        downloaded = [done for _, done in jobs_and_files]
        kept_files, kept_placed = _kept_from(previous, {d.name for d in downloaded})
        task_ids = sorted({task.id, *(previous.task_ids if previous else [])})
        pending = SourceManifest(
            raw_folder=task.raw_folder,
            task_ids=task_ids,
            complete=False,
            files=kept_files + downloaded,
            extracted=kept_placed,
            created_at=now_utc(),
        )
        write_manifest(raw_dir, pending)
        placed = _place_all(jobs_and_files, raw_dir, progress=progress)
        manifest = pending.model_copy(
            update={"complete": True, "extracted": kept_placed + placed, "created_at": now_utc()}
        )
        write_manifest(raw_dir, manifest)
    log.info("%s: raw data ready in %s", task.id, raw_dir)
    return manifest


def download_task_files(
    task: TaskSpec,
    downloads_dir: Path,
    *,
    from_dir: Path | None = None,
    max_parallel: int = 2,
    progress: bool = True,
    retry_policy: RetryPolicy | None = None,
    allow_unpinned: bool = False,
    published_checksums: bool = True,
    sleep: Sleep = time.sleep,
) -> list[Path]:
    """Download and verify the task's files into ``downloads_dir``; extract nothing.

    With ``from_dir`` nothing is downloaded: the local files are verified and their paths
    returned.

    Returns:
        Path of each verified file, in the order of the task's sources and files.

    Raises:
        DownloadError: (or a subclass) as for `fetch_task_raw`.
    """
    jobs_and_files = _obtain(
        task,
        Path(downloads_dir),
        from_dir=from_dir,
        max_parallel=max_parallel,
        progress=progress,
        policy=retry_policy or RetryPolicy(),
        allow_unpinned=allow_unpinned,
        published_checksums=published_checksums,
        sleep=sleep,
    )
    return [Path(done.path) for _, done in jobs_and_files]


def _covering_manifest(task: TaskSpec, raw_dir: Path) -> SourceManifest | None:
    manifest = read_manifest(raw_dir)
    if manifest is None:
        return None
    problems = manifest.problems_for(task, raw_dir)
    if problems:
        log.info("%s: refetching into %s: %s", task.id, raw_dir, "; ".join(problems))
        return None
    log.info("%s: %s already holds its verified sources", task.id, raw_dir)
    return manifest


def _kept_from(
    previous: SourceManifest | None, replaced: set[str]
) -> tuple[list[DownloadedFile], list[ExtractedArchive]]:
    """Entries of a complete earlier manifest for files this fetch did not touch."""
    if previous is None or not previous.complete:
        return [], []
    files = [f for f in previous.files if f.name not in replaced]
    placed = [e for e in previous.extracted if e.name not in replaced]
    return files, placed


@contextlib.contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    """Exclusive lock on ``folder`` between processes (POSIX ``flock``; none elsewhere)."""
    folder.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - non-POSIX
        yield
        return
    with (folder / LOCK_NAME).open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _jobs(task: TaskSpec, *, published_checksums: bool = True) -> list[_Job]:
    jobs: list[_Job] = []
    seen: set[str] = set()
    for source in task.sources:
        for file in source.files:
            published = tuple(published_for(task, source, file)) if published_checksums else ()
            job = _Job(task.id, task.raw_folder, source, file, published=published)
            problem = _name_problem(file.name)
            if problem:
                msg = f"{job.context}: unusable file name ({problem})"
                raise DownloadError(msg)
            if file.extract_to is not None and member_path_problem(file.extract_to):
                msg = f"{job.context}: extract_to {file.extract_to!r} must stay inside raw/"
                raise DownloadError(msg)
            if file.name in seen:
                msg = f"{job.context}: two source files of the task share this name"
                raise DownloadError(msg)
            seen.add(file.name)
            jobs.append(job)
    return jobs


def _name_problem(name: str) -> str | None:
    if name in ("", ".", "..") or "/" in name or "\\" in name or "\x00" in name:
        return "a file name without folders is needed"
    if name.endswith(".part"):
        return "'.part' is reserved for partial downloads"
    return None


def _resolve(jobs: list[_Job], *, policy: RetryPolicy, sleep: Sleep) -> list[_Job]:
    """Attach the download URL, published size and checksum to every job (network)."""
    by_source: dict[int, dict[str, RemoteFile]] = {}
    resolved: list[_Job] = []
    for job in jobs:
        source = job.source
        key = id(source)
        if key not in by_source:
            context = f"task {job.task_id!r}"
            if source.kind == "zenodo":
                by_source[key] = resolve_zenodo(source, context=context, policy=policy, sleep=sleep)
            elif source.kind == "figshare":
                by_source[key] = resolve_figshare(
                    source, context=context, policy=policy, sleep=sleep
                )
            else:
                by_source[key] = {
                    f.name: RemoteFile(
                        name=f.name,
                        url=str(f.url),
                        publisher=_where(source, f),
                        needs_confirm=source.kind == "gdrive",
                    )
                    for f in source.files
                }
        remote = by_source[key][job.file.name]
        resolved.append(dataclasses.replace(job, remote=remote))
    return resolved


def _obtain(
    task: TaskSpec,
    downloads_dir: Path,
    *,
    from_dir: Path | None,
    max_parallel: int,
    progress: bool,
    policy: RetryPolicy,
    allow_unpinned: bool,
    published_checksums: bool,
    sleep: Sleep,
) -> list[tuple[_Job, DownloadedFile]]:
    if max_parallel < 1:
        msg = f"max_parallel must be >= 1, got {max_parallel}"
        raise ValueError(msg)
    jobs = _jobs(task, published_checksums=published_checksums)
    if from_dir is not None:
        from_dir = Path(from_dir)
        if not from_dir.is_dir():
            msg = f"task {task.id!r}: from_dir {from_dir} is not a folder"
            raise DownloadError(msg)

        declared = {j.file.name for j in jobs}

        def take(job: _Job, _bars: TransferProgress, _cancel: threading.Event) -> DownloadedFile:
            return _take_local(job, from_dir, allow_unpinned=allow_unpinned, declared=declared)

        return _run_parallel(jobs, take, max_parallel=max_parallel, progress=progress, total=None)

    jobs = _resolve(jobs, policy=policy, sleep=sleep)
    downloads_dir.mkdir(parents=True, exist_ok=True)
    needed, unknown = _bytes_to_download(jobs, downloads_dir)
    if unknown:
        log.warning("%s: size unknown before download for %s", task.id, unknown)
    ensure_free_space(
        downloads_dir, needed, purpose=f"download {len(jobs)} file(s) of task {task.id!r}"
    )
    total = None if unknown else sum(_size_of(j) or 0 for j in jobs)

    def fetch_one(job: _Job, bars: TransferProgress, cancel: threading.Event) -> DownloadedFile:
        wait = cancellable_sleep(cancel, sleep, context=job.context)
        return _download(job, downloads_dir, policy=policy, bars=bars, cancel=cancel, sleep=wait)

    return _run_parallel(jobs, fetch_one, max_parallel=max_parallel, progress=progress, total=total)


def cancellable_sleep(cancel: threading.Event, sleep: Sleep, *, context: str) -> Sleep:
    """A retry wait for a worker thread that ends at once when ``cancel`` is set (Ctrl-C).

    ``time.sleep`` is replaced by a wait on the event; any other ``sleep`` (tests) is called
    as given. Either way a set event raises instead of starting the next attempt.
    """

    def wait(seconds: float) -> None:
        if sleep is time.sleep:
            cancel.wait(seconds)
        elif not cancel.is_set():
            sleep(seconds)
        if cancel.is_set():
            msg = f"{context}: interrupted while waiting to retry"
            raise _Cancelled(msg)

    return wait


def _size_of(job: _Job) -> int | None:
    remote_size = job.remote.size_bytes if job.remote else None
    return remote_size if remote_size is not None else job.file.size_bytes


def _bytes_to_download(jobs: list[_Job], downloads_dir: Path) -> tuple[int, list[str]]:
    needed = 0
    unknown: list[str] = []
    for job in jobs:
        final = downloads_dir / job.file.name
        if final.exists():
            continue
        size = _size_of(job)
        if size is None:
            unknown.append(job.file.name)
            continue
        part = final.with_name(final.name + ".part")
        needed += max(size - (part.stat().st_size if part.exists() else 0), 0)
    return needed, unknown


def _run_parallel(
    jobs: list[_Job],
    work: Callable[[_Job, TransferProgress, threading.Event], DownloadedFile],
    *,
    max_parallel: int,
    progress: bool,
    total: int | None,
) -> list[tuple[_Job, DownloadedFile]]:
    """Run ``work`` over ``jobs`` in threads; raise once with every failure."""
    cancel = threading.Event()
    with TransferProgress(enabled=progress) as bars:
        bars.set_overall(f"{len(jobs)} file(s)", total)
        with ThreadPoolExecutor(max_workers=max_parallel) as pool:
            futures: list[Future[DownloadedFile]] = [
                pool.submit(work, job, bars, cancel) for job in jobs
            ]
            try:
                outcomes = [_outcome(f) for f in futures]
            except BaseException:
                cancel.set()
                pool.shutdown(wait=True, cancel_futures=True)
                raise
    failures = [o for o in outcomes if isinstance(o, BaseException)]
    unexpected = [o for o in failures if not isinstance(o, DownloadError)]
    if unexpected:
        raise unexpected[0]
    if len(failures) == 1:
        raise failures[0]
    if failures:
        lines = "\n  - ".join(str(f) for f in failures)
        msg = f"{len(failures)} of {len(jobs)} files could not be obtained:\n  - {lines}"
        raise DownloadError(msg) from failures[0]
    return [
        (job, o) for job, o in zip(jobs, outcomes, strict=True) if isinstance(o, DownloadedFile)
    ]


def _outcome(future: Future[DownloadedFile]) -> DownloadedFile | BaseException:
    error = future.exception()
    return error if error is not None else future.result()


def _expectations(job: _Job) -> tuple[dict[str, str | None], dict[str, int | None]]:
    """Checksum and size per origin: the live source, the task's pin, each third party."""
    published = f"published by {job.remote.publisher}" if job.remote else "published"
    checksums: dict[str, str | None] = {
        published: job.remote.published_checksum if job.remote else None,
        _PINNED: job.file.checksum,
    }
    sizes: dict[str, int | None] = {
        published: job.remote.size_bytes if job.remote else None,
        _PINNED: job.file.size_bytes,
    }
    for row in job.published:
        for value in row.checksums:
            origin = row.origin if row.origin not in checksums else f"{row.origin} [{value[:3]}]"
            checksums[origin] = value
        sizes.setdefault(row.origin, row.size_bytes)
    return checksums, sizes


def third_party_disagreement(
    job: _Job, digests: dict[str, str], size_bytes: int, problems: list[str], kept: Path
) -> ChecksumMismatchError | None:
    """The error for bytes that match the source's own checksum (or the task's pin) but not a
    third party's value; None when the source's own checks fail too or check nothing.

    Such a file is not downloaded again (it would not change); it is kept at ``kept``.
    """
    own_checksums, own_sizes = _expectations(dataclasses.replace(job, published=()))
    if not problems or not any(own_checksums.values()):
        return None
    own = checksum_problems(
        digests, size_bytes, expected=own_checksums, expected_size_bytes=own_sizes, source="-"
    )
    if own:
        return None
    lines = "\n  - ".join(problems)
    msg = (
        f"{job.context}: the file matches the checksum of the source itself but not the value "
        f"a third party published:\n  - {lines}\nThe third-party value may describe another "
        "version of the file. Compare with the record page; to go on with the source's own "
        f"value, run again with --no-published-checksums (the file is kept: {kept})"
    )
    return ChecksumMismatchError(msg)


def _verified_against(checksums: dict[str, str | None], sizes: dict[str, int | None]) -> list[str]:
    found = [f"{c} ({origin})" for origin, c in checksums.items() if c]
    found += [f"{s} bytes ({origin})" for origin, s in sizes.items() if s is not None]
    return found


def _download(
    job: _Job,
    downloads_dir: Path,
    *,
    policy: RetryPolicy,
    bars: TransferProgress,
    cancel: threading.Event,
    sleep: Sleep,
) -> DownloadedFile:
    """Download one file to ``.part``, verify, rename; one fresh retry after a mismatch."""
    remote = job.remote
    if remote is None:  # pragma: no cover - _resolve fills every job
        msg = f"{job.context}: not resolved"
        raise DownloadError(msg)
    name = job.file.name
    final = downloads_dir / name
    part = final.with_name(name + ".part")
    checksums, sizes = _expectations(job)
    algorithms = algorithms_needed(checksums.values())
    source = f"{name} ({remote.url})"
    known_total = _size_of(job)

    if final.exists():
        digests = file_digests(final, algorithms)
        size = final.stat().st_size
        problems = checksum_problems(
            digests, size, expected=checksums, expected_size_bytes=sizes, source=source
        )
        if not problems:
            bars.update_file(name, size, size)
            bars.finish_file(name)
            return _record(job, final, size, digests, remote.url, "reused")
        disagreement = third_party_disagreement(job, digests, size, problems, final)
        if disagreement is not None:
            raise disagreement
        log.warning("%s: existing download is wrong, fetching again: %s", job.context, problems)
        final.unlink()

    def on_progress(done: int, total: int | None) -> None:
        if cancel.is_set():
            msg = f"{job.context}: cancelled; {part} is kept for resuming"
            raise _Cancelled(msg)
        bars.update_file(name, done, total if total is not None else known_total)

    problems = []
    for attempt in (1, 2):
        opener = make_opener()
        url = remote.url
        if remote.needs_confirm:
            url = resolve_download_url(
                remote.url, context=job.context, policy=policy, opener=opener, sleep=sleep
            )
        result = stream_to_part(
            url,
            part,
            algorithms=algorithms,
            policy=policy,
            context=job.context,
            opener=opener,
            on_progress=on_progress,
            reject_html=remote.needs_confirm,
            sleep=sleep,
        )
        problems = checksum_problems(
            result.digests,
            result.size_bytes,
            expected=checksums,
            expected_size_bytes=sizes,
            source=source,
        )
        disagreement = third_party_disagreement(
            job, result.digests, result.size_bytes, problems, part
        )
        if disagreement is not None:
            bars.finish_file(name)
            raise disagreement
        if not problems:
            os.replace(part, final)
            bars.finish_file(name)
            if not any(checksums.values()):
                log.warning(
                    "%s: nothing to verify against; pin checksum sha256:%s in the task YAML",
                    job.context,
                    result.digests["sha256"],
                )
            outcome: Outcome = "resumed" if result.resumed else "downloaded"
            return _record(job, final, result.size_bytes, result.digests, url, outcome)
        part.unlink(missing_ok=True)
        if attempt == 1:
            log.warning("%s: %s; deleted, downloading once more", job.context, problems)
    bars.finish_file(name)
    lines = "\n  - ".join(problems)
    msg = (
        f"{job.context}: still wrong after a second download, deleted:\n  - {lines}\n"
        "The source may have changed the file (then the pinned checksum is outdated) or "
        "serves corrupt data."
    )
    raise ChecksumMismatchError(msg)


def _record(
    job: _Job,
    path: Path,
    size_bytes: int,
    digests: dict[str, str],
    url: str,
    outcome: Outcome,
) -> DownloadedFile:
    checksums, sizes = _expectations(job)
    return DownloadedFile(
        name=job.file.name,
        kind=job.source.kind,
        record=job.source.record,
        version=job.source.version,
        size_bytes=size_bytes,
        checksums=digests,
        verified_against=_verified_against(checksums, sizes),
        source_url=url,
        licence=job.source.licence,
        source_licence=job.remote.source_licence if job.remote else None,
        path=str(path.resolve()),
        outcome=outcome,
    )


def local_candidates(from_dir: Path, name: str, raw_folder: str) -> list[Path]:
    """Where a file is looked for in ``from_dir``: at its top, in ``downloads/``, and in
    ``<raw_folder>/downloads/`` (the layout of another rexmle data dir).
    """
    return [
        from_dir / name,
        from_dir / "downloads" / name,
        from_dir / raw_folder / "downloads" / name,
    ]


def _take_local(
    job: _Job, from_dir: Path, *, allow_unpinned: bool, declared: set[str]
) -> DownloadedFile:
    """Verify a file from ``from_dir`` against the task's pins and the third parties' values;
    never goes online. A file not found by name is recognised by content (`recognise`).
    """
    checksums, sizes = _expectations(job)
    match = _locate_local(job, from_dir, checksums, sizes, declared)
    found = match.path
    if not any(checksums.values()) and not allow_unpinned:
        msg = (
            f"{job.context}: {found} cannot be verified offline because the task YAML pins no "
            "checksum for it and no third party published one; pin one (e.g. the md5 the "
            "source publishes) or pass allow_unpinned"
        )
        raise DownloadError(msg)
    size = found.stat().st_size
    if any(s is not None and s != size for s in sizes.values()):
        digests: dict[str, str] = {}
    else:
        digests = file_digests(found, algorithms_needed(checksums.values()))
    problems = checksum_problems(
        digests,
        size,
        expected=checksums if digests else {},
        expected_size_bytes=sizes,
        source=str(found),
    )
    if problems:
        lines = "\n  - ".join(problems)
        msg = f"{job.context}: the local copy does not match the task:\n  - {lines}"
        disagreement = third_party_disagreement(job, digests, size, problems, found)
        raise disagreement or ChecksumMismatchError(msg)
    return DownloadedFile(
        name=job.file.name,
        kind=job.source.kind,
        record=job.source.record,
        version=job.source.version,
        size_bytes=size,
        checksums=digests,
        verified_against=_verified_against(checksums, sizes),
        source_url=found.resolve().as_uri(),
        licence=job.source.licence,
        path=str(found.resolve()),
        outcome="from_dir",
        found_by=match.how,
    )


def _locate_local(
    job: _Job,
    from_dir: Path,
    checksums: dict[str, str | None],
    sizes: dict[str, int | None],
    declared: set[str],
) -> LocalMatch:
    candidates = local_candidates(from_dir, job.file.name, job.raw_folder)
    named = next((p for p in candidates if p.is_file()), None)
    if named is not None:
        return LocalMatch(named, "by name")
    folders = sorted({p.parent for p in candidates})
    match = recognise_by_content(
        job.context,
        folders,
        checksums=checksums,
        sizes=sizes,
        holds=job.file.holds,
        skip=declared,
    )
    if match is None:
        tried = ", ".join(str(p) for p in candidates)
        known = [f"{c} ({o})" for o, c in checksums.items() if c]
        known += [f"{s} bytes ({o})" for o, s in sizes.items() if s is not None]
        known += [f"a member matching {holds_text(h)}" for h in job.file.holds]
        content = "; ".join(known) if known else "nothing is known of its content"
        msg = (
            f"{job.context}: not found in from_dir (looked at {tried}), and no other file in "
            f"{', '.join(str(f) for f in folders)} has its content ({content})"
        )
        raise DownloadError(msg)
    log.warning(
        "%s: no file named %r in %s; taking %s, recognised %s",
        job.context,
        job.file.name,
        from_dir,
        match.path,
        match.how,
    )
    return match


def _place_all(
    jobs_and_files: list[tuple[_Job, DownloadedFile]], raw_dir: Path, *, progress: bool
) -> list[ExtractedArchive]:
    """Extract each archive (or copy each plain file) into ``raw_dir``."""
    needed = 0
    for job, done in jobs_and_files:
        path = Path(done.path)
        if job.file.extract and archive_format(path) is None:
            msg = (
                f"{job.context}: {path} is neither a zip nor a tar archive; set "
                "'extract: false' for it in the task YAML"
            )
            raise DownloadError(msg)
        needed += uncompressed_size(path) if job.file.extract else done.size_bytes
    ensure_free_space(raw_dir, needed, purpose=f"extract into {raw_dir}")
    placed: list[ExtractedArchive] = []
    with member_progress(enabled=progress) as bar:
        for job, done in jobs_and_files:
            path = Path(done.path)
            target_rel = job.file.extract_to or "."
            target = raw_dir / target_rel if job.file.extract_to else raw_dir
            if not job.file.extract:
                _copy_into(path, target / job.file.name)
                placed.append(
                    ExtractedArchive(
                        name=job.file.name,
                        target=target_rel,
                        is_archive=False,
                        member_count=1,
                        file_count=1,
                        uncompressed_bytes=done.size_bytes,
                    )
                )
                continue
            bar_task = bar.add_task(f"extract {job.file.name}", total=None)

            def on_member(n_done: int, n_total: int, task_id: TaskID = bar_task) -> None:
                bar.update(task_id, completed=n_done, total=n_total)

            try:
                result = safe_extract(path, target, on_member=on_member)
            except UnsafeArchiveError as err:
                msg = f"{job.context}: {err}"
                raise UnsafeArchiveError(msg) from err
            bar.remove_task(bar_task)
            placed.append(
                ExtractedArchive(
                    name=job.file.name,
                    target=target_rel,
                    is_archive=True,
                    member_count=result.member_count,
                    file_count=result.file_count,
                    uncompressed_bytes=result.uncompressed_bytes,
                )
            )
            log.info("%s: %d members extracted into %s", job.context, result.member_count, target)
    return placed


def _copy_into(source: Path, dest: Path) -> None:
    """Place a plain file: hard link when possible, else copy; atomic rename at the end."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.copying")
    tmp.unlink(missing_ok=True)
    try:
        os.link(source, tmp)
    except OSError:
        shutil.copy2(source, tmp)
    os.replace(tmp, dest)
