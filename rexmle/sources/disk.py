"""Free-disk checks before downloading or extracting."""

from __future__ import annotations

import shutil
from pathlib import Path

from rexmle.sources.errors import DiskSpaceError

MARGIN_BYTES = 64 << 20
"""Kept free beyond what a step needs (logs, manifests, file-system overhead)."""


def human_bytes(n_bytes: float) -> str:
    """``1536`` -> ``'1.5 KiB'``."""
    value = float(n_bytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def free_bytes(folder: Path) -> int:
    """Free bytes on the file system holding ``folder`` (or its nearest existing parent)."""
    probe = folder.resolve()
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return shutil.disk_usage(probe).free


def ensure_free_space(folder: Path, needed_bytes: int, *, purpose: str) -> None:
    """Fail before starting when ``folder``'s file system lacks ``needed_bytes`` (+ margin).

    Raises:
        DiskSpaceError: with needed and available bytes.
    """
    if needed_bytes <= 0:
        return
    available = free_bytes(folder)
    if needed_bytes + MARGIN_BYTES > available:
        msg = (
            f"not enough free disk space to {purpose}: needs {needed_bytes} bytes "
            f"({human_bytes(needed_bytes)}) + {human_bytes(MARGIN_BYTES)} margin, but "
            f"{folder} has {available} bytes ({human_bytes(available)}) free. Free some space "
            "or point REXMLE_DATA_DIR / --data-dir at a larger disk."
        )
        raise DiskSpaceError(msg, needed_bytes=needed_bytes, available_bytes=available)
