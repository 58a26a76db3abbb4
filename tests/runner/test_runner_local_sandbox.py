"""The local sandbox: exit codes, logs, time limit over a process tree, memory limit, cancel."""

from __future__ import annotations

import os
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from runner_support import marker_processes

from rexmle.runner.sandbox import SandboxRequest, choose_sandbox
from rexmle.runner.sandbox.local import LocalSandbox


def request(tmp_path: Path, argv: list[str], **changes: object) -> SandboxRequest:
    values: dict[str, object] = {
        "argv": argv,
        "env": {"PATH": os.environ["PATH"]},
        "workspace": tmp_path,
        "stdout_path": tmp_path / "out.log",
        "stderr_path": tmp_path / "err.log",
        "time_limit_s": 30.0,
        "kill_grace_s": 1.0,
    }
    values.update(changes)
    return SandboxRequest(**values)  # type: ignore[arg-type]


def test_exit_code_and_logs(tmp_path: Path):
    result = LocalSandbox().run(
        request(tmp_path, ["/bin/sh", "-c", "echo out; echo err >&2; pwd; exit 4"])
    )
    assert (result.exit_code, result.timed_out, result.cancelled) == (4, False, False)
    assert (tmp_path / "out.log").read_text() == f"out\n{tmp_path}\n"
    assert (tmp_path / "err.log").read_text() == "err\n"


def test_command_that_cannot_start_reports_an_error(tmp_path: Path):
    result = LocalSandbox().run(request(tmp_path, [str(tmp_path / "no-such-program")]))
    assert result.exit_code is None
    assert result.error is not None
    assert "cannot start" in result.error


def test_time_limit_kills_the_whole_tree(tmp_path: Path):
    marker = f"97{uuid.uuid4().int % 10**6:06d}"
    script = (
        f"sleep {marker}1 & sh -c 'sleep {marker}2; true' & setsid sleep {marker}3 & "
        f"(trap '' TERM; sleep {marker}4) & sleep {marker}5"
    )
    started = time.monotonic()
    result = LocalSandbox().run(request(tmp_path, ["/bin/sh", "-c", script], time_limit_s=1.5))
    elapsed = time.monotonic() - started
    assert result.timed_out
    assert 1.5 <= result.seconds < 3.0
    assert elapsed < 1.5 + 1.0 + 3.0  # limit + grace + slack
    assert result.killed_processes >= 6  # sh, 5 sleeps, the subshells
    assert marker_processes(marker) == []
    assert "time limit reached" in (tmp_path / "err.log").read_text()


def test_a_double_forked_daemon_in_its_own_session_is_killed(tmp_path: Path):
    marker = f"95{uuid.uuid4().int % 10**6:06d}"
    # the daemon's parent exits at once: it is reparented to init, in a session of its own
    script = f"(setsid sh -c 'trap \"\" TERM; sleep {marker}' &) ; sleep 30"
    result = LocalSandbox().run(request(tmp_path, ["/bin/sh", "-c", script], time_limit_s=1.0))
    assert result.timed_out
    assert marker_processes(marker) == []


def test_children_left_behind_by_a_finished_agent_are_killed(tmp_path: Path):
    marker = f"96{uuid.uuid4().int % 10**6:06d}"
    result = LocalSandbox().run(
        request(tmp_path, ["/bin/sh", "-c", f"sleep {marker} & echo started"])
    )
    assert (result.exit_code, result.timed_out) == (0, False)
    assert marker_processes(marker) == []


def test_memory_limit_stops_a_large_allocation(tmp_path: Path):
    allocate = "x = bytearray(2_000_000_000); print('allocated')"
    result = LocalSandbox().run(
        request(tmp_path, [sys.executable, "-c", allocate], memory_limit_mb=300)
    )
    assert result.exit_code not in (0, None)
    assert result.limits is not None
    held_by = result.limits["memory_held_by"]
    # a cgroup: the kernel kills the process at the limit; RLIMIT_AS: the allocation fails
    expected = "[rexmle] out of memory" if held_by in ("cgroup-v1", "cgroup-v2") else "MemoryError"
    assert held_by in ("cgroup-v1", "cgroup-v2", "rlimit-as")
    assert expected in (tmp_path / "err.log").read_text()
    free = LocalSandbox().run(request(tmp_path, [sys.executable, "-c", "print('ok')"]))
    assert free.exit_code == 0


def test_cancel_event_stops_the_agent(tmp_path: Path):
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    result = LocalSandbox().run(request(tmp_path, ["sleep", "60"], cancel=cancel))
    assert result.cancelled
    assert not result.timed_out
    assert result.seconds < 5


def test_local_sandbox_says_it_is_not_isolated():
    info = choose_sandbox("local").info(network=False)
    assert (info.kind, info.isolated, info.network_isolated) == ("local", False, False)
    assert any("cannot cut" in w for w in info.warnings)


def test_auto_falls_back_to_local_with_a_loud_warning(monkeypatch):
    import rexmle.runner.sandbox.bwrap as bwrap_module

    monkeypatch.setattr(bwrap_module, "bwrap_problem", lambda: "bwrap is not installed")
    chosen = choose_sandbox("auto")
    assert chosen.kind == "local"
    info = chosen.info(network=True)
    assert not info.isolated
    assert any("NOT isolated" in w and "bwrap is not installed" in w for w in info.warnings)
    with pytest.raises(RuntimeError, match="bwrap sandbox does not work here"):
        choose_sandbox("bwrap")
