"""Nothing an agent starts outlives the harness, whenever and however the harness dies.

The harness is a real process that starts a real sandbox and is then SIGKILLed (as the OOM killer
or Slurm would do it): while the shim is still starting, right after, and once the agent runs. The
agent leaves a child and a daemon in its own session behind it. Also: a shim whose harness is gone
before it could start never runs the command, a shim that is not the harness's child (as in a
container) dies with it through the lifeline socket, and a run inside bwrap ends with its command
even when that left a child running (the shim, as PID 1, cannot signal the agent's private uid).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from runner_support import marker_processes, needs_bwrap

from rexmle.runner.sandbox import SandboxRequest, choose_sandbox
from rexmle.runner.sandbox.lifeline import SocketLifeline
from rexmle.runner.sandbox.shim import EXIT_HARNESS_GONE

SANDBOXES = [
    pytest.param("local", id="local"),
    pytest.param("bwrap", id="bwrap", marks=needs_bwrap()),
]

HARNESS = """
import os, signal, sys, threading, time
from pathlib import Path
from rexmle.runner.sandbox import SandboxRequest, choose_sandbox

kind, workspace, command, moment = sys.argv[1:5]
folder = Path(workspace)
request = SandboxRequest(
    argv=["/bin/sh", "-c", command], env={"PATH": os.environ["PATH"]}, workspace=folder,
    stdout_path=folder.parent / "out.log", stderr_path=folder.parent / "err.log",
    time_limit_s=300.0,
)
threading.Thread(target=choose_sandbox(kind).run, args=(request,), daemon=True).start()
if moment == "agent-running":
    deadline = time.monotonic() + 60
    while not (folder / "started").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
else:
    time.sleep(float(moment))
os.kill(os.getpid(), signal.SIGKILL)
"""


def wait_until_gone(marker: str, timeout_s: float = 15.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while (left := marker_processes(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


@pytest.mark.parametrize("kind", SANDBOXES)
@pytest.mark.parametrize("moment", ["0.0", "0.05", "0.15", "0.4", "agent-running"])
def test_nothing_outlives_a_harness_killed_at_any_moment(tmp_path: Path, kind: str, moment: str):
    marker = f"93{uuid.uuid4().int % 10**6:06d}"
    command = (
        f"sleep {marker}1 & setsid sleep {marker}2 & touch started; "
        f"while :; do sleep 0.2; done; : {marker}"
    )
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    harness = subprocess.run(
        [sys.executable, "-c", HARNESS, kind, str(workspace), command, moment],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert harness.returncode == -signal.SIGKILL, harness.stderr
    if moment == "agent-running":
        assert (workspace / "started").exists()
    # the shim's own command line holds the marker too: it must be gone as well
    assert wait_until_gone(marker) == []


SHIM = [sys.executable, "-m", "rexmle.runner.sandbox.shim"]


def run_shim(lifeline: int, command: str) -> subprocess.CompletedProcess[str]:
    """The shim, given the read end ``lifeline``, running ``command`` in ``/bin/sh``."""
    return subprocess.run(
        [*SHIM, "--lifeline", str(lifeline), "--", "/bin/sh", "-c", command],
        pass_fds=(lifeline,), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_a_shim_whose_harness_is_already_gone_never_runs_the_command(tmp_path: Path):
    shim_end, harness_end = os.pipe()
    os.close(harness_end)  # the harness died before the shim could look
    ran = tmp_path / "ran"
    shim = run_shim(shim_end, f"touch {ran}")
    os.close(shim_end)
    assert shim.returncode == EXIT_HARNESS_GONE
    assert "the harness is gone; the command was not started" in shim.stderr
    assert not ran.exists()


def test_the_agent_does_not_inherit_the_lifeline(tmp_path: Path):
    read_end, harness_end = os.pipe()
    shim_end = 50  # a number no other descriptor of the agent has
    os.dup2(read_end, shim_end, inheritable=False)
    os.close(read_end)
    listing = tmp_path / "fds"
    shim = run_shim(shim_end, f"ls /proc/self/fd > {listing}")
    os.close(harness_end)
    os.close(shim_end)
    assert shim.returncode == 0, shim.stderr
    open_fds = listing.read_text().split()
    assert "0" in open_fds
    assert str(shim_end) not in open_fds


@pytest.mark.parametrize("kind", SANDBOXES)
def test_a_run_ends_with_its_command_though_a_child_is_left(tmp_path: Path, kind: str):
    marker = f"92{uuid.uuid4().int % 10**6:06d}"
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    request = SandboxRequest(
        argv=["/bin/sh", "-c", f"sleep {marker} & echo started"],
        env={"PATH": os.environ["PATH"]},
        workspace=workspace,
        stdout_path=tmp_path / "out.log",
        stderr_path=tmp_path / "err.log",
        time_limit_s=30.0,
        kill_grace_s=1.0,
    )
    result = choose_sandbox(kind).run(request)  # type: ignore[arg-type]
    assert (result.exit_code, result.timed_out) == (0, False)
    assert result.seconds < 10.0  # the command's end, not the 30 s limit
    assert wait_until_gone(marker) == []


def test_a_shim_whose_lifeline_socket_has_no_listener_never_runs_the_command(tmp_path: Path):
    lifeline = SocketLifeline()
    socket_path = lifeline.path
    lifeline.cut()  # the harness is gone: nobody listens there
    ran = tmp_path / "ran"
    shim = subprocess.run(
        [*SHIM, "--lifeline-socket", str(socket_path), "--", "/bin/sh", "-c", f"touch {ran}"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert shim.returncode == EXIT_HARNESS_GONE
    assert f"nobody listens on the lifeline {socket_path}" in shim.stderr
    assert not ran.exists()


SOCKET_HARNESS = """
import signal, sys, time
from rexmle.runner.sandbox.lifeline import SocketLifeline
lifeline = SocketLifeline()
print(lifeline.path, flush=True)
signal.pause()
"""


def test_a_shim_that_is_not_the_harness_child_dies_with_it(tmp_path: Path):
    """As in a container: the engine, not the harness, starts the shim; the socket ties them."""
    harness = subprocess.Popen(
        [sys.executable, "-c", SOCKET_HARNESS], stdout=subprocess.PIPE, text=True
    )
    assert harness.stdout is not None
    socket_path = harness.stdout.readline().strip()
    marker = f"91{uuid.uuid4().int % 10**6:06d}"
    started = tmp_path / "started"
    command = f"sleep {marker}1 & setsid sleep {marker}2 & touch {started}; sleep {marker}3"
    shim = subprocess.Popen(
        [*SHIM, "--lifeline-socket", socket_path, "--", "/bin/sh", "-c", command],
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not started.exists():
            assert time.monotonic() < deadline
            assert shim.poll() is None
            time.sleep(0.05)
        time.sleep(0.3)
        assert shim.poll() is None  # alive while the harness is
        assert len(marker_processes(marker)) >= 3
        harness.kill()
        harness.wait()
        assert shim.wait(timeout=15) == 128 + signal.SIGTERM
        assert wait_until_gone(marker) == []
    finally:
        harness.kill()
        shim.kill()
        harness.wait()
        shim.wait()
