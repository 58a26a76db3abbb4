"""The ``bwrap`` sandbox: bubblewrap with the system read-only and only the workspace writable.

Mounts, in this order (later mounts cover earlier ones):

1. only the system folders read-only (``/usr``, ``/etc``, ``/opt`` and the ``/bin``, ``/lib*``,
   ``/sbin`` links or folders), never ``/`` as a whole: other data roots, checkouts, shared disks
   and home folders elsewhere on the machine do not exist inside; a fresh ``/dev`` (plus the
   NVIDIA device nodes when present), ``/proc``, and private tmpfs on ``/tmp`` and ``/var/tmp``;
2. tmpfs over the home folders (``$HOME``, ``/root``, ``/home``);
3. the Python installation, the virtual environment and the ``rexmle`` package folder itself
   read-only (they may live under a hidden home), so ``python -m rexmle.agents.baseline`` works;
   then the request's read-only folders (an llm agent's environment and its Python);
4. tmpfs over the hidden folders of the request: the data root and the runs root;
5. the workspace (and the validation server's socket folder) read-write at their own paths,
   with the workspace's ``data/`` re-bound read-only.

Every capability is dropped (``--cap-drop ALL``): even when the harness runs as root, the agent
cannot unmount the tmpfs that hides a folder, mount anything or remount ``data/`` writable.
PID, IPC and UTS namespaces are private; the network namespace too when the agent has no
network (relays in the shim then keep the validation and gateway URLs working). The sandbox dies with the
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


SYSTEM_FOLDERS = ("usr", "etc", "opt", "bin", "sbin", "lib", "lib32", "lib64", "libx32")


def system_mounts() -> list[str]:
    """bwrap arguments that make the system folders (or their links) appear read-only."""
    argv: list[str] = []
    for name in SYSTEM_FOLDERS:
        path = Path("/") / name
        if path.is_symlink():
            argv += ["--symlink", str(path.readlink()), str(path)]
        elif path.is_dir():
            argv += ["--ro-bind", str(path), str(path)]
    return argv


def readable_roots() -> list[Path]:
    """Folders an agent must be able to read: the interpreter, the venv, the rexmle package.

    The package folder itself (``.../rexmle``), never its parent: in an editable install the
    parent is the checkout, which may hold prepared data (e.g. a demo folder).
    """
    package_root = Path(rexmle.__file__).resolve().parent
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
        "--cap-drop",
        "ALL",
    ]
    if not request.network:
        argv.append("--unshare-net")
    argv += system_mounts()
    argv += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/var/tmp"]
    for device in sorted(glob.glob("/dev/nvidia*")) + sorted(glob.glob("/dev/dri")):
        argv += ["--dev-bind-try", device, device]
    for home in home_folders():
        argv += ["--tmpfs", str(home)]
    for root in readable_roots():
        argv += ["--ro-bind", str(root), str(root)]
    for folder in request.readonly:
        argv += ["--ro-bind", str(Path(folder).resolve()), str(Path(folder).resolve())]
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
    # the sandbox's own root (where bwrap created the mount points) becomes read-only too
    argv += ["--remount-ro", "/", "--chdir", workspace, "--"]
    return argv


class BwrapSandbox(Sandbox):
    """Bubblewrap isolation (see the module docstring)."""

    kind = "bwrap"

    def info(self, *, network: bool) -> SandboxInfo:
        """Filesystem isolated; network isolated when the agent has none."""
        return SandboxInfo(kind="bwrap", isolated=True, network_isolated=not network)

    def run(self, request: SandboxRequest) -> SandboxResult:
        """Run the command inside bubblewrap under the request's limits."""
        relays = () if request.network else request.relays
        inner = shim_argv(request.argv, memory_limit_mb=request.memory_limit_mb, relays=relays)
        return run_process_group(request, [*bwrap_argv(request), *inner])
