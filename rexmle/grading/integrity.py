"""Gold integrity: the private files must be exactly those ``prepare`` wrote (``prepared.json``).

Hashing every private file on every grade costs seconds on the full data (hundreds of MB of
label volumes), so a verified hash is remembered in ``private/.integrity-cache.json`` together
with the file's size, modification and change times (ns), inode and device. A file whose five
values are unchanged is not read again; any change (a rewrite, a copy, a restore from backup)
reads and hashes it in full. The change time (ctime) cannot be set back by a user: writing the
file and resetting its mtime with ``touch`` still changes it. The cache is an optimisation
only: a missing, unreadable or foreign cache means every file is hashed, and a data dir that
cannot be written is graded all the same.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from rexmle.errors import HarnessError
from rexmle.tasks.files import sha256_file
from rexmle.tasks.folders import TaskDirs

CACHE_NAME = ".integrity-cache.json"
CACHE_VERSION = 1


def _stamp(path: Path) -> list[int]:
    """Size, mtime, ctime (ns), inode and device of a file: what a change of content changes."""
    info = path.stat()
    return [info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev]


def _read_cache(path: Path) -> dict[str, dict[str, object]]:
    """The remembered ``{relative: {"stamp": [...], "sha256": ...}}``; empty when unusable."""
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(payload, dict) or payload.get("version") != CACHE_VERSION:
        return {}
    files = payload.get("files")
    return files if isinstance(files, dict) else {}


def _write_cache(path: Path, files: dict[str, dict[str, object]]) -> None:
    """Write the cache atomically; a data dir that cannot be written keeps no cache."""
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    try:
        partial.write_text(json.dumps({"version": CACHE_VERSION, "files": files}), encoding="utf-8")
        partial.replace(path)
    except OSError:
        partial.unlink(missing_ok=True)  # read-only data: the next grade hashes again


def check_private_files(task_id: str, dirs: TaskDirs) -> None:
    """Check every file listed under ``files.private`` in ``prepared.json`` against its sha256.

    Definition: each listed path, relative to ``private/``, must be a regular file (not a link)
    whose sha256 equals the recorded one. Files that are not listed are not read by grading (the
    gold ``submission.csv``, which is listed, names every gold file) and are not checked. A file
    whose size, mtime, ctime, inode and device equal those remembered when its hash last matched is
    not hashed again (see the module docstring).

    Raises:
        HarnessError: ``prepared.json`` lists no private files, or a listed file is missing, a
            link, or changed since prepare; the message names the file (exit code 2).
    """
    manifest = json.loads(dirs.prepared_json.read_text(encoding="utf-8"))
    listed = manifest.get("files", {}).get("private")
    if not isinstance(listed, dict) or not listed:
        msg = f"{task_id}: {dirs.prepared_json} lists no private files; prepare the task again"
        raise HarnessError(msg)
    redo = f"prepare it again: rexmle prepare {task_id} --force --data-dir {dirs.root.parent}"
    cache_path = dirs.private / CACHE_NAME
    remembered = _read_cache(cache_path)
    verified: dict[str, dict[str, object]] = {}
    for relative, expected in sorted(listed.items()):
        path = dirs.private / relative
        if path.is_symlink() or not path.is_file():
            msg = f"{task_id}: private/{relative} is missing or not a regular file; {redo}"
            raise HarnessError(msg)
        stamp = _stamp(path)
        known = remembered.get(relative)
        if isinstance(known, dict) and known == {"stamp": stamp, "sha256": expected}:
            verified[relative] = known
            continue
        found = sha256_file(path)
        if found != expected:
            msg = (
                f"{task_id}: private/{relative} does not match prepared.json (sha256 {found}, "
                f"expected {expected}): the private data changed after prepare; {redo}"
            )
            raise HarnessError(msg)
        verified[relative] = {"stamp": stamp, "sha256": expected}
    if verified != remembered:
        _write_cache(cache_path, verified)
