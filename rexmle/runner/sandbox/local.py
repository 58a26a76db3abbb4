"""The ``local`` sandbox: a subprocess in its own session, killed with all its children at the limit.

The command starts in a new session (its own process group) with a random job token in its
environment (``SANDBOX_JOB_TOKEN``). At the limit, or when the command ends while children it
started still run, every process of that session and process group, every descendant found in
``/proc``, and every process whose environment carries the token (a double-forked daemon in a
session of its own, reparented to init) gets SIGTERM, then SIGKILL after a grace period. A
process that scrubs its environment and double-forks can still escape: only the bwrap sandbox
(a PID namespace that dies with it) closes that. An optional
memory limit is set with RLIMIT_AS by :mod:`rexmle.runner.sandbox.shim` just before the exec.
This sandbox does not isolate the filesystem or the network.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid

from rexmle.runner.sandbox import Relay, Sandbox, SandboxInfo, SandboxRequest, SandboxResult

POLL_S = 0.1


def shim_argv(
    argv: list[str],
    *,
    memory_limit_mb: int | None = None,
    relays: tuple[Relay, ...] = (),
) -> list[str]:
    """``argv`` wrapped in the shim that sets RLIMIT_AS and starts the relays (if asked)."""
    if memory_limit_mb is None and not relays:
        return list(argv)
    wrapped = [sys.executable, "-m", "rexmle.runner.sandbox.shim"]
    if memory_limit_mb is not None:
        wrapped += ["--memory-limit-mb", str(memory_limit_mb)]
    for relay in relays:
        wrapped += ["--relay", f"{relay.port}={relay.socket}"]
    return [*wrapped, "--", *argv]


def _process_table() -> dict[int, tuple[int, int, int]]:
    """pid -> (ppid, pgid, sid) of every live (non-zombie) process in /proc."""
    table: dict[int, tuple[int, int, int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) < 4 or fields[0] in ("Z", "X"):
            continue
        table[int(entry)] = (int(fields[1]), int(fields[2]), int(fields[3]))
    return table


TOKEN_VARIABLE = "SANDBOX_JOB_TOKEN"


def _carries_token(pid: int, token: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return token in handle.read().split(b"\0")
    except OSError:
        return False


def process_tree(leader: int, token: str | None = None) -> set[int]:
    """Live processes of ``leader``'s session or process group, all their descendants, and every
    process whose environment holds ``SANDBOX_JOB_TOKEN=<token>``."""
    table = _process_table()
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


def run_process_group(request: SandboxRequest, argv: list[str]) -> SandboxResult:
    """Start ``argv`` in a new session and enforce the request's time limit and cancel event."""
    request.stdout_path.parent.mkdir(parents=True, exist_ok=True)
    token = uuid.uuid4().hex
    env = {**request.env, TOKEN_VARIABLE: token}
    started = time.monotonic()
    with open(request.stdout_path, "ab") as out, open(request.stderr_path, "ab") as err:
        try:
            process = subprocess.Popen(
                argv,
                cwd=request.workspace,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        except OSError as error:
            return SandboxResult(
                exit_code=None,
                timed_out=False,
                cancelled=False,
                seconds=time.monotonic() - started,
                error=f"cannot start {argv[0]!r}: {error}",
            )
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
        if timed_out or cancelled:
            note = "time limit reached" if timed_out else "run cancelled"
            err.write(f"\n[rexmle] {note} after {seconds:.1f} s: killing the agent\n".encode())
            err.flush()
        killed = kill_tree(process, grace_s=request.kill_grace_s, token=token)
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
        """Never isolated; the network is always the host's."""
        notes = [*self.warnings]
        if not network:
            notes.append("the agent asked for no network, but the local sandbox cannot cut it")
        return SandboxInfo(kind="local", isolated=False, network_isolated=False, warnings=notes)

    def run(self, request: SandboxRequest) -> SandboxResult:
        """Run the command as a plain subprocess (the relay is not needed: same network)."""
        argv = shim_argv(request.argv, memory_limit_mb=request.memory_limit_mb)
        return run_process_group(request, argv)
