"""The local pool: GPU slots (one run per GPU at a time) and concurrency."""

from __future__ import annotations

import os
from pathlib import Path

from rich.console import Console

from rexmle.agents.registry import load_agent
from rexmle.records.runs import RunConfig, run_dir
from rexmle.runner.executor import RunJob, RunOptions, run_jobs
from rexmle.runner.sandbox.local import LocalSandbox
from rexmle.runner.settings import RunSettings


def test_each_run_holds_one_gpu_slot(isles22_dirs, tmp_path: Path):
    shared = tmp_path / "slots"
    shared.mkdir()
    # mkdir is atomic: two runs holding the same GPU at the same time would print CLASH.
    # The agent exits 9 without a submission, so nothing is graded (agent_error).
    command = (
        f'echo "gpu=$CUDA_VISIBLE_DEVICES"; mkdir {shared}/gpu-$CUDA_VISIBLE_DEVICES || echo CLASH; '
        f"sleep 0.5; rmdir {shared}/gpu-$CUDA_VISIBLE_DEVICES; exit 9"
    )
    agent = load_agent("command").with_overrides(command=command, time_limit_s=60)
    runs_dir = tmp_path / "runs"
    jobs = [
        RunJob(
            config=RunConfig(
                task="isles22",
                task_spec_version=1,
                agent=agent,
                seed=seed,
                time_limit_s=60,
                mini=True,
            ),
            group="gpu",
            folder=run_dir(runs_dir, "gpu", "isles22", agent.id, seed),
        )
        for seed in range(4)
    ]
    options = RunOptions(
        settings=RunSettings(runs_dir=runs_dir, data_dir=isles22_dirs.root.parent),
        sandbox=LocalSandbox(),
    )
    console = Console(stderr=True, force_terminal=False)
    records = run_jobs(jobs, options, concurrency=4, gpus=["0", "1"], console=console)
    assert [r.seed for r in records] == [0, 1, 2, 3]
    assert {r.status for r in records} == {"agent_error"}
    seen = []
    for job in jobs:
        stdout = (job.folder / "agent.stdout.log").read_text()
        assert "CLASH" not in stdout
        seen.append(stdout.split("gpu=")[1].split()[0])
    assert set(seen) <= {"0", "1"}
    assert all(r.grade is None for r in records)


def test_cli_gpus_gives_one_run_per_gpu_at_a_time(isles22_dirs, tmp_path: Path):
    from test_gpus import fake_nvidia_smi
    from typer.testing import CliRunner

    from rexmle.cli import app

    bin_dir = fake_nvidia_smi(tmp_path / "bin", gpus=8)  # the GPUs --gpus may name

    started = tmp_path / "started"
    started.mkdir()
    # each run says which GPU it sees, then waits (up to 10 s) until both runs are running
    command = (
        f'echo "gpu=$CUDA_VISIBLE_DEVICES"; touch {started}/$SEED; '
        f"for i in $(seq 100); do [ $(ls {started} | wc -l) -ge 2 ] && echo both-running && break; "
        "sleep 0.1; done; exit 9"
    )
    args = [
        "run", "--agent", "command", "--agent-cmd", command, "--agent-name", "gpus",
        "--task", "isles22", "--seeds", "2", "--mini", "--gpus", "3,5",
        "--data-dir", str(isles22_dirs.root.parent), "--runs-dir", str(tmp_path / "runs"),
        "--sandbox", "local",
    ]  # fmt: skip
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "CUDA_VISIBLE_DEVICES": None}
    result = CliRunner().invoke(app, args, env=env)  # type: ignore[arg-type]
    assert result.exit_code == 0, result.stderr
    logs = sorted((tmp_path / "runs").rglob("agent.stdout.log"))
    seen = sorted(log.read_text().split("gpu=")[1].split()[0] for log in logs)
    assert seen == ["3", "5"]
    # --concurrency defaults to one run per GPU: both ran at the same time
    assert all("both-running" in log.read_text() for log in logs)
