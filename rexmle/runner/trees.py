"""Folder trees an agent wrote: walked, cleaned and removed without trusting their shape.

An agent controls the depth, the number of entries and the names of everything under its
workspace. Every function here walks with :func:`os.scandir` and an explicit stack (never
recursion, so 10,000 nested folders cost memory, not a ``RecursionError``), never follows a
symbolic link, and accepts any name the filesystem holds: names that are not UTF-8 arrive as
``str`` with surrogate escapes and are shown with :func:`printable_name`.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SPECIAL_BITS = stat.S_ISUID | stat.S_ISGID
"""Mode bits never left on anything an agent wrote (setuid, setgid)."""


def printable_name(name: str | os.PathLike[str]) -> str:
    r"""``name`` as valid UTF-8 text for records: undecodable bytes become ``\xNN`` escapes."""
    return os.fsencode(name).decode("utf-8", errors="backslashreplace")


@dataclass(frozen=True)
class TreeEntry:
    """One entry met by :func:`walk_tree`."""

    path: str
    """Its path (``str``, surrogate-escaped where the name is not UTF-8)."""
    relative: str
    """Its path relative to the walked root, ``/``-separated."""
    depth: int
    """1 for the root's own entries, 2 for theirs, ..."""
    entry: os.DirEntry[str]


def walk_tree(root: Path) -> Iterator[TreeEntry]:
    """Every entry under ``root`` in name order, parents before children, links not followed.

    Folders are entered only when they are real folders (``is_dir(follow_symlinks=False)``);
    entries that vanish or cannot be read while walking are skipped.
    """
    stack: list[tuple[str, str, int]] = [(os.fspath(root), "", 1)]
    while stack:
        folder, prefix, depth = stack.pop()
        try:
            with os.scandir(folder) as entries:
                found = sorted(entries, key=lambda e: e.name)
        except OSError:
            continue
        below: list[tuple[str, str, int]] = []
        for entry in found:
            relative = f"{prefix}{entry.name}"
            yield TreeEntry(path=entry.path, relative=relative, depth=depth, entry=entry)
            with contextlib.suppress(OSError):
                if entry.is_dir(follow_symlinks=False):
                    below.append((entry.path, f"{relative}/", depth + 1))
        stack.extend(reversed(below))  # folders entered in name order


def strip_special_bits(root: Path) -> int:
    """Clear setuid and setgid bits on every file and folder under ``root`` (and ``root``).

    Returns:
        The number of entries whose mode was changed.
    """
    changed = 0
    paths = [os.fspath(root)] + [item.path for item in walk_tree(root)]
    for path in paths:
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            continue
        if stat.S_ISLNK(mode) or not mode & SPECIAL_BITS:
            continue
        with contextlib.suppress(OSError):
            os.chmod(path, stat.S_IMODE(mode) & ~SPECIAL_BITS, follow_symlinks=False)
            changed += 1
    return changed


def remove_tree_iteratively(root: Path) -> None:
    """Delete ``root`` and everything under it, whatever its depth, without following links.

    Read-only folders are made writable first (an agent may have removed its own write bit).
    A link in place of ``root`` is removed itself.

    Raises:
        OSError: an entry could not be removed (the message names it).
    """
    path = os.fspath(root)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(mode):
        os.unlink(path)
        return
    folders = [path]
    for item in walk_tree(root):
        if item.entry.is_dir(follow_symlinks=False):
            folders.append(item.path)
    for folder in folders:
        with contextlib.suppress(OSError):
            os.chmod(folder, 0o700)
    for folder in reversed(folders):
        with os.scandir(folder) as entries:
            names = [e.name for e in entries if not e.is_dir(follow_symlinks=False)]
        for name in names:
            os.unlink(os.path.join(folder, name))
        os.rmdir(folder)


COPY_CHUNK_BYTES = 1 << 20


def copy_file_sparse(source: str, destination: str) -> int:
    """Copy the regular file ``source`` to a new ``destination``, keeping its holes as holes.

    Only the data regions (found with ``SEEK_DATA``/``SEEK_HOLE``) are written; the copy is
    then cut to the source's length, so a 2 GiB file holding 4 KiB of data stays 4 KiB on
    disk. The copy gets the default mode (no setuid/setgid/execute bits carried over).

    Returns:
        The number of data bytes written.
    """
    written = 0
    with open(source, "rb") as src, open(destination, "xb") as dst:
        size = os.fstat(src.fileno()).st_size
        position = 0
        while position < size:
            try:
                start = os.lseek(src.fileno(), position, os.SEEK_DATA)
            except OSError:
                break  # ENXIO: only a hole remains
            end = os.lseek(src.fileno(), start, os.SEEK_HOLE)
            src.seek(start)
            dst.seek(start)
            remaining = end - start
            while remaining > 0:
                chunk = src.read(min(COPY_CHUNK_BYTES, remaining))
                if not chunk:
                    break
                dst.write(chunk)
                remaining -= len(chunk)
                written += len(chunk)
            position = end
        dst.truncate(size)
    return written
