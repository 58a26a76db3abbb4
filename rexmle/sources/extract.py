"""Safe extraction of zip and tar archives: the one unpacker of source archives and uploads.

Every member is checked before anything is written, with the path rules of
:mod:`rexmle.tasks.paths` and the caller's :class:`ArchiveLimits`: a name that is empty,
absolute, has ``..``, a NUL byte, or is over-long or too deep; symbolic or hard links whose
target lies outside the extraction folder (or any link, where the caller allows none); device
files or FIFOs; more members or more bytes than allowed. Any of these rejects the whole archive.
The scan reads members one by one and stops at the first limit passed, so a compressed bomb
is never decompressed further than the limit. Members are then written into a temporary folder
beside the target (checked again against symlinks created on the way), and moved into the
target only when the whole archive is out, so a failed extraction leaves the target as it was.
"""

from __future__ import annotations

import lzma
import os
import posixpath
import re
import shutil
import stat
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rexmle.sources.errors import ArchiveTooLarge, DamagedArchiveError, UnsafeArchiveError
from rexmle.tasks.paths import PathRules, is_inside, relative_path_problem, shown_name

ArchiveFormat = Literal["zip", "tar"]

_TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
_MAX_LISTED_PROBLEMS = 10
_READ_ERRORS = (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error, lzma.LZMAError)


SOURCE_PATHS = PathRules(backslash_separates=True)
"""Member names of a source archive: backslashes are separators (archives made on Windows)."""


@dataclass(frozen=True)
class ArchiveLimits:
    """What one caller accepts in an archive (the rules are the same for every caller)."""

    paths: PathRules = SOURCE_PATHS
    """The limits on member names."""
    allow_links: bool = True
    """Symbolic and hard links whose target stays inside; False: regular files and folders only."""
    max_members: int | None = None
    """Most members (files, folders, links); None: no limit."""
    max_unpacked_bytes: int | None = None
    """Most bytes of regular files in all; None: no limit (the caller checks free disk)."""
    folder: str = "extraction folder"
    """What the target is called in messages."""


SOURCE_LIMITS = ArchiveLimits()
"""A challenge's downloaded archive: links inside allowed, no count or size limit."""


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


def member_path_problem(name: str, limits: ArchiveLimits = SOURCE_LIMITS) -> str | None:
    r"""Why an archive member name is unsafe, or None when it stays inside the target.

    The rules are :func:`rexmle.tasks.paths.relative_path_problem` under ``limits.paths``; with
    the default limits backslashes count as separators, so a Windows-made ``..\x`` is caught.
    """
    problem = relative_path_problem(name, limits.paths)
    if problem is None:
        return None
    wording = {
        "empty": "empty member name",
        "nul": "NUL byte in member name",
        "absolute": f"absolute path, outside the {limits.folder}",
        "parent": f"'..' component, outside the {limits.folder}",
    }
    return wording.get(problem.rule, problem.message)


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


