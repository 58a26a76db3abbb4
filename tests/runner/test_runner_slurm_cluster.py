"""The slurm executor on a real single-node Slurm cluster with 2 fake GPUs (slow).

The fixture starts Debian's munged, slurmctld and slurmd under a temporary root (no systemd).
Everything goes through the real CLI in its own process: 4 dummy runs from an experiment file and
2 baseline runs given by flags end to end (records, grades), resume, --retry-failed, cancel of a
running job (recorded cancelled, runs again), a killed job detected as lost (infra_error).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from conftest import COPY_SAMPLE, marker_processes

from rexmle.runner.executor_slurm_cluster import ClusterError, LocalSlurmCluster, cluster_problem
from rexmle.runner.records import read_record

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalSlurmCluster]:
    problem = cluster_problem()
    if problem is not None:
        pytest.skip(f"no local Slurm cluster: {problem}")
    root = tmp_path_factory.mktemp("slurm")
    local = LocalSlurmCluster(root, cpus=2, memory_mb=4096, gpus=2)
    try:
        local.start()
    except ClusterError as error:
        pytest.skip(f"Slurm cannot start on this machine: {error}")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SLURM_CONF", str(local.conf))
        yield local
    local.stop()


def rexmle(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rexmle.cli", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


def wait_for(condition, *, timeout_s: float = 180.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.3)


def status_of(folder: Path) -> str | None:
    record = read_record(folder)
    return None if record is None else record.status


def experiment(tmp_path: Path, name: str, agent: str, seeds: list[int], **more: object) -> Path:
    sandbox = more.pop("sandbox", "local")
    content = {
        "name": name,
        "agents": [{"agent": agent}],
        "tasks": more.pop("tasks", ["isles22"]),
        "seeds": seeds,
        "time_limit_s": 120,
        "mini": True,
        "sandbox": sandbox,
        "gpus_per_run": 1,
        "executor": {
            "kind": "slurm",
            "slurm": {"cpus_per_task": 1, "mem_gb": 1, "grading_time_s": 120, "margin_s": 60},
        },
        **more,
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(content), encoding="utf-8")
    return path


def command_agent(tmp_path: Path, name: str, command: str) -> Path:
    path = tmp_path / f"agent-{name}.yaml"
    path.write_text(
        yaml.safe_dump({"id": name, "kind": "command", "command": command, "time_limit_s": 120}),
        encoding="utf-8",
    )
    return path


@pytest.fixture
def dirs(cluster: LocalSlurmCluster, tmp_path: Path) -> dict[str, Path]:  # noqa: ARG001 (runs need the cluster up)
    return {"runs": tmp_path / "runs", "data": tmp_path / "data"}


def common(dirs: dict[str, Path]) -> list[str]:
    return ["--runs-dir", str(dirs["runs"]), "--data-dir", str(dirs["data"]), "--poll", "0.5"]


def test_dummy_and_baseline_runs_end_to_end_with_resume(tmp_path: Path, dirs):
    study = experiment(tmp_path, "dummies", "dummy", [0, 1], tasks=["isles22", "seg_a"])
    first = rexmle("run", "--experiment", str(study), *common(dirs))
    assert first.returncode == 0, first.stderr
    assert "4 run(s) to submit, 0 still queued or running in Slurm, 0 already done" in first.stderr
    assert first.stderr.count("completed") >= 4  # a progress line per run as it ended
    folders = sorted((dirs["runs"] / "dummies").glob("*/dummy/seed-*"))
    assert len(folders) == 4
    records = [read_record(f) for f in folders]
    assert [r.status for r in records if r] == ["completed"] * 4
    for folder, record in zip(folders, records, strict=True):
        assert record is not None
        assert record.scheduler is not None
        assert record.scheduler.kind == "slurm"
        assert record.scheduler.node == socket.gethostname()
        assert record.scheduler.gpus in ("0", "1")  # one of the 2 fake GPUs, by Slurm
        assert record.experiment == "dummies"
        assert record.grade is not None
        assert record.grade.valid
        grade = json.loads((folder / "grade.json").read_text(encoding="utf-8"))
        assert grade["valid"]
        assert grade["task"] == record.task
    assert len({r.scheduler.job_id for r in records if r and r.scheduler}) == 4

    before = {f: (f / "run.json").read_bytes() for f in folders}
    again = rexmle("run", "--experiment", str(study), *common(dirs))
    assert again.returncode == 0, again.stderr
    assert "0 run(s) to submit, 0 still queued or running in Slurm, 4 already done" in again.stderr
    assert {f: (f / "run.json").read_bytes() for f in folders} == before

    baseline = rexmle(
        "run", "--agent", "baseline", "--task", "isles22", "--seeds", "2", "--mini",
        "--executor", "slurm", "--slurm-arg=--cpus-per-task=1", "--slurm-arg=--mem=1G",
        "--sandbox", "local", "--group", "base", *common(dirs),
    )  # fmt: skip
    assert baseline.returncode == 0, baseline.stderr
    base = [dirs["runs"] / "base" / "isles22" / "baseline" / f"seed-{k}" for k in (0, 1)]
    assert [status_of(f) for f in base] == ["completed", "completed"]
    assert all((f / "grade.json").is_file() for f in base)
    state = rexmle("status", str(dirs["runs"]), "--json")
    assert json.loads(state.stdout)["counts"] == {"completed": 6}


def test_retry_failed_reruns_a_failed_run(tmp_path: Path, dirs):
    flag = tmp_path / "fail-once"
    flag.touch()
    agent = command_agent(tmp_path, "flaky", f"if [ -e {flag} ]; then exit 5; fi; {COPY_SAMPLE}")
    study = experiment(tmp_path, "flaky", str(agent), [0])
    folder = dirs["runs"] / "flaky" / "isles22" / "flaky" / "seed-0"
    assert rexmle("run", "--experiment", str(study), *common(dirs)).returncode == 0
    assert status_of(folder) == "agent_error"
    flag.unlink()
    kept = rexmle("run", "--experiment", str(study), *common(dirs))
    assert "0 run(s) to submit" in kept.stderr
    assert status_of(folder) == "agent_error"
    retried = rexmle("run", "--experiment", str(study), "--retry-failed", *common(dirs))
    assert retried.returncode == 0, retried.stderr
    assert status_of(folder) == "completed"
    assert (folder / "run.previous.json").is_file()  # the failed attempt is kept beside it


def test_cancel_records_cancelled_and_the_run_runs_again(tmp_path: Path, dirs):
    hold = tmp_path / f"hold-{time.time_ns()}"
    hold.touch()
    agent = command_agent(
        tmp_path, "held", f"while [ -e {hold} ]; do sleep 0.2; done; {COPY_SAMPLE}"
    )
    study = experiment(tmp_path, "held", str(agent), [0])
    folder = dirs["runs"] / "held" / "isles22" / "held" / "seed-0"
    submitted = rexmle("run", "--experiment", str(study), "--no-wait", *common(dirs))
    assert submitted.returncode == 0, submitted.stderr
    wait_for(lambda: status_of(folder) == "running" and bool(marker_processes(str(hold))))
    alive = rexmle("run", "--experiment", str(study), "--no-wait", *common(dirs))
    assert "0 run(s) to submit, 1 still queued or running in Slurm" in alive.stderr

    cancelled = rexmle("cancel", str(dirs["runs"]))
    assert cancelled.returncode == 0
    assert "signalled 1 job(s)" in cancelled.stdout
    wait_for(lambda: status_of(folder) == "cancelled")
    record = read_record(folder)
    assert record is not None
    assert "will run again" in (record.error or "")
    wait_for(lambda: marker_processes(str(hold)) == [])  # the agent was stopped

    hold.unlink()
    rerun = rexmle("run", "--experiment", str(study), *common(dirs))
    assert rerun.returncode == 0, rerun.stderr
    assert "1 run(s) to submit" in rerun.stderr
    assert status_of(folder) == "completed"


def test_a_killed_job_is_detected_as_lost(tmp_path: Path, dirs, cluster: LocalSlurmCluster):
    hold = tmp_path / f"hold-{time.time_ns()}"
    hold.touch()
    agent = command_agent(
        tmp_path, "victim", f"while [ -e {hold} ]; do sleep 0.2; done; {COPY_SAMPLE}"
    )
    study = experiment(tmp_path, "victim", str(agent), [0])
    folder = dirs["runs"] / "victim" / "isles22" / "victim" / "seed-0"
    assert rexmle("run", "--experiment", str(study), "--no-wait", *common(dirs)).returncode == 0
    wait_for(lambda: status_of(folder) == "running" and bool(marker_processes(str(hold))))
    scheduled = json.loads((folder / "scheduled.json").read_text(encoding="utf-8"))
    job_id = scheduled["job_id"]
    # SIGKILL to the harness (as the OOM killer would): it cannot write anything; Slurm then
    # ends the job and kills what is left of it
    harness = marker_processes(f"rexmle.runner.executor_slurm_node {scheduled['batch']}")
    assert len(harness) == 1
    os.kill(harness[0], signal.SIGKILL)
    wait_for(
        lambda: subprocess.run(
            ["squeue", "-h", "-t", "all", "-o", "%T", "-j", job_id],
            env=cluster.env(), capture_output=True, text=True, timeout=30, check=False,
        ).stdout.strip() not in ("RUNNING", "COMPLETING", "")
    )  # fmt: skip
    wait_for(lambda: marker_processes(str(hold)) == [])  # the agent died with its harness
    assert status_of(folder) == "running"  # what the dead harness left

    resumed = rexmle("run", "--experiment", str(study), *common(dirs))
    assert resumed.returncode == 0, resumed.stderr
    assert "lost:" in resumed.stderr
    assert "0 run(s) to submit" in resumed.stderr
    record = read_record(folder)
    assert record is not None
    assert record.status == "infra_error"
    assert f"the Slurm job {job_id} ended" in (record.error or "")

    hold.unlink(missing_ok=True)
    retried = rexmle("run", "--experiment", str(study), "--retry-failed", *common(dirs))
    assert retried.returncode == 0, retried.stderr
    assert status_of(folder) == "completed"
    assert os.path.isfile(folder / "grade.json")
