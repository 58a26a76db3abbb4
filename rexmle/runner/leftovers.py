"""Folders a killed harness leaves behind, claimed while in use and removed on the next start.

Each run's validation socket folder (``$TMPDIR/rexmle-v-*``) holds ``.owner``, locked with
``flock`` by the process using it for as long as it does. :func:`remove_stale_socket_dirs`
removes the ones whose lock nobody holds (their owner died), never one still in use. The same
claim (:class:`ClaimedDir`, :func:`remove_stale_dirs`) records each run's cgroups
(``$TMPDIR/rexmle-cg-*``, :mod:`rexmle.runner.sandbox.cgroups`) and the bwrap sandbox's copies
of the environment (``$TMPDIR/rexmle-env-*``, :mod:`rexmle.runner.sandbox.neutral_env`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

SOCKET_DIR_PREFIX = "rexmle-v-"
OWNER_LOCK = ".owner"
UNCLAIMED_GRACE_S = 600.0
"""A socket folder without ``.owner`` is left alone this long (it may be being created)."""


class ClaimedDir:
    """A fresh private folder ``$TMPDIR/<prefix>*``, claimed (locked) until :meth:`release`."""

    def __init__(self, prefix: str) -> None:
        self.path = Path(tempfile.mkdtemp(prefix=prefix))
        self._fd = os.open(
            self.path / OWNER_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600
        )
        fcntl.flock(self._fd, fcntl.LOCK_EX)

    def release(self) -> None:
        """Remove the folder, then drop the claim."""
        shutil.rmtree(self.path, ignore_errors=True)
        os.close(self._fd)


class SocketDir(ClaimedDir):
    """A fresh private socket folder (``$TMPDIR/rexmle-v-*``), claimed until :meth:`release`."""

    def __init__(self) -> None:
        super().__init__(SOCKET_DIR_PREFIX)


def _is_stale(folder: Path, now: float) -> bool:
    try:
        descriptor = os.open(folder / OWNER_LOCK, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return now - folder.lstat().st_mtime > UNCLAIMED_GRACE_S
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(descriptor)
    return True


def remove_stale_dirs(
    prefix: str,
    temp_dir: Path | None = None,
    *,
    before_removal: Callable[[Path], None] | None = None,
) -> list[Path]:
    """Remove this user's claimed folders ``<prefix>*`` whose owner is gone; returns them.

    ``before_removal`` runs on each stale folder first (it undoes what the folder lists).
    """
    root = Path(temp_dir or tempfile.gettempdir())
    removed: list[Path] = []
    now = time.time()
    for folder in sorted(root.glob(f"{prefix}*")):
        with contextlib.suppress(OSError):
            info = folder.lstat()
            if not folder.is_dir() or folder.is_symlink() or info.st_uid != os.geteuid():
                continue
            if _is_stale(folder, now):
                if before_removal is not None:
                    before_removal(folder)
                shutil.rmtree(folder)
                removed.append(folder)
    return removed


def remove_stale_socket_dirs(temp_dir: Path | None = None) -> list[Path]:
    """Remove this user's socket folders whose owner is gone; returns what was removed."""
    return remove_stale_dirs(SOCKET_DIR_PREFIX, temp_dir)
