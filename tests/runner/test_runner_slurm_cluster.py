"""The slurm executor on a real single-node Slurm cluster with 2 fake GPUs (slow).

The fixture starts Debian's munged, slurmctld and slurmd under a temporary root (no systemd).
Everything goes through the real CLI in its own process: 4 dummy runs from an experiment file and
2 baseline runs given by flags end to end (records, grades), resume, --retry-failed, cancel of a
running job (recorded cancelled, runs again), a killed job detected as lost (infra_error); the
run settings on the node (a custom LLM config on a stand-in provider, the budget); every stop
recorded ``cancelled`` and run again (plain ``scancel`` during the agent and during grading,
``rexmle cancel`` of a queued job, a requeue); a working folder holding ``rexmle/``.
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
from runner_support import COPY_SAMPLE, marker_processes

from rexmle.llm.standin import Reply
from rexmle.records.runs import read_record
from tests.support.slurm_cluster import ClusterError, LocalSlurmCluster, cluster_problem

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


def rexmle(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The installed ``rexmle`` command, as a user runs it (from ``cwd``)."""
    return subprocess.run(
        [str(Path(sys.executable).parent / "rexmle"), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
        cwd=cwd,
        env=env,
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


def slurm_executor(**slurm: object) -> dict[str, object]:
    """The experiments' Slurm executor: one CPU, 1 GB, 120 s grading, 60 s margin, then ``slurm``."""
    defaults = {"cpus_per_task": 1, "mem_gb": 1, "grading_time_s": 120, "margin_s": 60}
    return {"kind": "slurm", "slurm": {**defaults, **slurm}}


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
        "executor": slurm_executor(),
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
    assert "signalled 1 running job(s)" in cancelled.stdout
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


STANDIN_KEY = "sk-standin-provider-key-0123456789"  # tests/conftest.py: the stand-in wants it
CALL_GATEWAY = (
    "import json, os, urllib.request\n"
    "for n in range(3):\n"
    "    body = {'model': 'gw/gpt-5', 'messages': [{'role': 'user', 'content': str(n)}]}\n"
    "    r = urllib.request.Request(os.environ['OPENAI_BASE_URL'] + '/chat/completions',\n"
    "        data=json.dumps(body).encode(), headers={'Content-Type': 'application/json',\n"
    "        'Authorization': 'Bearer ' + os.environ['OPENAI_API_KEY']})\n"
    "    print(json.loads(urllib.request.urlopen(r, timeout=60).read())['choices'][0]"
    "['message']['content'], flush=True)\n"
)


def slurm_flags(dirs: dict[str, Path], *more: str) -> list[str]:
    return [
        "--executor", "slurm", "--slurm-arg=--cpus-per-task=1", "--slurm-arg=--mem=1G",
        "--task", "isles22", "--mini", "--sandbox", "local", *more, *common(dirs),
    ]  # fmt: skip


def test_the_run_settings_reach_the_node_llm_config_and_budget(tmp_path: Path, dirs, upstream):
    upstream.reset(default=Reply(text="from the stand-in", input_tokens=100, output_tokens=10))
    config = tmp_path / "my-llm.yaml"
    config.write_text(
        "providers:\n"
        f"  standin: {{api: openai, base_url: '{upstream.base_url}/v1', key_env: STANDIN_KEY}}\n"
        "models:\n"
        "  gpt-5: {provider: standin, upstream: gpt-5, price: {input: 1.0, cached_input: 0.5, output: 2.0}}\n"
        "limits: {budget_usd: 10.0, max_calls_per_minute: 60}\n",
        encoding="utf-8",
    )
    script = tmp_path / "call_gateway.py"
    script.write_text(CALL_GATEWAY, encoding="utf-8")
    done = rexmle(
        "run", "--agent", "command", "--agent-cmd", f"{COPY_SAMPLE} && python3 {script}",
        "--group", "llm", "--llm-config", str(config), "--llm-budget-usd", "0.5",
        "--grade-memory-mb", "3001", *slurm_flags(dirs),
        env={**os.environ, "STANDIN_KEY": STANDIN_KEY},  # the job gets the submitter's env
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (folder,) = (dirs["runs"] / "llm" / "isles22").glob("*/seed-0")
    record = read_record(folder)
    assert record is not None
    assert record.status == "completed", record.error
    assert record.scheduler is not None
    assert record.scheduler.kind == "slurm"
    assert len(upstream.completion_requests()) == 3  # the node's gateway used the custom config
    usage = (folder / "llm_usage.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(usage) == 3
    assert record.llm is not None
    assert record.llm.calls == 3
    assert record.llm.budget_usd == 0.5
    # 3 x (100 x 1.0 + 10 x 2.0) per 1M tokens
    assert record.llm.cost_usd == pytest.approx(360e-6, abs=1e-12)
    assert record.settings is not None
    assert record.settings.llm_budget_usd == 0.5
    assert record.settings.grade_memory_bytes == 3001 << 20
    assert record.settings.llm_config is not None
    copy = Path(record.settings.llm_config)
    assert copy.parent.parent == dirs["runs"] / ".slurm"  # the batch folder's copy
    assert copy.read_bytes() == config.read_bytes()
    assert "from the stand-in" in (folder / "agent.stdout.log").read_text(encoding="utf-8")


def held_agent(tmp_path: Path, name: str) -> tuple[Path, Path]:
    hold = tmp_path / f"hold-{time.time_ns()}"
    hold.touch()
    agent = command_agent(tmp_path, name, f"while [ -e {hold} ]; do sleep 0.2; done; {COPY_SAMPLE}")
    return hold, agent


def plain_scancel(cluster: LocalSlurmCluster, job_id: str) -> None:
    subprocess.run(
        ["scancel", job_id], env=cluster.env(), check=True, timeout=30, capture_output=True
    )


def test_a_plain_scancel_of_a_running_job_is_cancelled_and_runs_again(
    tmp_path: Path, dirs, cluster: LocalSlurmCluster
):
    hold, agent = held_agent(tmp_path, "scancelled")
    study = experiment(tmp_path, "scancelled", str(agent), [0])
    folder = dirs["runs"] / "scancelled" / "isles22" / "scancelled" / "seed-0"
    assert rexmle("run", "--experiment", str(study), "--no-wait", *common(dirs)).returncode == 0
    wait_for(lambda: status_of(folder) == "running" and bool(marker_processes(str(hold))))
    job_id = json.loads((folder / "scheduled.json").read_text(encoding="utf-8"))["job_id"]
    started = time.monotonic()
    plain_scancel(cluster, job_id)  # SIGTERM to every process of the job, the agent's too
    wait_for(lambda: status_of(folder) == "cancelled")
    seconds = time.monotonic() - started
    record = read_record(folder)
    assert record is not None
    assert "cancelled while the agent ran" in (record.error or ""), record.error
    assert seconds < 30
    state = json.loads(rexmle("status", str(dirs["runs"] / "scancelled"), "--json").stdout)
    assert state["counts"] == {"cancelled": 1}
    assert state["eta_s"] is None
    hold.unlink()
    rerun = rexmle("run", "--experiment", str(study), *common(dirs))
    assert rerun.returncode == 0, rerun.stderr
    assert "1 run(s) to submit" in rerun.stderr
    assert status_of(folder) == "completed"


def test_slurms_time_limit_signal_is_recorded_cancelled_and_the_run_runs_again(
    tmp_path: Path, dirs
):
    """``--signal=B:TERM@margin`` before the job's ``--time`` ends: the harness records the run
    ``cancelled`` (not a failure) and the next ``rexmle run`` runs it again.
    """
    hold, agent = held_agent(tmp_path, "timelimit")
    timed_dir = tmp_path / "timed"  # the same study (same runs), in a job of 3 minutes
    timed_dir.mkdir()
    timed = experiment(
        timed_dir, "timelimit", str(agent), [0],
        # TERM 90 s before the end of --time=3 (Slurm sends it up to 60 s early): 30-90 s after
        # the start, while the held agent (limit 120 s) still runs
        executor=slurm_executor(margin_s=90, extra_args=["--time=3"]),
    )  # fmt: skip
    folder = dirs["runs"] / "timelimit" / "isles22" / "timelimit" / "seed-0"
    assert rexmle("run", "--experiment", str(timed), "--no-wait", *common(dirs)).returncode == 0
    wait_for(lambda: status_of(folder) == "running" and bool(marker_processes(str(hold))))
    wait_for(lambda: status_of(folder) != "running", timeout_s=150)
    record = read_record(folder)
    assert record is not None
    assert record.status == "cancelled", (record.status, record.error)
    assert "cancelled while the agent ran" in (record.error or ""), record.error
    assert record.timings_s.get("agent", 0.0) < 115  # the signal, not the agent's time limit
    hold.unlink()
    rerun = rexmle("run", "--experiment", str(experiment(tmp_path, "timelimit", str(agent), [0])),
                   *common(dirs))  # fmt: skip
    assert rerun.returncode == 0, rerun.stderr
    assert "1 run(s) to submit" in rerun.stderr
    assert status_of(folder) == "completed"


def test_a_scancel_during_grading_is_cancelled_and_runs_again(
    tmp_path: Path, dirs, cluster: LocalSlurmCluster
):
    agent = command_agent(tmp_path, "graded", COPY_SAMPLE)
    study = experiment(tmp_path, "graded", str(agent), [0])
    folder = dirs["runs"] / "graded" / "isles22" / "graded" / "seed-0"
    assert rexmle("run", "--experiment", str(study), "--no-wait", *common(dirs)).returncode == 0
    wait_for(lambda: (folder / "grade.log").is_file(), timeout_s=180)  # the grader started
    job_id = json.loads((folder / "scheduled.json").read_text(encoding="utf-8"))["job_id"]
    plain_scancel(cluster, job_id)
    wait_for(lambda: status_of(folder) in ("cancelled", "completed", "infra_error"))
    record = read_record(folder)
    assert record is not None
    assert record.status == "cancelled", record.error
    assert "cancelled while grading" in (record.error or "")
    assert not (folder / "grade.json").exists()
    rerun = rexmle("run", "--experiment", str(study), *common(dirs))
    assert rerun.returncode == 0, rerun.stderr
    assert status_of(folder) == "completed"


def test_rexmle_cancel_of_a_queued_job_returns_at_once_and_it_runs_again(tmp_path: Path, dirs):
    agent = command_agent(tmp_path, "queued", COPY_SAMPLE)
    study = experiment(tmp_path, "queued", str(agent), [0])
    held_dir = tmp_path / "held"  # the same study (same runs), submitted on hold
    held_dir.mkdir()
    held = experiment(
        held_dir, "queued", str(agent), [0],
        executor=slurm_executor(extra_args=["--hold"]),  # pending until released: never starts
    )  # fmt: skip
    folder = dirs["runs"] / "queued" / "isles22" / "queued" / "seed-0"
    assert rexmle("run", "--experiment", str(held), "--no-wait", *common(dirs)).returncode == 0
    queued = json.loads(rexmle("status", str(dirs["runs"] / "queued"), "--json").stdout)
    assert queued["counts"] == {"queued": 1}
    started = time.monotonic()
    cancelled = rexmle("cancel", str(dirs["runs"] / "queued"))
    seconds = time.monotonic() - started
    assert cancelled.returncode == 0, cancelled.stderr
    assert "removed 1 queued job(s)" in cancelled.stdout
    assert seconds < 10
    record = read_record(folder)
    assert record is not None
    assert record.status == "cancelled"
    assert "cancelled while queued" in (record.error or "")
    state = json.loads(rexmle("status", str(dirs["runs"] / "queued"), "--json").stdout)
    assert state["counts"] == {"cancelled": 1}
    assert state["eta_s"] is None
    rerun = rexmle("run", "--experiment", str(study), *common(dirs))
    assert rerun.returncode == 0, rerun.stderr
    assert "1 run(s) to submit" in rerun.stderr
    assert status_of(folder) == "completed"


def test_a_requeued_job_runs_its_run_again_and_counts_the_restart(
    tmp_path: Path, dirs, cluster: LocalSlurmCluster
):
    hold, agent = held_agent(tmp_path, "requeued")
    study = experiment(
        tmp_path, "requeued", str(agent), [0],
        executor=slurm_executor(extra_args=["--requeue"]),
    )  # fmt: skip
    folder = dirs["runs"] / "requeued" / "isles22" / "requeued" / "seed-0"
    assert rexmle("run", "--experiment", str(study), "--no-wait", *common(dirs)).returncode == 0
    wait_for(lambda: status_of(folder) == "running" and bool(marker_processes(str(hold))))
    job_id = json.loads((folder / "scheduled.json").read_text(encoding="utf-8"))["job_id"]
    subprocess.run(
        ["scontrol", "requeue", job_id],
        env=cluster.env(),
        check=True,
        timeout=30,
        capture_output=True,
    )  # fmt: skip  (what preemption with PreemptMode=REQUEUE does)
    wait_for(lambda: status_of(folder) == "cancelled")
    hold.unlink()
    waited = rexmle("run", "--experiment", str(study), *common(dirs))
    assert waited.returncode == 0, waited.stderr
    assert "0 run(s) to submit, 1 still queued or running in Slurm" in waited.stderr
    record = read_record(folder)
    assert record is not None
    assert record.status == "completed", record.error
    assert record.scheduler is not None
    assert record.scheduler.job_id == job_id
    assert record.scheduler.restart_count == 1


def test_a_working_folder_holding_a_rexmle_folder_does_not_break_slurm_runs(tmp_path: Path, dirs):
    cwd = tmp_path / "parent-of-a-clone"
    (cwd / "rexmle").mkdir(parents=True)
    (cwd / "rexmle" / "__init__.py").write_text("raise ImportError('the shadow package')\n")
    done = rexmle("run", "--agent", "dummy", "--group", "shadowed", *slurm_flags(dirs), cwd=cwd)
    assert done.returncode == 0, done.stderr
    record = read_record(dirs["runs"] / "shadowed" / "isles22" / "dummy" / "seed-0")
    assert record is not None
    assert record.status == "completed", record.error
    assert record.grade is not None
    assert record.grade.valid
