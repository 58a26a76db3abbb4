"""What every locked environment shares: its cache, its tools, its install steps, its stamp.

A locked environment is a virtualenv installed from a lock file of exact versions and sha256
hashes (``uv venv`` + ``uv pip sync --require-hashes``), in a folder of the agents cache named by
the lock's hash. Its stamp ``installed.json`` is written last (atomically), with at least the
``lock_hash``, the interpreter it was built from and when: a folder whose stamp carries the
expected hash and whose entry point exists is installed; anything else is installed again.

Definitions:

- **agents cache**: ``$REXMLE_AGENTS_DIR``, else ``$XDG_CACHE_HOME/rexmle-agents``, else
  ``~/.cache/rexmle-agents``, as an absolute path (:func:`agents_cache_dir`).
- **uv**: the one beside this interpreter (a dependency of rexmle), else the ``uv`` Python
  package's binary, else ``uv`` on ``PATH`` (:func:`uv_executable`).
- **base interpreter**: the harness's own Python installation, not its virtualenv's link
  (:func:`base_interpreter`); sandboxes show that installation, so a venv made from it works
  inside them too.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from rexmle.errors import RexmleError

STAMP = "installed.json"
AGENTS_DIR_ENV = "REXMLE_AGENTS_DIR"

Progress = Callable[[str], None]
"""Receives each output line of an install step."""


class EnvInstallError(RexmleError):
    """A locked environment could not be installed (the message says which step and why)."""


def agents_cache_dir() -> Path:
    """The agents cache (see the module docstring), as an absolute path."""
    explicit = os.environ.get(AGENTS_DIR_ENV)
    if explicit:
        return Path(explicit).expanduser().absolute()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return (base / "rexmle-agents").absolute()


def uv_executable() -> str:
    """The ``uv`` program (see the module docstring).

    Raises:
        EnvInstallError: uv is not installed.
    """
    beside = Path(sys.executable).parent / "uv"
    if beside.is_file():
        return str(beside)
    try:
        import uv

        return str(uv.find_uv_bin())
    except (ImportError, FileNotFoundError):
        pass
    found = shutil.which("uv")
    if found is None:
        msg = "uv is not installed; install rexmle with its dependencies (pip install -e .)"
        raise EnvInstallError(msg)
    return found


def base_interpreter() -> Path:
    """The base Python of the harness (not its virtualenv's link): locked venvs are made from it."""
    base = Path(getattr(sys, "_base_executable", sys.executable))
    return base if base.is_file() else Path(sys.executable)


def uv_environment() -> dict[str, str]:
    """The host environment for uv's steps: no uv configuration, no active virtualenv and no
    ``PYTHONPATH`` (neither may leak into the environment being built).
    """
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["UV_NO_CONFIG"] = "1"
    return env


def venv_command(venv: Path) -> list[str]:
    """``uv venv`` of ``venv`` from :func:`base_interpreter`."""
    return [uv_executable(), "venv", "--no-config", "--python", str(base_interpreter()), str(venv)]


def run_step(
    argv: list[str],
    what: str,
    progress: Progress = lambda _line: None,
    *,
    log: Path | None = None,
    timeout_s: float | None = None,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> None:
    """Run one install step: each output line goes to ``progress`` (and is appended to ``log``).

    Raises:
        EnvInstallError: the step could not start, ran past ``timeout_s`` or exited non-zero;
            the message names ``what``, the exit code and the step's last output lines.
    """
    progress(f"{what}: {' '.join(argv[:4])} …")
    handle = None if log is None else open(log, "a", encoding="utf-8")  # noqa: SIM115
    where = "" if log is None else f" (log: {log})"
    try:
        if handle is not None:
            handle.write(f"$ {' '.join(argv)}\n")
        try:
            process = subprocess.Popen(
                argv,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                text=True,
                errors="replace",
                env=env,
                cwd=None if cwd is None else str(cwd),
            )
        except OSError as error:
            msg = f"{what} failed: {error}{where}"
            raise EnvInstallError(msg) from error
        fired = threading.Event()

        def kill() -> None:
            fired.set()
            process.kill()

        timer = None if timeout_s is None else threading.Timer(timeout_s, kill)
        if timer is not None:
            timer.start()
        tail: list[str] = []
        try:
            for line in process.stdout or ():
                if handle is not None:
                    handle.write(line)
                line = line.rstrip()
                if line:
                    progress(line)
                    tail = [*tail[-19:], line]
            code = process.wait()
        finally:
            if timer is not None:
                timer.cancel()
        timed_out = fired.is_set()
    finally:
        if handle is not None:
            handle.close()
    if timed_out:
        msg = f"{what} failed: ran past {timeout_s:.0f} s{where}"
        raise EnvInstallError(msg)
    if code != 0:
        detail = "\n".join(tail)
        msg = f"{what} failed (exit {code}){where}:\n{detail}"
        raise EnvInstallError(msg)


def read_stamp(root: Path) -> dict[str, object] | None:
    """The stamp of the environment in ``root``, or None when there is none or it is unreadable."""
    try:
        stamp = json.loads((root / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return stamp if isinstance(stamp, dict) else None


def is_installed(root: Path, lock_hash: str, entry: Path) -> bool:
    """Whether ``root`` holds a complete install of ``lock_hash`` whose ``entry`` exists."""
    stamp = read_stamp(root)
    return stamp is not None and stamp.get("lock_hash") == lock_hash and entry.exists()


def write_stamp(root: Path, lock_hash: str, fields: dict[str, object]) -> dict[str, object]:
    """Write the stamp (last step of an install, atomic): ``lock_hash``, ``fields``, the
    interpreter the venv was made from and the time; returns what was written.
    """
    stamp: dict[str, object] = {
        "lock_hash": lock_hash,
        **fields,
        "python": str(base_interpreter()),
        "installed_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    tmp = root / f".{STAMP}.tmp"
    tmp.write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, root / STAMP)
    return stamp
