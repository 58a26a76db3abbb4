"""Start a harness helper (grader, validation check) under a memory limit and tied to its parent.

``python -m rexmle.runner.limits --parent PID [--memory BYTES] -- COMMAND...`` is a launcher: it
asks the kernel to SIGKILL it when its parent dies (``prctl(PR_SET_PDEATHSIG)``), exits at once if
the parent ``PID`` is already gone, sets ``RLIMIT_AS`` (address space, which bounds every
allocation) to ``BYTES`` and replaces itself by ``COMMAND`` (``execvp``), which keeps both. With
``--cgroup FOLDER`` (repeatable) it first moves itself into each cgroup folder (writing its pid
to ``cgroup.procs``), so the command and everything it starts are born inside
(:mod:`rexmle.runner.sandbox.cgroups`). The
limit is per process: worker processes the command starts inherit the same limit each. Nothing
runs in the parent between fork and exec (no ``preexec_fn``), so the launcher is safe to use from
threads.

Exit codes of the launcher itself: 125 when the parent was gone before the command started, 126
when the limit or the death signal cannot be set, 127 when the command cannot be executed.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import resource
import signal
import sys

DEFAULT_GRADE_MEMORY_BYTES = 16 << 30
"""Default address-space limit of each grader process (``rexmle run --grade-memory``)."""
DEFAULT_VALIDATION_MEMORY_BYTES = 8 << 30
"""Default address-space limit of each validation check (``rexmle run --validation-memory``)."""
_PR_SET_PDEATHSIG = 1
EXIT_PARENT_GONE = 125
EXIT_SETUP_FAILED = 126
EXIT_NOT_EXECUTABLE = 127


def module_argv(module: str, python: str | None = None) -> list[str]:
    """``python -P -m module``: a harness module in a child interpreter (this one by default).

    ``-P`` keeps the working folder off the import path, so a folder named ``rexmle`` where the
    user stands never shadows the installed package; ``PYTHONPATH`` still applies (a checkout
    used through it keeps working).
    """
    return [python or sys.executable, "-P", "-m", module]


def limited_argv(
    argv: list[str], *, memory_bytes: int | None, cgroup_args: list[str] | None = None
) -> list[str]:
    """``argv`` wrapped by the launcher: killed with this process, at most ``memory_bytes``,
    inside the cgroups ``cgroup_args`` name (``--cgroup FOLDER`` pairs).
    """
    launcher = [*module_argv("rexmle.runner.limits"), "--parent", str(os.getpid())]
    if memory_bytes is not None:
        launcher += ["--memory", str(int(memory_bytes))]
    launcher += list(cgroup_args or [])
    return [*launcher, "--", *argv]


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_PDEATHSIG) failed: {os.strerror(err)}")


def main(argv: list[str] | None = None) -> int:
    """Entry point (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m rexmle.runner.limits")
    parser.add_argument("--parent", type=int, required=True)
    parser.add_argument("--memory", type=int, default=None)
    parser.add_argument("--cgroup", action="append", default=[])
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given after --")
    try:
        _die_with_parent()
        if os.getppid() != args.parent:  # the parent died before the death signal was armed
            return EXIT_PARENT_GONE
        for folder in args.cgroup:
            with open(os.path.join(folder, "cgroup.procs"), "w", encoding="ascii") as procs:
                procs.write(str(os.getpid()))
        if args.memory is not None:
            resource.setrlimit(resource.RLIMIT_AS, (args.memory, args.memory))
    except (OSError, ValueError, AttributeError) as err:  # AttributeError: a libc without prctl
        sys.stderr.write(f"rexmle.runner.limits: {err}\n")
        return EXIT_SETUP_FAILED
    try:
        os.execvp(command[0], command)
    except OSError as err:
        sys.stderr.write(f"rexmle.runner.limits: cannot run {command[0]!r}: {err}\n")
    return EXIT_NOT_EXECUTABLE


if __name__ == "__main__":
    sys.exit(main())
