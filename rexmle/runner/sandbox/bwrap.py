"""The ``bwrap`` sandbox: bubblewrap with the system read-only and only the workspace writable.

Mounts, in this order (later mounts cover earlier ones):

1. ``/`` read-only; a fresh ``/dev`` (plus the NVIDIA device nodes when present), ``/proc``, and
   a private tmpfs on ``/tmp``;
2. tmpfs over the home folders (``$HOME``, ``/root``, ``/home``);
3. the Python installation, the virtual environment and the ``rexmle`` package read-only again
   (they may live under a hidden home), so ``python -m rexmle.agents.baseline`` works;
4. tmpfs over the hidden folders of the request: the data root and the runs root;
5. the workspace (and the validation server's socket folder) read-write at their own paths,
   with the workspace's ``data/`` re-bound read-only.

PID, IPC and UTS namespaces are private; the network namespace too when the agent has no
network (a relay in the shim then keeps the validation URL working). The sandbox dies with the
harness (``--die-with-parent``); the time limit is enforced as in the local sandbox.
"""

from __future__ import annotations

import functools
import glob
import shutil
import subprocess
import sys
from pathlib import Path

import rexmle
from rexmle.runner.sandbox import Sandbox, SandboxInfo, SandboxRequest, SandboxResult
from rexmle.runner.sandbox.local import run_process_group, shim_argv

PROBE_TIMEOUT_S = 20.0


@functools.cache
def bwrap_problem() -> str | None:
    """Why bwrap cannot run here (probed once per process), or None when it works."""
    exe = shutil.which("bwrap")
    if exe is None:
        return "bwrap is not installed"
    probe = [
        exe,
        "--die-with-parent",
        "--unshare-pid",
        "--unshare-net",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
        "true",
    ]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=PROBE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"bwrap probe failed: {error}"
    if done.returncode != 0:
        detail = done.stderr.decode(errors="replace").strip() or f"exit {done.returncode}"
        return f"bwrap probe failed: {detail}"
    return None


def readable_roots() -> list[Path]:
    """Folders an agent must be able to read: the interpreter, the venv, the rexmle package."""
    package_root = Path(rexmle.__file__).resolve().parent.parent
    roots = {
        Path(sys.prefix),
        Path(sys.base_prefix),
        Path(sys.exec_prefix),
        Path(sys.executable).resolve().parent.parent,
        package_root,
    }
    roots |= {r.resolve() for r in roots}
    return sorted(r for r in roots if r.is_dir())


def home_folders() -> list[Path]:
    """Home folders hidden from agents."""
    found = {Path.home(), Path("/root"), Path("/home")}
    return sorted(p for p in found if p.is_dir() and p != Path("/"))


def bwrap_argv(request: SandboxRequest) -> list[str]:
    """The complete bubblewrap command line for ``request`` (see the module docstring)."""
    argv = [
        shutil.which("bwrap") or "bwrap",
        "--die-with-parent",
        "--new-session",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
    ]
    if not request.network:
        argv.append("--unshare-net")
    argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for device in sorted(glob.glob("/dev/nvidia*")) + sorted(glob.glob("/dev/dri")):
        argv += ["--dev-bind-try", device, device]
    for home in home_folders():
        argv += ["--tmpfs", str(home)]
    for root in readable_roots():
        argv += ["--ro-bind", str(root), str(root)]
    for hidden in request.hidden:
        if Path(hidden).is_dir():
            argv += ["--tmpfs", str(Path(hidden).resolve())]
    workspace = str(request.workspace.resolve())
    argv += ["--bind", workspace, workspace]
    data = request.workspace.resolve() / "data"
    if data.is_dir():
        argv += ["--ro-bind", str(data), str(data)]
    for folder in request.shared_writable:
        argv += ["--bind", str(folder), str(folder)]
    argv += ["--chdir", workspace, "--"]
    return argv


class BwrapSandbox(Sandbox):
    """Bubblewrap isolation (see the module docstring)."""

    kind = "bwrap"

    def info(self, *, network: bool) -> SandboxInfo:
        """Filesystem isolated; network isolated when the agent has none."""
        return SandboxInfo(kind="bwrap", isolated=True, network_isolated=not network)

    def run(self, request: SandboxRequest) -> SandboxResult:
        """Run the command inside bubblewrap under the request's limits."""
        relay = None if request.network else request.relay
        inner = shim_argv(request.argv, memory_limit_mb=request.memory_limit_mb, relay=relay)
        return run_process_group(request, [*bwrap_argv(request), *inner])
