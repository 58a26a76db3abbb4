"""Each run's own cgroup: its memory limit counts tmpfs pages, its process cap every process, and
nothing of it is left after the run, also when the harness is killed.

Real runs: ``rexmle run --memory-limit-mb 1024`` of an agent that writes 3 GiB into ``/tmp``
inside bwrap, sandboxes that fill three tmpfs at once or fork past the cap, and a harness process
SIGKILLed during a run. The host's shared memory (``Shmem`` in ``/proc/meminfo``, where tmpfs pages
are counted) is sampled while the agent writes. Skipped only where this host can make no cgroup
(the reason is the one :func:`open_run_cgroup` gives).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from runner_support import needs_bwrap

from rexmle.runner.sandbox import SandboxLimits, SandboxRequest
from rexmle.runner.sandbox.bwrap import BwrapSandbox
from rexmle.runner.sandbox.cgroups import (
    CLAIM_PREFIX,
    LISTING,
    open_run_cgroup,
    remove_stale_cgroups,
)
from rexmle.runner.sandbox.local import LocalSandbox

MIB = 1 << 20
LIMIT_MB = 1024
SHMEM_SLACK = 128 * MIB
"""Shared memory other processes of the machine may add while a test samples it."""


def _cgroup_problem() -> str | None:
    cgroup, problem = open_run_cgroup(memory_bytes=MIB << 6, max_processes=64)
    if cgroup is not None:
        cgroup.close()
    return problem


CGROUP_PROBLEM = _cgroup_problem()
needs_cgroup = pytest.mark.skipif(
    CGROUP_PROBLEM is not None, reason=f"no cgroup can be made here: {CGROUP_PROBLEM}"
)


def _shmem_bytes() -> int:
    with open("/proc/meminfo", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("Shmem:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no Shmem line in /proc/meminfo")


@contextmanager
def shmem_growth() -> Iterator[list[int]]:
    """Sample the host's Shmem every 20 ms; the list holds its peak growth once the block ends."""
    base = _shmem_bytes()
    peak = [0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], _shmem_bytes() - base)
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield peak
    finally:
        stop.set()
        sampler.join()


def _request(tmp_path: Path, command: str, **changes: object) -> SandboxRequest:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    values: dict[str, object] = {
        "argv": ["/bin/sh", "-c", command],
        "env": {"PATH": os.environ["PATH"]},
        "workspace": workspace,
        "stdout_path": tmp_path / "out.log",
        "stderr_path": tmp_path / "err.log",
        "time_limit_s": 120.0,
        "kill_grace_s": 1.0,
    }
    values.update(changes)
    return SandboxRequest(**values)  # type: ignore[arg-type]


