"""Safe extraction of zip and tar archives.

Every member is checked before anything is written: absolute paths, ``..`` components,
symbolic or hard links whose target lies outside the extraction folder, and device files
or FIFOs reject the whole archive. Members are written into a temporary folder beside the
target (checked again against symlinks created on the way), and moved into the target
only when the whole archive is out, so a failed extraction leaves the target as it was.
"""

from __future__ import annotations

import os
import posixpath
import re
import shutil
import stat
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from rexmle.sources.errors import UnsafeArchiveError

ArchiveFormat = Literal["zip", "tar"]

_TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
_MAX_LISTED_PROBLEMS = 10


@dataclass(frozen=True)
class ExtractionResult:
    """What an extraction wrote."""

    member_count: int
    """Archive members extracted (files, folders and links; the ``.`` entry excluded)."""
    file_count: int
    """Regular files among them."""
    uncompressed_bytes: int
    """Sum of the regular files' sizes."""


def archive_format(path: Path) -> ArchiveFormat | None:
    """``"zip"`` or ``"tar"`` by file name, else by content; None when not an archive."""
    name = path.name.lower()
    if name.endswith(".zip"):
        return "zip"
    if name.endswith(_TAR_SUFFIXES):
        return "tar"
    if zipfile.is_zipfile(path):
        return "zip"
    if tarfile.is_tarfile(path):
        return "tar"
    return None


def member_path_problem(name: str) -> str | None:
    """Why an archive member name is unsafe, or None when it stays inside the target.

    Backslashes count as separators, so a Windows-made ``..\\x`` is caught too.
    """
    if not name:
        return "empty member name"
    if "\x00" in name:
        return "NUL byte in member name"
    norm = name.replace("\\", "/")
    if norm.startswith("/") or re.match(r"^[A-Za-z]:", norm):
        return "absolute path"
    if ".." in norm.split("/"):
        return "'..' component leaves the extraction folder"
    return None


def link_target_problem(member: str, target: str, *, hard: bool) -> str | None:
    """Why a link member is unsafe, or None when its target stays inside the extraction folder.

    Args:
        member: the link's own member name.
        target: the link's target as stored in the archive.
        hard: a hard link (target relative to the archive root) rather than a symlink
            (target relative to the link's folder).
    """
    norm_target = target.replace("\\", "/")
    if not norm_target or norm_target.startswith("/") or re.match(r"^[A-Za-z]:", norm_target):
        return f"link to absolute path {target!r}"
    start = "" if hard else posixpath.dirname(member.replace("\\", "/"))
    resolved = posixpath.normpath(posixpath.join(start, norm_target))
    if resolved == ".." or resolved.startswith("../"):
        return f"link to {target!r} points outside the extraction folder"
    return None


def _members_of_zip(archive: zipfile.ZipFile) -> tuple[list[zipfile.ZipInfo], list[str]]:
    problems: list[str] = []
    for info in archive.infolist():
        problem = member_path_problem(info.filename)
        mode = info.external_attr >> 16
        if problem is None and stat.S_ISLNK(mode):
            target = archive.read(info).decode("utf-8", "replace")
            problem = link_target_problem(info.filename, target, hard=False)
        elif problem is None and stat.S_IFMT(mode) not in (0, stat.S_IFREG, stat.S_IFDIR):
            problem = "device file, FIFO or socket"
        if problem is not None:
            problems.append(f"{info.filename!r}: {problem}")
    return archive.infolist(), problems


def _members_of_tar(archive: tarfile.TarFile) -> tuple[list[tarfile.TarInfo], list[str]]:
    members = archive.getmembers()
    problems: list[str] = []
    for member in members:
        problem = member_path_problem(member.name)
        if problem is None and member.issym():
            problem = link_target_problem(member.name, member.linkname, hard=False)
        elif problem is None and member.islnk():
            problem = link_target_problem(member.name, member.linkname, hard=True)
        elif problem is None and not (member.isfile() or member.isdir()):
            problem = "device file, FIFO or other special member"
        if problem is not None:
            problems.append(f"{member.name!r}: {problem}")
    return members, problems


def _raise_if_unsafe(archive: Path, problems: list[str]) -> None:
    if not problems:
        return
    shown = "\n  - ".join(problems[:_MAX_LISTED_PROBLEMS])
    more = len(problems) - _MAX_LISTED_PROBLEMS
    tail = f"\n  ... and {more} more" if more > 0 else ""
    msg = (
        f"refusing to extract {archive}: {len(problems)} unsafe member(s) would land outside "
        f"the extraction folder or are special files:\n  - {shown}{tail}"
    )
    raise UnsafeArchiveError(msg)


def uncompressed_size(archive: Path) -> int:
    """Sum of the regular files' sizes in an archive (for the free-disk check).

    Raises:
        ValueError: the file is not a zip or tar archive.
    """
    fmt = archive_format(archive)
    if fmt == "zip":
        with zipfile.ZipFile(archive) as zf:
            return sum(info.file_size for info in zf.infolist() if not info.is_dir())
    if fmt == "tar":
        with tarfile.open(archive) as tf:
            return sum(m.size for m in tf.getmembers() if m.isfile())
    msg = f"{archive} is neither a zip nor a tar archive"
    raise ValueError(msg)


