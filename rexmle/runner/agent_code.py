"""An agent's own code (``--agent-dir DIR``, ``dir:``): checked, hashed, and shown read-only.

The folder is the agent's to ship (scripts, a package, small weights). What is taken: every
folder, regular file and relative symbolic link under it, except version-control folders
(:data:`SKIPPED_FOLDERS`: ``.git``, ``.hg``, ``.svn``) and Python bytecode caches
(``__pycache__``), which are neither hashed nor copied. A folder is refused when it is missing,
not a folder, or holds

- a symbolic link that is absolute or leads outside the folder, by its own text or through
  other links (``x -> b/c/..`` with ``b/c -> ..``; inside the sandbox nothing outside it exists),
- anything but folders, regular files and links (a fifo, a socket, a device),
- a file that cannot be read,
- more than :data:`MAX_BYTES` bytes of files or :data:`MAX_ENTRIES` entries.

Its **content hash** (:func:`tree_sha256`) covers every taken entry's relative path and kind, a
file's executable bit and bytes, a link's target; it goes into the run config
(``agent.dir_sha256``), so an edit is a new config (the run id changes).

Each run gets a **snapshot**: a copy in the run folder (``agent-code/``, outside the workspace),
made read-only and hashed again. Files are read one path component at a time without following
links, and at most the size the scan saw, so a folder that changes under the copy (a file or
folder swapped for a link, a device or a fifo) is refused, never read through. A copy whose
hash is not the planned one (the folder changed after the run was planned) fails the run. The
sandboxes show the snapshot read-only at :data:`~rexmle.runner.sandbox.AGENT_DIR_INSIDE`
(``/agent``: bwrap, docker, apptainer); the local sandbox has no mount namespace and gives the
snapshot's own path, and refuses such an agent when the harness is root (its agent would be
root too: :meth:`~rexmle.runner.sandbox.Sandbox.agent_code_problem`). ``$AGENT_DIR`` names it
either way. The snapshot is removed when the run ends.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rexmle.errors import RexmleError, SpecError

if TYPE_CHECKING:
    from rexmle.agents.registry import AgentSpec

MAX_BYTES = 64 << 20
"""Most bytes of files an agent folder may hold (64 MiB)."""
MAX_ENTRIES = 10_000
"""Most entries (folders, files, links) an agent folder may hold."""
SKIPPED_FOLDERS = frozenset({".git", ".hg", ".svn", "__pycache__"})
"""Folders neither hashed nor copied, wherever they are in the tree."""
SNAPSHOT_DIR = "agent-code"
"""The snapshot's folder inside the run folder."""
AGENT_DIR_VARIABLE = "AGENT_DIR"


class AgentDirError(SpecError):
    """An agent folder that cannot be shipped (the message says why and what to do)."""


class AgentCodeChanged(RexmleError):
    """The agent folder's content is not the one the run was planned with."""


@dataclass(frozen=True)
class CodeEntry:
    """One taken entry of an agent folder."""

    relative: str
    """``/``-separated path below the folder."""
    kind: str
    """``dir``, ``file`` or ``link``."""
    executable: bool = False
    size: int = 0
    target: str = ""
    """A link's target, as written."""


def scan(root: Path) -> list[CodeEntry]:
    """Every taken entry of the agent folder ``root``, sorted by path (see the module docstring).

    Raises:
        AgentDirError: the folder is missing, not a folder, or holds what it may not hold.
    """
    if not root.exists():
        msg = f"{root}: no such folder"
        raise AgentDirError(msg)
    if not root.is_dir():
        msg = f"{root}: not a folder (give the folder that holds the agent's code)"
        raise AgentDirError(msg)
    entries: list[CodeEntry] = []
    total = 0
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as found:
                children = sorted(found, key=lambda e: e.name)
        except OSError as error:
            msg = f"{root}: cannot read {folder}: {error.strerror}"
            raise AgentDirError(msg) from error
        for child in children:
            path = Path(child.path)
            relative = path.relative_to(root).as_posix()
            mode = child.stat(follow_symlinks=False).st_mode
            if stat.S_ISLNK(mode):
                entries.append(CodeEntry(relative, "link", target=_inside_link(root, path)))
            elif stat.S_ISDIR(mode):
                if child.name in SKIPPED_FOLDERS:
                    continue
                entries.append(CodeEntry(relative, "dir"))
                stack.append(path)
            elif stat.S_ISREG(mode):
                size = child.stat(follow_symlinks=False).st_size
                total += size
                entries.append(CodeEntry(relative, "file", bool(mode & 0o111), size))
            else:
                msg = (
                    f"{root}: {relative} is not a file, folder or link (a fifo, "
                    "socket or device): remove it from the agent's folder"
                )
                raise AgentDirError(msg)
            if len(entries) > MAX_ENTRIES or total > MAX_BYTES:
                what = (
                    f"more than {MAX_ENTRIES:,} entries"
                    if len(entries) > MAX_ENTRIES
                    else f"more than {MAX_BYTES >> 20} MiB of files"
                )
                msg = (
                    f"{root}: {what}, the cap of an agent's code folder ({MAX_ENTRIES:,} "
                    f"entries, {MAX_BYTES >> 20} MiB; .git and __pycache__ are not counted): "
                    "ship the code only, and large files (weights, data) some other way"
                )
                raise AgentDirError(msg)
    return sorted(entries, key=lambda e: e.relative)


