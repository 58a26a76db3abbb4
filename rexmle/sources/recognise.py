"""Find a task's source file in a local folder: by its name, else by its content.

A browser or a colleague may save ``ISLES-2022.zip`` as ``ISLES-2022 (1).zip`` or ``KiTs.zip``.
When no file carries the declared name, the folder's other files are recognised by what is known
of the real file: its size and checksum (pinned in the task or published by a third party),
else the member paths every real copy holds (``holds`` in the task YAML). Nothing is guessed: a
file is taken only when every known value matches, and two candidates for one file are refused.
"""

from __future__ import annotations

import fnmatch
import logging
import tarfile
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rexmle.sources.checksums import algorithms_needed, checksum_problems, file_digests
from rexmle.sources.errors import DownloadError
from rexmle.sources.extract import archive_format

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LocalMatch:
    """A local file taken for a task file, and why."""

    path: Path
    how: str
    """``"by name"``, or what of its content matched (size, checksum, member)."""


def member_names(archive: Path) -> list[str]:
    """Member paths of a zip or tar archive (empty for anything else or an unreadable file)."""
    try:
        fmt = archive_format(archive)
        if fmt == "zip":
            with zipfile.ZipFile(archive) as zf:
                return zf.namelist()
        if fmt == "tar":
            with tarfile.open(archive) as tf:
                return tf.getnames()
    except (OSError, zipfile.BadZipFile, tarfile.TarError):
        return []
    return []


HOLDS_ALTERNATIVES = "|"
"""Separates alternatives in one ``holds`` pattern: ``A|B`` is met by a member matching either."""


def holds_text(pattern: str) -> str:
    """A ``holds`` pattern as a message names it: ``'A'`` or ``'A' or 'B'``."""
    return " or ".join(repr(p) for p in pattern.split(HOLDS_ALTERNATIVES))


def _first_member(names: list[str], pattern: str) -> str | None:
    """The first member matching ``pattern`` or one of its alternatives, files before folders."""
    alternatives = pattern.split(HOLDS_ALTERNATIVES)
    matching = [n for n in names if any(fnmatch.fnmatch(n, a) for a in alternatives)]
    return next((n for n in matching if not n.endswith("/")), next(iter(matching), None))


def _files_in(folders: Iterable[Path], skip: set[str]) -> list[Path]:
    found: list[Path] = []
    for folder in folders:
        if folder.is_dir():
            found += [
                p
                for p in sorted(folder.iterdir())
                if p.is_file() and p.name not in skip and not p.name.endswith(".part")
            ]
    return found


def recognise_by_content(
    context: str,
    folders: list[Path],
    *,
    checksums: dict[str, str | None],
    sizes: dict[str, int | None],
    holds: list[str],
    skip: set[str],
) -> LocalMatch | None:
    """The one file in ``folders`` (not recursive) whose content is that of the task file.

    With a known checksum, a file must match it and every known size; else, with ``holds``, an
    archive must hold a member matching each pattern (``A|B``: either alternative). Names in
    ``skip`` (other declared files) are not considered.

    Returns:
        The match, or None when nothing is known about the content or nothing matches.

    Raises:
        DownloadError: two different files match by members alone.
    """
    known_sizes = {s for s in sizes.values() if s is not None}
    candidates = _files_in(folders, skip)
    if any(checksums.values()):
        for path in candidates:
            size = path.stat().st_size
            if known_sizes and known_sizes != {size}:
                continue
            digests = file_digests(path, algorithms_needed(checksums.values()))
            problems = checksum_problems(
                digests, size, expected=checksums, expected_size_bytes=sizes, source=str(path)
            )
            if not problems:
                matched = ", ".join(f"{c} ({o})" for o, c in checksums.items() if c)
                return LocalMatch(path, f"by content: {size} bytes and {matched}")
        return None
    if not holds:
        return None
    matches = []
    for path in candidates:
        if known_sizes and path.stat().st_size not in known_sizes:
            continue
        names = member_names(path)
        hits = [_first_member(names, pattern) for pattern in holds]
        if names and all(hits):
            matches.append((path, hits))
    if len(matches) > 1:
        listed = ", ".join(str(p) for p, _ in matches)
        msg = (
            f"{context}: several files could be it by their members ({listed}); keep one or "
            "give it the declared name"
        )
        raise DownloadError(msg)
    if not matches:
        return None
    path, hits = matches[0]
    return LocalMatch(path, f"by content: it holds {', '.join(repr(h) for h in hits)}")
