"""The ``bwrap`` sandbox: bubblewrap with the system read-only and only the workspace writable.

Mounts, in this order (later mounts cover earlier ones), at neutral paths:

1. only the system folders read-only (``/usr``, ``/etc``, ``/opt`` and the ``/bin``, ``/lib*``,
   ``/sbin`` links or folders), never ``/`` as a whole: other data roots, checkouts, shared disks
   and home folders elsewhere on the machine do not exist inside; a fresh ``/dev`` with only the
   run's own GPU device nodes (see :func:`gpu_devices`), ``/proc``, and size-capped private
   tmpfs on ``/tmp``, ``/var/tmp`` and ``/dev/shm``;
2. small tmpfs over the home folders (``$HOME``, ``/root``, ``/home``);
3. the Python installation read-only at its own path; the neutral copy of the virtual
   environment at ``/sandbox/venv``; the neutral copy of the ``rexmle`` package at
   ``/sandbox/lib/rexmle`` only for the agents that import it (``baseline``, ``dummy``, the llm
   adapters, and command agents for ``data/score.py``); for every other agent it is not there
   at all; then the request's read-only folders (an llm agent's environment) at their paths,
   and the snapshot of the agent's own code read-only at ``/agent`` (``$AGENT_DIR``);
4. the workspace read-write at ``/workspace`` with ``data/`` re-bound read-only, the shim at
   ``/sandbox/shim.py`` and the relay socket folders at ``/sandbox/shared/<n>``.

Command line and environment are rewritten to those paths, so no host path of the data root,
the runs root or the checkout appears in the agent's argv or environment; the data root and
the runs root are not mounted at all (a tmpfs hides one only where it lies under a mounted
folder). The venv, the package and the shim are bound from neutral copies
(:mod:`rexmle.runner.sandbox.neutral_env`), never from the checkout: no file the agent can read
(editable finders, ``direct_url.json``, scripts, bytecode) and no source folder in
``/proc/self/mountinfo`` names the checkout or the venv. The workspace's source folder does show
there: a runs root inside the checkout shows the checkout's path.

Every capability is dropped (``--cap-drop ALL``); PID, IPC, UTS and network namespaces are private.
The shim runs as PID 1 (``--as-pid-1``), not dumpable, so the agent can neither ptrace nor signal
it; when the harness runs as root the agent runs under a private uid (a fresh one per run). Memory
and processes are held by the run's cgroup (:mod:`rexmle.runner.sandbox.cgroups`: tmpfs pages and
every process count; ``/tmp``, ``/var/tmp`` and ``/dev/shm`` are each sized within the memory
limit), and only where no cgroup can be made by RLIMIT_AS and RLIMIT_NPROC. Network: off (only the
relays to the validation server and the gateway), or, when the agent asks for it, outbound only
through slirp4netns with host loopback disabled: the host's 127.0.0.1 services and abstract unix
sockets stay out of reach either way. The sandbox dies with the harness: ``--die-with-parent``, and
the shim's lifeline (:mod:`rexmle.runner.sandbox.lifeline`), which also sees a harness that died
while bwrap was still starting.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import json
import os
import secrets
import shutil
import subprocess
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from rexmle.runner.sandbox import (
    AGENT_DIR_INSIDE,
    Sandbox,
    SandboxInfo,
    SandboxRequest,
    SandboxResult,
)
from rexmle.runner.sandbox.cgroups import HeldLimits, hold_limits
from rexmle.runner.sandbox.lifeline import PipeLifeline
from rexmle.runner.sandbox.local import run_process_group, shim_argv
from rexmle.runner.sandbox.neutral_env import (
    PYCACHE_INSIDE,
    neutral_env,
    package_root,
    virtual_env,
)
from rexmle.runner.trees import walk_tree

PROBE_TIMEOUT_S = 20.0
WORKSPACE_INSIDE = "/workspace"
VENV_INSIDE = "/sandbox/venv"
LIB_INSIDE = "/sandbox/lib"
SHIM_INSIDE = "/sandbox/shim.py"
SHARED_INSIDE = "/sandbox/shared"
HIDING_TMPFS_BYTES = 1 << 20
PRIVATE_UID_BASE = 1 << 30
"""Private uids are drawn from [2^30, 2^30 + 2^24): far above any account on the machine."""


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
GPU_CONTROL_NODES = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset")


def system_mounts() -> list[str]:
    """Bwrap arguments that make the system folders (or their links) appear read-only."""
    argv: list[str] = []
    for name in SYSTEM_FOLDERS:
        path = Path("/") / name
        if path.is_symlink():
            argv += ["--symlink", str(path.readlink()), str(path)]
        elif path.is_dir():
            argv += ["--ro-bind", str(path), str(path)]
    return argv


def python_install() -> Path:
    """The interpreter's installation (``sys.base_prefix``), mounted at its own path."""
    return Path(sys.base_prefix).resolve()


