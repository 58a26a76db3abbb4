"""Facts about operating-system processes that any layer may ask (a leaf: imports no rexmle)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess


def pid_is_alive(pid: int) -> bool:
    """Whether a process with this pid exists (it may belong to another user)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop_process_group(process: subprocess.Popen[bytes], grace_s: float) -> None:
    """SIGTERM to the process group led by a still running ``process``, SIGKILL after
    ``grace_s`` seconds if it has not exited by then; returns once it is reaped.
    """
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
