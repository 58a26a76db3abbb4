"""Names that become folders (runs groups, agents, conditions, experiments): one rule for all.

A folder name starts with a letter or a digit and holds only letters, digits, ``_``, ``.`` and
``-`` (:data:`NAME_PATTERN`): never a path separator, never ``..``, never an absolute path, so a
run folder always lies inside the runs root.
"""

from __future__ import annotations

import re

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
_NAME = re.compile(NAME_PATTERN)


def folder_name(value: str, *, what: str) -> str:
    """``value`` when it is a folder name (see the module docstring).

    ``what`` names the value in the error (e.g. ``--group``).

    Raises:
        ValueError: ``value`` is not a folder name.
    """
    if not _NAME.fullmatch(value):
        msg = (
            f"{what} {value!r} is not a folder name: use letters, digits, '_', '.' and '-', "
            "starting with a letter or digit (no '/', no '..')"
        )
        raise ValueError(msg)
    return value


def require_folder_names(names: dict[str, str | None]) -> None:
    """Check every given value of ``names`` (what it is -> value; None: not given).

    Raises:
        ValueError: a value is not a folder name.
    """
    for what, value in names.items():
        if value is not None:
            folder_name(value, what=what)