@needs_cgroup
@needs_bwrap()
def test_rexmle_run_stops_a_3gib_tmp_write_at_the_memory_limit(isles22_dirs, tmp_path: Path):
    runs = tmp_path / "runs"
    write = "dd if=/dev/zero of=/tmp/fill bs=1M count=3072; echo wrote-it"
    with shmem_growth() as growth:
        done = subprocess.run(
            [
                sys.executable, "-m", "rexmle.cli", "run", "--agent", "command",
                "--agent-cmd", write, "--agent-name", "filler", "--task", "isles22", "--mini",
                "--data-dir", str(isles22_dirs.root.parent), "--runs-dir", str(runs),
                "--sandbox", "bwrap", "--memory-limit-mb", str(LIMIT_MB), "--kill-grace", "1",
            ],
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
    folder = runs / "default" / "isles22" / "filler" / "seed-0"
    record = json.loads((folder / "run.json").read_text())
    limits = record["sandbox"]["limits"]
    print(
        f"cgroup peak {limits['memory_peak_bytes'] / MIB:.0f} MiB, "
        f"host Shmem growth {growth[0] / MIB:.0f} MiB"
    )
    assert limits["memory_bytes"] == LIMIT_MB * MIB, done.stderr
    assert limits["memory_held_by"] in ("cgroup-v1", "cgroup-v2")
    assert limits["tmp_bytes"] == LIMIT_MB * MIB  # /tmp is sized within the limit
    assert limits["shm_bytes"] == LIMIT_MB * MIB
    assert limits["memory_peak_bytes"] <= LIMIT_MB * MIB
    assert growth[0] <= LIMIT_MB * MIB + SHMEM_SLACK  # not the 3 GiB the agent asked for
    assert growth[0] >= LIMIT_MB * MIB // 2  # it did write, up to about the limit
    assert "wrote-it" not in (folder / "agent.stdout.log").read_text()
    stderr = (folder / "agent.stderr.log").read_text()
    assert "No space left on device" in stderr or "[rexmle] out of memory" in stderr
    assert record["status"] == "agent_error"


@needs_cgroup
@needs_bwrap()
def test_three_tmpfs_filled_at_once_are_held_together(tmp_path: Path):
    # each tmpfs is sized at the limit, so only the cgroup sees the sum (3 x 900 MiB)
    fill = "; ".join(
        f"dd if=/dev/zero of={folder}/fill bs=1M count=900"
        for folder in ("/tmp", "/var/tmp", "/dev/shm")
    )
    with shmem_growth() as growth:
        result = BwrapSandbox().run(
            _request(tmp_path, f"{fill}; echo all-written", memory_limit_mb=LIMIT_MB)
        )
    assert result.limits is not None
    assert result.limits["memory_held_by"] in ("cgroup-v1", "cgroup-v2")
    assert "all-written" not in (tmp_path / "out.log").read_text()
    assert growth[0] <= LIMIT_MB * MIB + SHMEM_SLACK
    assert result.limits["oom_kills"]  # the kernel stopped it, at the cgroup's limit
    assert "[rexmle] out of memory" in (tmp_path / "err.log").read_text()


@needs_cgroup
def test_the_process_cap_counts_every_process_of_a_local_run(tmp_path: Path):
    spawn = "for i in $(seq 100); do (echo $i >> started; sleep 20) & done; wait"
    limits = SandboxLimits(max_processes=30)
    result = LocalSandbox().run(_request(tmp_path, spawn, limits=limits, time_limit_s=5.0))
    started = (tmp_path / "workspace" / "started").read_text().split()
    assert result.limits is not None
    assert result.limits["max_processes_held_by"] in ("cgroup-v1", "cgroup-v2")
    assert result.limits["max_processes"] == 30
    assert 5 < len(started) < 30  # the shim, the shell and every subshell share the 30
    assert "fork" in (tmp_path / "err.log").read_text().lower()


def _listed_cgroups(claims_root: Path) -> list[Path]:
    return [
        Path(line)
        for claim in claims_root.glob(f"{CLAIM_PREFIX}*")
        for line in (claim / LISTING).read_text().split()
    ]


@needs_cgroup
@pytest.mark.parametrize(
    "sandbox",
    [pytest.param("local", id="local"), pytest.param("bwrap", id="bwrap", marks=needs_bwrap())],
)
def test_the_runs_cgroup_is_gone_after_the_run(tmp_path: Path, sandbox: str, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the claims are made
    seen: list[list[Path]] = []
    watcher = threading.Timer(0.8, lambda: seen.append(_listed_cgroups(tmp_path)))
    watcher.start()
    runner = LocalSandbox() if sandbox == "local" else BwrapSandbox()
    result = runner.run(_request(tmp_path, "sleep 2", memory_limit_mb=256))
    watcher.join()
    assert result.exit_code == 0
    assert seen
    assert seen[0], "no run cgroup was listed while the agent ran"
    assert all(folder.name.startswith("rexmle-run-") for folder in seen[0])
    assert not any(folder.exists() for folder in seen[0])
    assert not list(tmp_path.glob(f"{CLAIM_PREFIX}*"))


HARNESS = """
import os, sys, time
from pathlib import Path
from rexmle.runner.sandbox import SandboxRequest, choose_sandbox

kind, workspace = sys.argv[1:3]
folder = Path(workspace)
request = SandboxRequest(
    argv=["/bin/sh", "-c", "touch started; sleep 300"], env={"PATH": os.environ["PATH"]},
    workspace=folder, stdout_path=folder.parent / "out.log",
    stderr_path=folder.parent / "err.log", time_limit_s=300.0, memory_limit_mb=256,
)
choose_sandbox(kind).run(request)
"""


@needs_cgroup
@pytest.mark.parametrize(
    "sandbox",
    [pytest.param("local", id="local"), pytest.param("bwrap", id="bwrap", marks=needs_bwrap())],
)
def test_a_killed_harness_leaves_a_cgroup_that_the_next_start_removes(
    tmp_path: Path, sandbox: str
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    claims = tmp_path / "claims"
    claims.mkdir()
    harness = subprocess.Popen(
        [sys.executable, "-c", HARNESS, sandbox, str(workspace)],
        env={**os.environ, "TMPDIR": str(claims)},
    )
    deadline = time.monotonic() + 60
    while not (workspace / "started").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (workspace / "started").exists()
    left = _listed_cgroups(claims)
    harness.send_signal(signal.SIGKILL)
    harness.wait(timeout=30)
    assert left
    assert all(folder.is_dir() for folder in left)  # the harness had no time to clean
    removed = remove_stale_cgroups(claims)
    assert len(removed) == 1
    assert not any(folder.exists() for folder in left)
    assert not list(claims.glob(f"{CLAIM_PREFIX}*"))


def test_without_a_cgroup_the_memory_limit_falls_back_to_rlimit_as(tmp_path: Path, monkeypatch):
    from rexmle.runner.sandbox import cgroups

    def no_cgroup(**_: object) -> tuple[None, str]:
        return None, "cgroup v1: no memory hierarchy"

    monkeypatch.setattr(cgroups, "open_run_cgroup", no_cgroup)
    allocate = f"{sys.executable} -c 'bytearray(600 << 20)'"
    result = LocalSandbox().run(_request(tmp_path, allocate, memory_limit_mb=300))
    assert result.exit_code not in (0, None)
    assert "MemoryError" in (tmp_path / "err.log").read_text()
    assert result.limits is not None
    assert result.limits["memory_held_by"] == "rlimit-as"
    assert result.limits["max_processes_held_by"] is None  # the local sandbox has no other cap
    assert result.limits["cgroup_problem"] == "cgroup v1: no memory hierarchy"


def _fake_v2(root: Path, *, delegated: set[str]) -> Path:
    """A cgroup v2 tree of plain files: the harness in ``/job/task``, the parent ``/job``
    offering ``delegated`` to its children (the layout and the files written are checked).
    """
    job = root / "job"
    (job / "task").mkdir(parents=True)
    (job / "cgroup.controllers").write_text("cpu memory pids io\n")
    (job / "cgroup.subtree_control").write_text(" ".join(sorted(delegated)) + "\n")
    return job


def test_cgroup_v2_is_made_beside_the_harness_where_the_parent_delegates(tmp_path, monkeypatch):
    from rexmle.runner.sandbox import cgroups

    job = _fake_v2(tmp_path, delegated={"memory", "pids"})
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    mount = cgroups._Mount(tmp_path, "/", "v2", frozenset())
    monkeypatch.setattr(cgroups, "_mounts", lambda: [mount])
    monkeypatch.setattr(cgroups, "_own_paths", lambda: {"": "/job/task"})
    cgroup, problem = open_run_cgroup(memory_bytes=1 << 30, max_processes=99)
    assert problem is None
    assert cgroup is not None
    (folder,) = cgroup.folders
    assert folder.parent == job  # beside the harness, never in its own (busy) cgroup
    assert (cgroup.version, cgroup.holder) == ("v2", "cgroup-v2")
    assert (folder / "memory.max").read_text() == str(1 << 30)
    assert (folder / "pids.max").read_text() == "99"
    assert cgroup.launcher_args() == ["--cgroup", str(folder)]
    assert cgroup.claim is not None
    assert (cgroup.claim.path / LISTING).read_text() == f"{folder}\n"  # listed for a killed harness
    cgroup.claim.release()


def test_cgroup_v2_without_the_controllers_says_so(tmp_path, monkeypatch):
    from rexmle.runner.sandbox import cgroups

    job = _fake_v2(tmp_path, delegated=set())
    (job / "cgroup.controllers").write_text("cpu io\n")
    mount = cgroups._Mount(tmp_path, "/", "v2", frozenset())
    monkeypatch.setattr(cgroups, "_mounts", lambda: [mount])
    monkeypatch.setattr(cgroups, "_own_paths", lambda: {"": "/job/task"})
    cgroup, problem = open_run_cgroup(memory_bytes=None, max_processes=10)
    assert cgroup is None
    assert f"cgroup v2 at {job} lacks the memory, pids controller(s)" in (problem or "")
    assert "cgroup v1: no memory hierarchy" in (problem or "")
