"""Lifelines: how the shim learns that the harness is gone, however it died and whenever.

The harness holds one end of a connection for the whole run and never writes to it; the shim
holds the other end. The kernel closes the harness's end when the harness process ends (a crash,
the OOM killer, a Slurm kill), so the shim sees end of stream (or a reset) exactly then, also when
that happened before the shim started, which a parent-death signal cannot see, and also where the
shim is not the harness's child at all (inside a container, whose engine starts it).

- :class:`PipeLifeline`: a pipe whose read end is inherited (local and bwrap sandboxes; bwrap
  passes inherited descriptors on). Shim option ``--lifeline FD``.
- :class:`SocketLifeline`: a listening unix socket in a private folder bound read-only into the
  container (docker, apptainer: an engine passes no descriptors). The shim connects at start; a
  refused connection means the harness is already gone. Connections are never accepted: when the
  listener closes, every connection still queued on it is reset. Shim option
  ``--lifeline-socket PATH``.
"""

from __future__ import annotations

import contextlib
import os
import socket

from rexmle.runner.leftovers import SocketDir

SOCKET_NAME = "lifeline.sock"
BACKLOG = 16
"""Connections the listener queues: the shim's, and room for the agent's own attempts."""


class PipeLifeline:
    """A pipe: the shim inherits the read end, this process alone holds the write end.

    Both ends are non-inheritable: only the shim's start passes the read end on (``pass_fds``).
    """

    def __init__(self) -> None:
        self.shim_fd, self._harness_fd = os.pipe()

    def shim_args(self) -> list[str]:
        """The shim's options naming this lifeline."""
        return ["--lifeline", str(self.shim_fd)]

    def cut(self) -> None:
        """Close both ends: the shim, if still alive, ends and kills what it started."""
        for name in ("shim_fd", "_harness_fd"):
            fd = getattr(self, name)
            if fd >= 0:
                os.close(fd)
                setattr(self, name, -1)


class SocketLifeline:
    """A listening unix socket at ``folder/lifeline.sock`` in a fresh claimed folder.

    The folder is a :class:`~rexmle.runner.leftovers.SocketDir`: a harness that dies leaves it
    behind and the next start removes it.
    """

    def __init__(self) -> None:
        self._claim = SocketDir()
        self.folder = self._claim.path
        self.path = self.folder / SOCKET_NAME
        self._listener: socket.socket | None = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._listener.bind(str(self.path))
            self._listener.listen(BACKLOG)
        except OSError:
            self.cut()
            raise

    def shim_args(self) -> list[str]:
        """The shim's options naming this lifeline (containers see the socket at its host path)."""
        return ["--lifeline-socket", str(self.path)]

    def cut(self) -> None:
        """Close the listener (the shim's queued connection is reset) and remove the folder."""
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.close()
            self._listener = None
            self._claim.release()