def home_folders() -> list[Path]:
    """Home folders hidden from agents."""
    found = {Path.home(), Path("/root"), Path("/home")}
    return sorted(p for p in found if p.is_dir() and p != Path("/"))


def gpu_devices(env: dict[str, str], dev: Path = Path("/dev")) -> tuple[list[str], dict[str, str]]:
    """The GPU device nodes a run may use, and the environment changes that go with them.

    ``CUDA_VISIBLE_DEVICES`` of integers (the pool's GPU slot): only those ``/dev/nvidiaN``
    (plus the control nodes) are mounted, and inside they are numbered from 0, so the variable
    becomes ``0,1,...``. Set to anything else (empty, UUIDs): no GPU node. Unset: every NVIDIA
    node and ``/dev/dri`` (the run was not limited to some GPUs).
    """
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return sorted(glob.glob(f"{dev}/nvidia*")) + sorted(glob.glob(f"{dev}/dri")), {}
    tokens = [t.strip() for t in visible.split(",") if t.strip()]
    if not tokens or not all(t.isdigit() for t in tokens):
        return [], {}
    nodes = [f"{dev}/nvidia{int(t)}" for t in tokens]
    nodes += [f"{dev}/{name}" for name in GPU_CONTROL_NODES]
    changes = {"CUDA_VISIBLE_DEVICES": ",".join(str(i) for i in range(len(tokens)))}
    return [n for n in nodes if os.path.exists(n)], changes


@dataclass
class SandboxLayout:
    """Host path -> path inside, for every mount the agent's argv or environment may name."""

    translations: list[tuple[str, str]] = field(default_factory=list)

    def add(self, host: Path | str, inside: str) -> None:
        """Map ``host`` (and everything below it) to ``inside``."""
        self.translations.append((os.fspath(host), inside))
        self.translations.sort(key=lambda pair: -len(pair[0]))

    def inside(self, text: str) -> str:
        """``text`` with every mapped host path replaced by its path inside."""
        for host, inside in self.translations:
            text = text.replace(host, inside)
        return text


def _bind(flag: str, source: Path | str, inside: str) -> list[str]:
    """``flag source inside``, preceded by ``--dir`` for each missing parent, made traversable
    (bwrap would create them 0700, which a private uid cannot enter).
    """
    argv: list[str] = []
    for parent in reversed(Path(inside).parents):
        if parent != Path("/") and not any(
            parent == Path("/") / name for name in (*SYSTEM_FOLDERS, "dev", "proc", "tmp")
        ):
            argv += ["--perms", "0755", "--dir", str(parent)]
    return [*argv, flag, str(source), inside]


