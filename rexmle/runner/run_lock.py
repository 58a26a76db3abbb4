"""One process per run folder: an exclusive ``flock`` on ``<run folder>/.lock``.

The lock is taken before the folder is cleaned and held until the final record is written.
``flock`` locks belong to an open file, so they end with the process that holds them (a killed
harness frees its runs at once) and, on NFS, the client forwards them to the server, so two
machines sharing a runs dir also run a job once. Child processes (agent, grader) never inherit
the descriptor (``close_fds``), so an orphaned agent cannot keep a run locked.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

LOCK_NAME = ".lock"


class RunLocked(Exception):
    """Another process holds the run folder's lock."""


@contextlib.contextmanager
def run_folder_lock(folder: Path) -> Iterator[Path]:
    """Hold the exclusive lock of ``folder`` (created 0700 when missing) for the ``with`` block.

    Yields:
        The lock file's path.

    Raises:
        RunLocked: another process holds it; nothing in the folder was touched.
    """
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK_NAME
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as error:
            msg = f"another rexmle process is running this job (it holds {path})"
            raise RunLocked(msg) from error
        os.ftruncate(descriptor, 0)
        os.write(descriptor, f"{os.getpid()}\n".encode())
        yield path
    finally:
        os.close(descriptor)