class _Scan:
    """Counts and problems of the members seen so far; raises once a limit is passed."""

    def __init__(self, label: str, limits: ArchiveLimits) -> None:
        self.label = label
        self.limits = limits
        self.members = 0
        self.unpacked_bytes = 0
        self.problems: list[str] = []

    def add(self, name: str, *, size: int, kind: str, link_target: str | None = None) -> None:
        """Check one member: ``kind`` is file, dir, symlink, hardlink or special."""
        limits = self.limits
        self.members += 1
        if limits.max_members is not None and self.members > limits.max_members:
            msg = f"{self.label} holds more than {limits.max_members} members"
            raise UnsafeArchiveError(msg)
        self.unpacked_bytes += size if kind == "file" else 0
        if (
            limits.max_unpacked_bytes is not None
            and self.unpacked_bytes > limits.max_unpacked_bytes
        ):
            msg = (
                f"{self.label} unpacks to over {limits.max_unpacked_bytes} bytes (the limit); "
                f"{self.unpacked_bytes} bytes after {self.members} members"
            )
            raise ArchiveTooLarge(msg)
        problem = member_path_problem(name, limits)
        if (
            problem is None
            and kind in ("symlink", "hardlink", "special")
            and not limits.allow_links
        ):
            problem = "not a regular file or folder"
        elif problem is None and kind in ("symlink", "hardlink"):
            problem = link_target_problem(name, link_target or "", hard=kind == "hardlink")
        elif problem is None and kind == "special":
            problem = "device file, FIFO or other special member"
        if problem is not None:
            self.problems.append(f"{shown_name(name)}: {problem}")

    def raise_if_unsafe(self) -> None:
        """Raise UnsafeArchiveError listing the problems found, if any."""
        if not self.problems:
            return
        shown = "\n  - ".join(self.problems[:_MAX_LISTED_PROBLEMS])
        more = len(self.problems) - _MAX_LISTED_PROBLEMS
        tail = f"\n  ... and {more} more" if more > 0 else ""
        msg = (
            f"refusing to extract {self.label}: {len(self.problems)} unsafe member(s) "
            f"(outside the {self.limits.folder}, links or special files):\n  - {shown}{tail}"
        )
        raise UnsafeArchiveError(msg)


def _zip_kind(info: zipfile.ZipInfo) -> str:
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        return "symlink"
    if info.is_dir() or stat.S_ISDIR(mode):
        return "dir"
    return "file" if stat.S_IFMT(mode) in (0, stat.S_IFREG) else "special"


def _tar_kind(member: tarfile.TarInfo) -> str:
    if member.issym():
        return "symlink"
    if member.islnk():
        return "hardlink"
    if member.isdir():
        return "dir"
    return "file" if member.isfile() else "special"


def _scan_zip(archive: zipfile.ZipFile, scan: _Scan) -> list[zipfile.ZipInfo]:
    infos = archive.infolist()
    for info in infos:
        kind = _zip_kind(info)
        link_target = None
        if kind == "symlink" and scan.limits.allow_links:
            link_target = archive.read(info).decode("utf-8", "replace")
        scan.add(info.filename, size=info.file_size, kind=kind, link_target=link_target)
    scan.raise_if_unsafe()
    return infos


