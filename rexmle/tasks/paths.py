"""Resolving path cells of a submission safely (spec README §2.3)."""

from __future__ import annotations

from pathlib import Path, PurePosixPath


def resolve_submission_path(folder: Path, cell: str) -> tuple[Path | None, str | None]:
    """Resolve a relative POSIX path cell inside ``folder``.

    Returns ``(path, None)`` for a regular file inside the folder, else ``(None, problem)`` where the
    problem says what is wrong: absolute, a ``..`` component, escaping the folder after following
    symlinks, missing, or not a regular file. No rewriting of the cell is done.
    """
    if "\x00" in cell:
        return None, f"path {cell!r} contains a NUL character"
    if cell.strip() != cell:
        return None, f"path {cell!r} has leading or trailing spaces"
    if "\\" in cell:
        return None, f"path {cell!r} uses backslashes; write relative POSIX paths with '/'"
    pure = PurePosixPath(cell)
    if pure.is_absolute():
        return None, f"path {cell!r} is absolute; paths are relative to the submission folder"
    if ".." in pure.parts:
        return None, f"path {cell!r} contains '..'; paths must stay inside the submission folder"
    if cell.endswith("/"):
        return None, f"path {cell!r} ends with '/'; name a file"
    try:
        root = folder.resolve()
        resolved = folder.joinpath(*pure.parts).resolve(strict=False)
        if resolved != root and root not in resolved.parents:
            return None, f"path {cell!r} resolves outside the submission folder (to {resolved})"
        if not resolved.exists():
            return None, f"file {cell!r} does not exist in the submission folder"
        if not resolved.is_file():
            return None, f"{cell!r} is not a regular file"
    except (OSError, RuntimeError, ValueError) as err:
        return None, f"path {cell!r} cannot be resolved ({err})"
    return resolved, None
