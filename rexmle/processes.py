"""Facts about operating-system processes that any layer may ask (a leaf: imports no rexmle)."""

from __future__ import annotations

import os


def pid_is_alive(pid: int) -> bool:
    """Whether a process with this pid exists (it may belong to another user)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