def _inside_link(root: Path, link: Path) -> str:
    """The target of ``link`` when it stays inside ``root`` (checked lexically, link by link)."""
    target = os.readlink(link)
    where = link.relative_to(root).as_posix()
    if os.path.isabs(target):
        msg = (
            f"{root}: the link {where} -> {target} is absolute; inside the sandbox "
            "only relative links within the folder work: make it relative or copy the file in"
        )
        raise AgentDirError(msg)
    resolved = os.path.normpath(os.path.join(os.path.dirname(where), target))
    real = Path(os.path.realpath(link))
    top = Path(os.path.realpath(root))
    if resolved == ".." or resolved.startswith("../") or not _within(real, top):
        msg = (
            f"{root}: the link {where} -> {target} leads outside the folder, which "
            "the sandbox does not show: copy what it points to into the folder"
        )
        raise AgentDirError(msg)
    return target


def _within(path: Path, top: Path) -> bool:
    return path == top or top in path.parents


def _open_entry(root: Path, relative: str) -> int:
    """A read descriptor of the regular file ``relative`` below ``root``, opened one path
    component at a time without following any link, so a folder or file swapped for a link or a
    special file after :func:`scan` is refused instead of read.

    Raises:
        AgentDirError: a component is a link or not a folder, or the file is not regular.
    """
    parts = relative.split("/")
    descriptors = [os.open(root, os.O_RDONLY | os.O_DIRECTORY)]
    try:
        for part in parts[:-1]:
            flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
            descriptors.append(os.open(part, flags, dir_fd=descriptors[-1]))
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
        descriptor = os.open(parts[-1], flags, dir_fd=descriptors[-1])
    except OSError as error:
        msg = (
            f"{root}: cannot open {relative} without following a link ({error.strerror}): "
            "the folder changed while it was read; run again once it holds still"
        )
        raise AgentDirError(msg) from error
    finally:
        for opened in descriptors:
            os.close(opened)
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        msg = f"{root}: {relative} is no longer a regular file: remove what replaced it"
        raise AgentDirError(msg)
    return descriptor


def tree_sha256(root: Path, entries: list[CodeEntry] | None = None) -> str:
    """The content hash of the agent folder (see the module docstring), 64 hex digits.

    Raises:
        AgentDirError: as :func:`scan`, or a file that cannot be read.
    """
    digest = hashlib.sha256()
    for entry in scan(root) if entries is None else entries:
        digest.update(f"{entry.kind}\0{entry.relative}\0".encode("utf-8", "surrogateescape"))
        if entry.kind == "link":
            digest.update(entry.target.encode("utf-8", "surrogateescape") + b"\0")
        elif entry.kind == "file":
            digest.update(b"x\0" if entry.executable else b"-\0")
            digest.update(_file_sha256(root, entry.relative))
    return digest.hexdigest()


def _file_sha256(root: Path, relative: str) -> bytes:
    try:
        with open(_open_entry(root, relative), "rb") as stream:
            return hashlib.file_digest(stream, "sha256").digest()
    except OSError as error:
        msg = f"{root}: cannot read {relative}: {error.strerror}"
        raise AgentDirError(msg) from error