def _scan_tar(members: Iterable[tarfile.TarInfo], scan: _Scan) -> list[tarfile.TarInfo]:
    seen = []
    for member in members:  # one by one: a bomb stops at the first limit passed
        scan.add(member.name, size=member.size, kind=_tar_kind(member), link_target=member.linkname)
        seen.append(member)
    scan.raise_if_unsafe()
    return seen


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
    limits: ArchiveLimits = SOURCE_LIMITS,
    label: str | None = None,
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
        limits: what the caller accepts (see :class:`ArchiveLimits`).
        label: how messages name the archive (default: its path).
        on_member: called with (members done, members in total) for progress display.

    Returns:
        Counts of what was written.

    Raises:
        ArchiveTooLarge: the regular files add up to more than ``limits.max_unpacked_bytes``.
        UnsafeArchiveError: a member breaks a rule of the module docstring, or there are more
            than ``limits.max_members``; nothing is written in that case.
        DamagedArchiveError: the archive cannot be read to its end, or a member cannot be
            written (e.g. a file and a folder of one name).
        ValueError: the file is not a zip or tar archive.
    """
    shown = str(archive) if label is None else label
    fmt = archive_format(archive)
    if fmt is None:
        msg = f"{shown} is neither a zip nor a tar archive; set 'extract: false' for it"
        raise ValueError(msg)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.extracting-", dir=target.parent))
    scan = _Scan(shown, limits)
    try:
        if fmt == "zip":
            result = _extract_zip(archive, staging, scan, on_member)
        else:
            result = _extract_tar(archive, staging, scan, on_member)
        _move_into(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return result


def _extract_zip(
    archive: Path, staging: Path, scan: _Scan, on_member: Callable[[int, int], None] | None
) -> ExtractionResult:
    root = Path(os.path.realpath(staging))
    try:
        zf = zipfile.ZipFile(archive)
    except (*_READ_ERRORS, OSError) as err:
        msg = f"{scan.label} is not a readable zip archive: {err}"
        raise DamagedArchiveError(msg) from err
    with zf:
        infos = _scan_zip(zf, scan)
        members = files = n_bytes = 0
        for done, info in enumerate(infos, start=1):
            parts = [p for p in info.filename.replace("\\", "/").split("/") if p not in ("", ".")]
            if not parts:
                continue
            dest = root.joinpath(*parts)
            _check_inside(scan.label, info.filename, dest.parent, root)
            if dest.is_symlink():
                msg = f"refusing to extract {scan.label}: {info.filename!r} would write through a link"
                raise UnsafeArchiveError(msg)
            kind = _zip_kind(info)
            members += 1
            try:
                if kind == "dir":
                    dest.mkdir(parents=True, exist_ok=True)
                elif kind == "symlink":
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    link_target = zf.read(info).decode("utf-8")
                    _check_inside(scan.label, info.filename, dest.parent / link_target, root)
                    os.symlink(link_target, dest)
                else:
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    with zf.open(info) as src, dest.open("wb") as out:
                        shutil.copyfileobj(src, out, 1 << 20)
                    files += 1
                    n_bytes += info.file_size
            except (*_READ_ERRORS, OSError, ValueError) as err:
                raise _damaged(scan.label, info.filename, err) from err
            if on_member is not None:
                on_member(done, len(infos))
    return ExtractionResult(members, files, n_bytes)


def _extract_tar(
    archive: Path, staging: Path, scan: _Scan, on_member: Callable[[int, int], None] | None
) -> ExtractionResult:
    try:
        tf = tarfile.open(archive)  # noqa: SIM115 - closed below
    except (*_READ_ERRORS, OSError) as err:
        msg = f"{scan.label} is not a readable tar archive: {err}"
        raise DamagedArchiveError(msg) from err
    with tf:
        try:
            members = _scan_tar(tf, scan)
        except _READ_ERRORS as err:
            msg = f"{scan.label}: the tar archive is damaged: {err}"
            raise DamagedArchiveError(msg) from err
        kept = [m for m in members if posixpath.normpath(m.name.replace("\\", "/")) != "."]
        current: dict[str, Any] = {"done": 0, "name": ""}

        def checked(member: tarfile.TarInfo, dest_path: str) -> tarfile.TarInfo | None:
            # The data filter resolves symlinks already on disk, so a link chain that only
            # escapes once earlier members exist is still refused.
            try:
                safe = tarfile.data_filter(member, dest_path)
            except tarfile.FilterError as err:
                msg = f"refusing to extract {scan.label}: {member.name!r}: {err}"
                raise UnsafeArchiveError(msg) from err
            current["done"] += 1
            current["name"] = member.name
            if on_member is not None:
                on_member(int(current["done"]), len(kept))
            return safe

        try:
            tf.extractall(staging, members=kept, filter=checked)
        except (*_READ_ERRORS, OSError, ValueError) as err:
            raise _damaged(scan.label, str(current["name"]), err) from err
        files = [m for m in kept if m.isfile()]
    return ExtractionResult(len(kept), len(files), sum(m.size for m in files))


def _damaged(label: str, name: str, err: BaseException) -> DamagedArchiveError:
    reason = err.strerror if isinstance(err, OSError) and err.strerror else err
    msg = f"{label}: member {name!r} cannot be unpacked: {reason}"
    return DamagedArchiveError(msg)


def _check_inside(label: str, name: str, path: Path, root: Path) -> None:
    if not is_inside(root, path):
        msg = (
            f"refusing to extract {label}: {name!r} resolves to {os.path.realpath(path)}, "
            "outside the extraction folder (through a link extracted earlier)"
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
