"""The ``local`` sandbox: a subprocess in its own session, killed with all its children at the limit.

The command starts under the shim (:mod:`rexmle.runner.sandbox.shim`) in a new session with a
random job token in its environment (``SANDBOX_JOB_TOKEN``). The shim is a child subreaper tied
to the harness by a lifeline (:mod:`rexmle.runner.sandbox.lifeline`) and kills whatever the
command left behind, even a double-forked daemon that scrubbed its environment, when the command
ends or the harness goes away (also when the harness died while the shim was still starting).
At the limit every process of the session and process group, every descendant found in ``/proc``
and every process carrying the token gets SIGTERM, then SIGKILL after a grace period.
Stdout and stderr are copied into the logs up to a cap. The run has its own cgroup where one can
be made (:mod:`rexmle.runner.sandbox.cgroups`: the memory limit and a process cap over every
process); elsewhere an optional memory limit is RLIMIT_AS.
This sandbox does NOT isolate the filesystem, the network, or the harness from the agent (same
uid: the agent may kill the shim and then outlive the run); every run records that warning.
Under a root harness it refuses an agent with a code folder (:data:`LOCAL_ROOT_AGENT_CODE`): a
root agent could rewrite its own copy or another run's.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import IO, cast

from rexmle.runner.limits import limited_argv
from rexmle.runner.sandbox import Relay, Sandbox, SandboxInfo, SandboxRequest, SandboxResult
from rexmle.runner.sandbox.cgroups import RunCgroup, hold_limits
from rexmle.runner.sandbox.lifeline import PipeLifeline, SocketLifeline
from rexmle.runner.sandbox.shim import process_table

POLL_S = 0.1


def shim_argv(
    argv: list[str],
    *,
    memory_limit_mb: int | None = None,
    relays: tuple[Relay, ...] = (),
    uid: int | None = None,
    max_processes: int | None = None,
    wait_network: bool = False,
    launcher: list[str] | None = None,
    lifeline: PipeLifeline | SocketLifeline | None = None,
) -> list[str]:
    """``argv`` wrapped in the shim: limits, relays, private uid, death with the harness.

    ``launcher`` starts the shim (default: this interpreter, ``-P -m rexmle.runner.sandbox.shim``).
    ``lifeline`` tells the shim that the harness is gone (hand the same one to
    :func:`run_process_group`).
    """
    wrapped = list(launcher or [sys.executable, "-P", "-m", "rexmle.runner.sandbox.shim"])
    if memory_limit_mb is not None:
        wrapped += ["--memory-limit-mb", str(memory_limit_mb)]
    for relay in relays:
        wrapped += ["--relay", f"{relay.port}={relay.socket}"]
    if uid is not None:
        wrapped += ["--uid", str(uid), "--gid", str(uid)]
    if max_processes is not None:
        wrapped += ["--max-processes", str(max_processes)]
    if wait_network:
        wrapped.append("--wait-network")
    if lifeline is not None:
        wrapped += lifeline.shim_args()
    return [*wrapped, "--", *argv]


TOKEN_VARIABLE = "SANDBOX_JOB_TOKEN"


def _carries_token(pid: int, token: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return token in handle.read().split(b"\0")
    except OSError:
        return False


def process_tree(leader: int, token: str | None = None) -> set[int]:
    """Live processes of ``leader``'s session or process group, all their descendants, and every
    process whose environment holds ``SANDBOX_JOB_TOKEN=<token>``.
    """
    table = process_table()
    found = {pid for pid, (_, pgid, sid) in table.items() if leader in (pgid, sid)}
    if token is not None:
        marker = f"{TOKEN_VARIABLE}={token}".encode()
        found |= {pid for pid in table if _carries_token(pid, marker)}
    if leader in table:
        found.add(leader)
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    stack = list(found)
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    found.discard(os.getpid())
    return found


def _signal_all(pids: set[int], leader: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(leader, sig)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def kill_tree(process: subprocess.Popen[bytes], *, grace_s: float, token: str | None = None) -> int:
    """SIGTERM the whole tree of ``process``, SIGKILL what remains after ``grace_s``.

    Returns:
        The number of processes that were alive when the kill began.
    """
    leader = process.pid
    pids = process_tree(leader, token)
    alive_at_start = len(pids)
    if not pids and process.poll() is not None:
        return 0
    _signal_all(pids, leader, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        process.poll()
        pids = process_tree(leader, token)
        if not pids:
            break
        time.sleep(POLL_S)
    for _ in range(5):
        pids = process_tree(leader, token)
        if not pids:
            break
        _signal_all(pids, leader, signal.SIGKILL)
        process.poll()
        time.sleep(POLL_S)
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    return alive_at_start


LOG_CAP_NOTE = "\n[rexmle] log cap of {cap} bytes reached: further output is dropped\n"


def _copy_capped(source: io.BufferedIOBase, target: IO[bytes], cap_bytes: int) -> None:
    """Copy ``source`` to ``target`` until ``cap_bytes``, then say so once and drain the rest."""
    written = 0
    capped = False
    while chunk := source.read1(1 << 16):
        if capped:
            continue
        room = cap_bytes - written
        target.write(chunk[:room])
        written += min(room, len(chunk))
        if len(chunk) > room:
            target.write(LOG_CAP_NOTE.format(cap=cap_bytes).encode())
            capped = True
        target.flush()


def run_process_group(
    request: SandboxRequest,
    argv: list[str],
    *,
    env: dict[str, str] | None = None,
    pass_fds: tuple[int, ...] = (),
    on_start: Callable[[], None] | None = None,
    lifeline: PipeLifeline | SocketLifeline | None = None,
    cgroup: RunCgroup | None = None,
) -> SandboxResult:
    """Start ``argv`` in a new session and enforce the request's time limit and cancel event.

    With ``cgroup``, ``argv`` starts inside it (through the launcher of
    :mod:`rexmle.runner.limits`): every process of the run is born in the run's cgroup.

    The agent's stdout and stderr come through pipes: the harness copies each into its log
    file up to ``request.limits.log_bytes``, then writes one line saying the cap was reached
    and drops the rest. ``on_start`` runs right after the process started (bwrap: attach the
    network). ``lifeline`` (the one named in the shim's arguments) is cut once the run is over; a
    pipe's read end is passed to the process.
    """
    if isinstance(lifeline, PipeLifeline):
        pass_fds = (*pass_fds, lifeline.shim_fd)
    if cgroup is not None:
        argv = limited_argv(argv, memory_bytes=None, cgroup_args=cgroup.launcher_args())
    try:
        return _run_process_group(request, argv, env=env, pass_fds=pass_fds, on_start=on_start)
    finally:
        if lifeline is not None:
            lifeline.cut()


def _run_process_group(
    request: SandboxRequest,
    argv: list[str],
    *,
    env: dict[str, str] | None,
    pass_fds: tuple[int, ...],
    on_start: Callable[[], None] | None,
) -> SandboxResult:
    request.stdout_path.parent.mkdir(parents=True, exist_ok=True)
    token = uuid.uuid4().hex
    env = {**(request.env if env is None else env), TOKEN_VARIABLE: token}
    started = time.monotonic()
    cap = request.limits.log_bytes
    with open(request.stdout_path, "ab") as out, open(request.stderr_path, "ab") as err:
        try:
            process = subprocess.Popen(
                argv,
                cwd=request.workspace,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                pass_fds=pass_fds,
                umask=0o022,  # folders bwrap creates for mount points must be traversable
            )
        except OSError as error:
            return SandboxResult(
                exit_code=None,
                timed_out=False,
                cancelled=False,
                seconds=time.monotonic() - started,
                error=f"cannot start {argv[0]!r}: {error}",
            )
        pipes = (
            cast(io.BufferedIOBase, process.stdout),
            cast(io.BufferedIOBase, process.stderr),
        )
        copiers = [
            threading.Thread(target=_copy_capped, args=(stream, log, cap), daemon=True)
            for stream, log in zip(pipes, (out, err), strict=True)
        ]
        for copier in copiers:
            copier.start()
        if on_start is not None:
            on_start()
        deadline = started + request.time_limit_s
        timed_out = cancelled = False
        while True:
            try:
                process.wait(timeout=POLL_S)
                break
            except subprocess.TimeoutExpired:
                pass
            if time.monotonic() >= deadline:
                timed_out = True
                break
            if request.cancel is not None and request.cancel.is_set():
                cancelled = True
                break
        seconds = time.monotonic() - started
        killed = kill_tree(process, grace_s=request.kill_grace_s, token=token)
        for copier in copiers:
            copier.join(timeout=10)
        if timed_out or cancelled:
            note = "time limit reached" if timed_out else "run cancelled"
            err.write(f"\n[rexmle] {note} after {seconds:.1f} s: killed the agent\n".encode())
        for stream in pipes:
            stream.close()
    return SandboxResult(
        exit_code=process.returncode,
        timed_out=timed_out,
        cancelled=cancelled,
        seconds=seconds,
        killed_processes=killed,
    )


class LocalSandbox(Sandbox):
    """A subprocess in its own session: time and memory limits, no isolation."""

    kind = "local"

    def __init__(self, warnings: list[str] | None = None) -> None:
        self.warnings = list(warnings or [])

    def info(self, *, network: bool) -> SandboxInfo:
        """Never isolated; the network is always the host's. Always warned, chosen or not."""
        notes = [*self.warnings] or [LOCAL_WARNING]
        if not network:
            notes.append("the agent asked for no network, but the local sandbox cannot cut it")
        return SandboxInfo(
            kind="local", isolated=False, network_isolated=False, network="host", warnings=notes
        )

    def agent_dir_path(self, snapshot: Path) -> str:
        """The snapshot's own path: without a mount namespace there is no fixed one."""
        return str(snapshot)

    def agent_code_problem(self) -> str | None:
        """For a root harness: its agent runs as root, which writes any snapshot, read-only
        modes or not (a harness of another uid leaves the files read-only for the agent).
        """
        return LOCAL_ROOT_AGENT_CODE if os.geteuid() == 0 else None

    def run(self, request: SandboxRequest) -> SandboxResult:
        """Run the command as a plain subprocess (the relay is not needed: same network)."""
        program = request.argv[0] if request.argv else ""
        if shutil.which(program, path=request.env.get("PATH", os.defpath)) is None:
            return SandboxResult(
                exit_code=None,
                timed_out=False,
                cancelled=False,
                seconds=0.0,
                error=f"cannot start {program!r}: not found or not executable",
            )
        held = hold_limits(request, processes=False)
        lifeline = PipeLifeline()
        argv = shim_argv(request.argv, memory_limit_mb=held.rlimit_memory_mb, lifeline=lifeline)
        try:
            result = run_process_group(request, argv, lifeline=lifeline, cgroup=held.cgroup)
        except BaseException:
            held.abandon()
            raise
        return held.finish(result, private_tmp=False, stderr_path=request.stderr_path)


LOCAL_WARNING = (
    "the local sandbox does NOT isolate the agent: it runs as the harness user, can read the "
    "data root (private/ answers included), other runs and the host's network and services; "
    "only the time limit, the memory limit and the kill of its processes hold"
)
LOCAL_ROOT_AGENT_CODE = (
    "the local sandbox cannot keep an agent's code read-only when rexmle runs as root (the "
    "agent runs as root too, and could rewrite its own copy or another run's): use the bwrap "
    "sandbox (apt-get install bubblewrap; --sandbox bwrap), docker or apptainer, or run rexmle "
    "as a user other than root"
)
"""Why the local sandbox refuses an agent with a code folder under a root harness."""