def _copy_entry(source: Path, entry: CodeEntry, path: Path) -> None:
    """Copy the file ``entry`` of ``source`` to ``path``: at most the size :func:`scan` saw.

    Raises:
        AgentDirError: as :func:`_open_entry`, or the file grew since it was scanned.
    """
    with open(_open_entry(source, entry.relative), "rb") as stream, open(path, "xb") as copy:
        left = entry.size
        while left > 0 and (chunk := stream.read(min(left, 1 << 20))):
            copy.write(chunk)
            left -= len(chunk)
        if stream.read(1):
            msg = f"{source}: {entry.relative} grew while it was copied: run again"
            raise AgentDirError(msg)


_hashes: dict[tuple[str, tuple[tuple[str, int, int, int, int], ...]], str] = {}


def planned_sha256(root: Path) -> str:
    """:func:`tree_sha256` of ``root``, computed again only when a file's size, mode, mtime or
    inode changed since the last call in this process (planning many runs of one agent).

    Raises:
        AgentDirError: as :func:`scan`.
    """
    entries = scan(root)
    signature = tuple(_signature(root, e) for e in entries)
    key = (os.fspath(root), signature)
    if key not in _hashes:
        _hashes[key] = tree_sha256(root, entries)
    return _hashes[key]


def _signature(root: Path, entry: CodeEntry) -> tuple[str, int, int, int, int]:
    info = (root / entry.relative).lstat()
    return entry.relative, info.st_mode, info.st_size, info.st_mtime_ns, info.st_ino


def take_snapshot(source: Path, target: Path, *, expected_sha256: str) -> Path:
    """Copy the agent folder ``source`` to ``target`` (replaced), read-only, and check its hash.

    Raises:
        AgentDirError: the folder cannot be shipped any more (as :func:`scan`).
        AgentCodeChanged: the copy's hash is not ``expected_sha256``.
    """
    remove_snapshot(target)
    entries = scan(source)
    target.mkdir(parents=True)
    for entry in entries:
        path = target / entry.relative
        if entry.kind == "dir":
            path.mkdir()
        elif entry.kind == "link":
            path.symlink_to(entry.target)
        else:
            _copy_entry(source, entry, path)
            path.chmod(0o555 if entry.executable else 0o444)
    found = tree_sha256(target)
    for entry in reversed(entries):
        if entry.kind == "dir":
            (target / entry.relative).chmod(0o555)
    target.chmod(0o555)
    if found != expected_sha256:
        msg = (
            f"the agent's code in {source} changed after the run was planned (sha256 planned "
            f"{expected_sha256[:12]}…, now {found[:12]}…): run `rexmle run` again; the new code "
            "is a new config (--force-config replaces the old runs)"
        )
        raise AgentCodeChanged(msg)
    return target


def remove_snapshot(target: Path) -> None:
    """Remove a snapshot (read-only folders included); nothing when there is none."""
    from rexmle.runner.workspace import remove_tree

    remove_tree(target)


def pin_agent_code(spec: AgentSpec) -> AgentSpec:
    """``spec`` with ``dir_sha256`` set to its folder's content hash (unchanged without ``dir``).

    Raises:
        AgentDirError: the folder cannot be shipped, or its hash is not the one the declaration
            pins.
    """
    if spec.dir is None:
        return spec
    found = planned_sha256(Path(spec.dir))
    if spec.dir_sha256 is not None and spec.dir_sha256 != found:
        msg = (
            f"agent {spec.id!r}: the code in {spec.dir} has sha256 {found}, but the declaration "
            f"pins dir_sha256 {spec.dir_sha256}: restore that content or change the pin"
        )
        raise AgentDirError(msg)
    return spec.model_copy(update={"dir_sha256": found})


def snapshot_note(snapshot: Path, expected_sha256: str) -> str | None:
    """A warning for run.json when the agent changed its snapshot (possible only where the
    sandbox cannot mount it read-only: the local sandbox, whose agent owns the copy's files and
    may make them writable again), else None.
    """
    try:
        found = tree_sha256(snapshot)
    except AgentDirError as error:
        found = f"unreadable ({error})"
    if found == expected_sha256:
        return None
    return (
        f"the agent changed the copy of its code at $AGENT_DIR during the run (sha256 now "
        f"{found[:12]}…, planned {expected_sha256[:12]}…): this sandbox does not hold it read-only"
    )
