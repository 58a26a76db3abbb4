"""Path safety: relative POSIX names that stay inside a folder (spec README §2.3).

One rule set for every name that comes from outside: a submission's path cells (grading), the
members of a downloaded source archive and the members of an uploaded submission archive. A name
is checked in this order: empty, NUL byte, backslash, absolute (``/...`` or a drive ``C:``),
a ``..`` component, over-long (the whole name or one component, in UTF-8 bytes), too deep. Each
caller keeps its own limits (:class:`PathRules`) and its own wording of a problem
(:attr:`PathProblem.rule`); :func:`is_inside` then checks the name on disk, links followed.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

PATH_MAX_BYTES = 4096
"""Longest path Linux accepts (bytes of UTF-8)."""
NAME_MAX_BYTES = 255
"""Longest single path component Linux filesystems accept (bytes of UTF-8)."""
_SHOWN_CHARACTERS = 200
_DRIVE = re.compile(r"^[A-Za-z]:")

PathRule = Literal["empty", "nul", "backslash", "absolute", "parent", "too_long", "too_deep"]


@dataclass(frozen=True)
class PathRules:
    """The limits one caller puts on relative names."""

    max_depth: int | None = None
    """Most folders above the last component (``a/b/c`` is 2 deep); None: no limit."""
    max_bytes: int = PATH_MAX_BYTES
    """Longest whole name, in bytes of UTF-8."""
    max_part_bytes: int = NAME_MAX_BYTES
    """Longest single component, in bytes of UTF-8."""
    backslash_separates: bool = False
    """True: a backslash is read as ``/`` (archives made on Windows); False: it is refused."""


@dataclass(frozen=True)
class PathProblem:
    """Why a name is unsafe: the rule it breaks and a phrase that follows the name."""

    rule: PathRule
    message: str
    """E.g. ``is 70 folders deep (at most 64)``; the caller puts the name in front."""


def shown_name(name: str) -> str:
    """``repr(name)``, cut after 200 characters (with the full length said) for messages."""
    if len(name) <= _SHOWN_CHARACTERS:
        return repr(name)
    return f"{name[:_SHOWN_CHARACTERS]!r}... ({len(name)} characters)"


def relative_path_problem(name: str, rules: PathRules) -> PathProblem | None:
    """The first rule ``name`` breaks as a relative POSIX path inside a folder, or None.

    ``.`` components and repeated slashes are harmless and allowed; ``..b`` is a plain name.
    """
    if not name:
        return PathProblem("empty", "is empty")
    if "\x00" in name:
        return PathProblem("nul", "has a NUL byte in its name")
    if "\\" in name and not rules.backslash_separates:
        return PathProblem("backslash", "uses backslashes; write relative POSIX paths with '/'")
    posix = name.replace("\\", "/")
    if posix.startswith("/") or _DRIVE.match(posix):
        return PathProblem("absolute", "is absolute")
    parts = PurePosixPath(posix).parts
    if ".." in parts:
        return PathProblem("parent", "contains a '..' component")
    n_bytes = len(name.encode("utf-8", errors="surrogateescape"))
    longest = max((len(p.encode("utf-8", errors="surrogateescape")) for p in parts), default=0)
    if n_bytes > rules.max_bytes or longest > rules.max_part_bytes:
        return PathProblem(
            "too_long",
            f"has a name of {n_bytes} bytes or a part over {rules.max_part_bytes} bytes "
            f"(at most {rules.max_bytes} in all)",
        )
    depth = len(parts) - 1
    if rules.max_depth is not None and depth > rules.max_depth:
        return PathProblem("too_deep", f"is {depth} folders deep (at most {rules.max_depth})")
    return None


def is_inside(root: Path, path: Path) -> bool:
    """Whether ``path`` lies in ``root`` (or is it) once every symbolic link is followed.

    Both sides are resolved with :func:`os.path.realpath`; a missing tail is fine.
    """
    real_root = Path(os.path.realpath(root))
    resolved = Path(os.path.realpath(path))
    return resolved == real_root or resolved.is_relative_to(real_root)


CELL_RULES = PathRules()
"""A submission's path cells: the filesystem's length limits, any depth, no backslash."""

_CELL_WORDING: dict[PathRule, str] = {
    "nul": "contains a NUL character",
    "backslash": "uses backslashes; write relative POSIX paths with '/'",
    "absolute": "is absolute; paths are relative to the submission folder",
    "parent": "contains '..'; paths must stay inside the submission folder",
}


def resolve_submission_path(folder: Path, cell: str) -> tuple[Path | None, str | None]:
    """Resolve a relative POSIX path cell inside ``folder``.

    Returns ``(path, None)`` for a regular file inside the folder, else ``(None, problem)`` where
    the problem says what is wrong: a rule of :func:`relative_path_problem` broken, leading or
    trailing spaces, a trailing ``/``, escaping the folder after following symlinks, missing, or
    not a regular file. No rewriting of the cell is done.
    """
    if "\x00" not in cell and cell.strip() != cell:
        return None, f"path {cell!r} has leading or trailing spaces"
    problem = relative_path_problem(cell, CELL_RULES)
    if problem is not None and problem.rule in _CELL_WORDING:
        return None, f"path {cell!r} {_CELL_WORDING[problem.rule]}"
    if problem is not None and problem.rule != "empty":  # an empty cell names the folder itself
        return None, f"path {shown_name(cell)} cannot be resolved: it {problem.message}"
    if cell.endswith("/"):
        return None, f"path {cell!r} ends with '/'; name a file"
    try:
        resolved = folder.joinpath(*PurePosixPath(cell).parts).resolve(strict=False)
        if not is_inside(folder, resolved):
            return None, f"path {cell!r} resolves outside the submission folder (to {resolved})"
        if not resolved.exists():
            return None, f"file {cell!r} does not exist in the submission folder"
        if not resolved.is_file():
            return None, f"{cell!r} is not a regular file"
    except (OSError, RuntimeError, ValueError) as err:
        return None, f"path {cell!r} cannot be resolved ({err})"
    return resolved, None