def safe_extract(
    archive: Path,
    target: Path,
    *,
    on_member: Callable[[int, int], None] | None = None,
) -> ExtractionResult:
    """Extract a zip or tar(.gz/.bz2/.xz) archive into ``target``, refusing unsafe members.

    Members go to a temporary folder beside ``target`` first; when all are written they
    are moved into ``target`` (created if needed; existing entries with the same names are
    replaced, other entries are kept). On any error the temporary folder is removed and
    ``target`` is unchanged.

    Args:
        archive: the archive file.
        target: folder to extract into.
        on_member: called with (members done, members in total) for progress display.

    Returns:
        Counts of what was written.

    Raises:
        UnsafeArchiveError: a member is absolute, has ``..``, links outside, or is a device
            file; nothing is written in that case.
        ValueError: the file is not a zip or tar archive.
    """
    fmt = archive_format(archive)
    if fmt is None:
        msg = f"{archive} is neither a zip nor a tar archive; set 'extract: false' for it"
        raise ValueError(msg)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.extracting-", dir=target.parent))
    try:
        if fmt == "zip":
            result = _extract_zip(archive, staging, on_member)
        else:
            result = _extract_tar(archive, staging, on_member)
        _move_into(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return result


def _extract_zip(
    archive: Path, staging: Path, on_member: Callable[[int, int], None] | None
) -> ExtractionResult:
    root = Path(os.path.realpath(staging))
    with zipfile.ZipFile(archive) as zf:
        infos, problems = _members_of_zip(zf)
        _raise_if_unsafe(archive, problems)
        members = files = n_bytes = 0
        for done, info in enumerate(infos, start=1):
            parts = [p for p in info.filename.replace("\\", "/").split("/") if p not in ("", ".")]
            if not parts:
                continue
            dest = root.joinpath(*parts)
            _check_inside(archive, info.filename, dest.parent, root)
            if dest.is_symlink():
                msg = f"refusing to extract {archive}: {info.filename!r} would write through a link"
                raise UnsafeArchiveError(msg)
            mode = info.external_attr >> 16
            members += 1
            if info.is_dir():
                dest.mkdir(parents=True, exist_ok=True)
            elif stat.S_ISLNK(mode):
                dest.parent.mkdir(parents=True, exist_ok=True)
                link_target = zf.read(info).decode("utf-8")
                _check_inside(archive, info.filename, dest.parent / link_target, root)
                os.symlink(link_target, dest)
            else:
                dest.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, dest.open("wb") as out:
                    shutil.copyfileobj(src, out, 1 << 20)
                files += 1
                n_bytes += info.file_size
            if on_member is not None:
                on_member(done, len(infos))
    return ExtractionResult(members, files, n_bytes)


def _extract_tar(
    archive: Path, staging: Path, on_member: Callable[[int, int], None] | None
) -> ExtractionResult:
    with tarfile.open(archive) as tf:
        members, problems = _members_of_tar(tf)
        _raise_if_unsafe(archive, problems)
        kept = [m for m in members if posixpath.normpath(m.name.replace("\\", "/")) != "."]
        counter = {"done": 0}

        def checked(member: tarfile.TarInfo, dest_path: str) -> tarfile.TarInfo | None:
            # The data filter resolves symlinks already on disk, so a link chain that only
            # escapes once earlier members exist is still refused.
            try:
                safe = tarfile.data_filter(member, dest_path)
            except tarfile.FilterError as err:
                msg = f"refusing to extract {archive}: {member.name!r}: {err}"
                raise UnsafeArchiveError(msg) from err
            counter["done"] += 1
            if on_member is not None:
                on_member(counter["done"], len(kept))
            return safe

        tf.extractall(staging, members=kept, filter=checked)
        files = [m for m in kept if m.isfile()]
    return ExtractionResult(len(kept), len(files), sum(m.size for m in files))


def _check_inside(archive: Path, name: str, path: Path, root: Path) -> None:
    resolved = Path(os.path.realpath(path))
    if resolved != root and not resolved.is_relative_to(root):
        msg = (
            f"refusing to extract {archive}: {name!r} resolves to {resolved}, outside the "
            "extraction folder (through a link extracted earlier)"
        )
        raise UnsafeArchiveError(msg)


def _move_into(source: Path, target: Path) -> None:
    """Move the content of ``source`` into ``target``, merging folders, replacing files."""
    if not target.exists():
        os.replace(source, target)
        return
    if not target.is_dir() or target.is_symlink():
        msg = f"cannot extract into {target}: it exists and is not a folder"
        raise NotADirectoryError(msg)
    for entry in source.iterdir():
        dest = target / entry.name
        is_real_dir = entry.is_dir() and not entry.is_symlink()
        if is_real_dir and dest.is_dir() and not dest.is_symlink():
            _move_into(entry, dest)
            continue
        if dest.is_symlink() or dest.is_file():
            dest.unlink()
        elif dest.is_dir():
            shutil.rmtree(dest)
        os.replace(entry, dest)