def _under(path: Path, roots: list[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def bwrap_argv(request: SandboxRequest, layout: SandboxLayout | None = None) -> list[str]:
    """The complete bubblewrap command line for ``request`` (see the module docstring).

    ``layout`` (filled here) receives the host -> inside path mapping.
    """
    layout = layout if layout is not None else SandboxLayout()
    limits = request.limits
    argv = [
        shutil.which("bwrap") or "bwrap",
        "--die-with-parent",
        "--new-session",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-net",
        "--unshare-cgroup-try",
        "--as-pid-1",
        "--cap-drop",
        "ALL",
    ]
    argv += system_mounts()
    argv += ["--dev", "/dev", "--proc", "/proc"]
    for folder, size in (("/tmp", limits.tmp_bytes), ("/var/tmp", limits.tmp_bytes)):
        argv += ["--perms", "1777", "--size", str(size), "--tmpfs", folder]
    argv += ["--perms", "1777", "--size", str(limits.shm_bytes), "--tmpfs", "/dev/shm"]
    devices, _ = gpu_devices(request.env)
    for device in devices:
        argv += ["--dev-bind-try", device, device]
    for home in home_folders():
        argv += ["--size", str(HIDING_TMPFS_BYTES), "--tmpfs", str(home)]
    mounted = [Path("/") / name for name in SYSTEM_FOLDERS]
    install = python_install()
    argv += _bind("--ro-bind", install, str(install))
    mounted.append(install)
    venv = virtual_env()
    package = package_root()
    copies = neutral_env()
    if venv is not None and copies.venv is not None:
        argv += _bind("--ro-bind", copies.venv, VENV_INSIDE)
        layout.add(venv, VENV_INSIDE)
        if venv.resolve() != venv:
            layout.add(venv.resolve(), VENV_INSIDE)
    package_inside_venv = venv is not None and _under(package, [venv.resolve()])
    if package_inside_venv and venv is not None:
        inside = VENV_INSIDE + "/" + package.relative_to(venv.resolve()).as_posix()
        if not request.harness_package:
            argv += ["--size", str(HIDING_TMPFS_BYTES), "--tmpfs", inside]
    elif _under(package, [install]):
        if not request.harness_package:
            argv += ["--size", str(HIDING_TMPFS_BYTES), "--tmpfs", str(package)]
    elif request.harness_package:
        argv += _bind("--ro-bind", copies.package, f"{LIB_INSIDE}/rexmle")
        layout.add(package, f"{LIB_INSIDE}/rexmle")
    for readonly in request.readonly:
        resolved = Path(readonly).resolve()
        argv += _bind("--ro-bind", resolved, str(resolved))
        mounted.append(resolved)
    if request.agent_code is not None:
        argv += _bind("--ro-bind", request.agent_code.resolve(), AGENT_DIR_INSIDE)
        layout.add(request.agent_code, AGENT_DIR_INSIDE)
        layout.add(request.agent_code.resolve(), AGENT_DIR_INSIDE)
    for hidden in request.hidden:
        resolved = Path(hidden).resolve()
        if resolved.is_dir() and _under(resolved, mounted):
            argv += ["--size", str(HIDING_TMPFS_BYTES), "--tmpfs", str(resolved)]
    workspace = request.workspace.resolve()
    argv += ["--bind", str(workspace), WORKSPACE_INSIDE]
    layout.add(request.workspace, WORKSPACE_INSIDE)
    layout.add(workspace, WORKSPACE_INSIDE)
    if (workspace / "data").is_dir():
        argv += ["--ro-bind", str(workspace / "data"), f"{WORKSPACE_INSIDE}/data"]
    for index, writable in enumerate(request.shared_writable):
        inside = f"{SHARED_INSIDE}/{index}"
        argv += _bind("--bind", Path(writable).resolve(), inside)
        layout.add(writable, inside)
        layout.add(Path(writable).resolve(), inside)
    argv += _bind("--ro-bind", copies.shim, SHIM_INSIDE)
    # the sandbox's own root (where bwrap created the mount points) becomes read-only too
    argv += ["--remount-ro", "/", "--chdir", WORKSPACE_INSIDE]
    return argv


def private_uid() -> int | None:
    """A fresh uid for one run's agent when the harness is root (else None: it keeps ours)."""
    if os.geteuid() != 0:
        return None
    return PRIVATE_UID_BASE + secrets.randbelow(1 << 24)


def give_workspace(workspace: Path, uid: int) -> None:
    """Make the workspace the private uid's: every entry the harness put there (submission/,
    .home/, an llm adapter's folders, ...) except ``data/``, whose files are hard links to the
    public data and stay the harness's (bound read-only anyway).
    """
    os.lchown(workspace, uid, uid)
    for item in walk_tree(workspace):
        if item.relative == "data" or item.relative.startswith("data/"):
            continue
        os.lchown(item.path, uid, uid)


def _user_process_count(uid: int) -> int:
    count = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.stat(f"/proc/{entry}").st_uid == uid:
                count += 1
        except OSError:
            continue
    return count


@functools.cache
def slirp4netns_problem() -> str | None:
    """Why network-on agents cannot run here, or None."""
    if shutil.which("slirp4netns") is None:
        return (
            "slirp4netns is not installed: an agent with network needs it for an isolated, "
            "outbound-only network (apt-get install slirp4netns)"
        )
    return None


class OutboundNetwork:
    """slirp4netns attached to the sandbox's network namespace: outbound only, no host loopback.

    Started from bwrap's ``--info-fd`` report (the sandbox's pid); it ends when the harness
    closes its end of ``--exit-fd`` (or dies).
    """

    def __init__(self) -> None:
        info_read, info_write = os.pipe()
        exit_read, exit_write = os.pipe()
        self.fds = {"info_read": info_read, "info_write": info_write}
        self.fds |= {"exit_read": exit_read, "exit_write": exit_write}
        self.info_write = info_write
        self.process: subprocess.Popen[bytes] | None = None

    def _close(self, name: str) -> None:
        descriptor = self.fds.pop(name, None)
        if descriptor is not None:
            os.close(descriptor)

    def bwrap_args(self) -> list[str]:
        """Arguments that make bwrap report its pid on our pipe."""
        return ["--info-fd", str(self.info_write)]

    def attach(self) -> None:
        """Read the sandbox's pid and start slirp4netns on its network namespace."""
        self._close("info_write")
        report = b""
        pid: int | None = None
        while pid is None and (chunk := os.read(self.fds["info_read"], 4096)):
            report += chunk
            with contextlib.suppress(ValueError, KeyError):
                pid = int(json.loads(report)["child-pid"])
        self._close("info_read")
        if pid is None:  # bwrap ended before it set the sandbox up
            return
        self.process = subprocess.Popen(
            [
                "slirp4netns",
                "--configure",
                "--disable-host-loopback",
                "--exit-fd",
                str(self.fds["exit_read"]),
                str(pid),
                "tap0",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(self.fds["exit_read"],),
            start_new_session=True,
        )

    def close(self) -> None:
        """Stop slirp4netns (closing every pipe end still open)."""
        for name in list(self.fds):
            self._close(name)
        if self.process is not None:
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class BwrapSandbox(Sandbox):
    """Bubblewrap isolation (see the module docstring)."""

    kind = "bwrap"

    def info(self, *, network: bool) -> SandboxInfo:
        """Filesystem isolated; network off or isolated outbound-only."""
        return SandboxInfo(
            kind="bwrap",
            isolated=True,
            network_isolated=True,
            network="isolated-outbound" if network else "off",
        )

    def run(self, request: SandboxRequest) -> SandboxResult:
        """Run the command inside bubblewrap under the request's limits."""
        if request.network and (problem := slirp4netns_problem()) is not None:
            return SandboxResult(
                exit_code=None, timed_out=False, cancelled=False, seconds=0.0, error=problem
            )
        held = hold_limits(request, processes=True)
        try:
            result = self._run(replace(request, limits=held.limits), held)
        except BaseException:
            held.abandon()
            raise
        return held.finish(result, private_tmp=True, stderr_path=request.stderr_path)

    def _run(self, request: SandboxRequest, held: HeldLimits) -> SandboxResult:
        layout = SandboxLayout()
        argv = bwrap_argv(request, layout)
        uid = private_uid()
        if uid is not None:  # only the shim (PID 1) uses them, to drop to the private uid
            argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        if uid is not None:
            give_workspace(request.workspace, uid)
        max_processes: int | None = None
        if held.rlimit_processes:  # no pids cgroup: RLIMIT_NPROC, which counts per uid
            max_processes = request.limits.max_processes
            if uid is None:
                max_processes += _user_process_count(os.getuid())
        _, gpu_env = gpu_devices(request.env)
        env = {key: layout.inside(value) for key, value in {**request.env, **gpu_env}.items()}
        if request.harness_package:
            env["PYTHONPATH"] = LIB_INSIDE
        env.setdefault("PYTHONPYCACHEPREFIX", PYCACHE_INSIDE)  # the copies hold no bytecode
        env.setdefault("USER", "agent")
        env.setdefault("LOGNAME", "agent")
        launcher = [layout.inside(sys.executable), "-I", SHIM_INSIDE]
        lifeline = PipeLifeline()  # bwrap passes inherited descriptors on to the shim
        inner = shim_argv(
            [layout.inside(part) for part in request.argv],
            memory_limit_mb=held.rlimit_memory_mb,
            relays=request.relays,
            uid=uid,
            max_processes=max_processes,
            wait_network=request.network,
            launcher=launcher,
            lifeline=lifeline,
        )
        inner = [layout.inside(part) for part in inner]
        network = OutboundNetwork() if request.network else None
        pass_fds: tuple[int, ...] = ()
        if network is not None:
            argv += network.bwrap_args()
            pass_fds = (network.info_write,)
        try:
            return run_process_group(
                request,
                [*argv, "--", *inner],
                env=env,
                pass_fds=pass_fds,
                on_start=None if network is None else network.attach,
                lifeline=lifeline,
                cgroup=held.cgroup,
            )
        finally:
            if network is not None:
                network.close()
