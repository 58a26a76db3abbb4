"""The slurm executor without a cluster: sbatch options, job time, clear errors without Slurm."""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path

import pytest

from rexmle.agents.registry import load_agent
from rexmle.runner.batch import make_job
from rexmle.runner.executor_slurm import (
    SlurmError,
    SlurmSettings,
    batch_script,
    job_time_minutes,
    mark_lost_jobs,
    sbatch_options,
    submit,
)
from rexmle.runner.executor_slurm_node import read_batch_entry
from rexmle.runner.experiment import SlurmResources
from rexmle.runner.settings import RunSettings


def settings(tmp_path: Path, **resources: object) -> SlurmSettings:
    return SlurmSettings(
        resources=SlurmResources(**resources),  # type: ignore[arg-type]
        gpus_per_run=2,
        run=RunSettings(sandbox="bwrap", data_dir=tmp_path / "data", runs_dir=tmp_path / "runs"),
        job_name="rexmle-study",
    )


def test_job_time_is_agent_limit_plus_grading_plus_margin_in_whole_minutes():
    res = SlurmResources(grading_time_s=3600, margin_s=300)
    # 86400 + 3600 + 300 = 90300 s = 1505 min exactly
    assert job_time_minutes(86400, res) == 1505
    # 61 + 3600 + 300 = 3961 s = 66.02 min -> 67
    assert job_time_minutes(61, res) == 67


def test_sbatch_options_carry_the_experiments_resources(tmp_path: Path):
    opts = sbatch_options(
        settings(
            tmp_path,
            partition="gpu",
            account="lab",
            qos="long",
            cpus_per_task=16,
            mem_gb=96,
            max_parallel=20,
            grading_time_s=1800,
            margin_s=120,
            extra_args=["--constraint=h100"],
        ),
        n_runs=140,
        time_limit_s=86400,
        batch_dir=tmp_path / "b",
    )
    # --time: (86400 + 1800 + 120) / 60 = 1472 min; --mem: 96 GiB = 98304 MiB
    assert opts == [
        "--job-name=rexmle-study",
        "--array=0-139%20",
        "--time=1472",
        "--signal=B:TERM@120",
        "--cpus-per-task=16",
        "--mem=98304M",
        f"--output={tmp_path / 'b' / 'slurm-%A_%a.out'}",
        "--open-mode=append",
        "--gpus=2",
        "--partition=gpu",
        "--account=lab",
        "--qos=long",
        "--constraint=h100",
    ]


def test_no_gpus_and_no_throttle_leave_those_options_out(tmp_path: Path):
    plain = SlurmSettings(
        resources=SlurmResources(),
        gpus_per_run=0,
        run=RunSettings(sandbox="local", data_dir=tmp_path, runs_dir=tmp_path),
    )
    opts = sbatch_options(plain, n_runs=3, time_limit_s=60, batch_dir=tmp_path)
    assert "--array=0-2" in opts
    assert not [o for o in opts if o.startswith(("--gpus", "--partition", "--account", "--qos"))]


def test_the_batch_script_execs_the_node_entry_with_this_interpreter(tmp_path: Path):
    script = batch_script(settings(tmp_path), tmp_path / "part-0")
    last = script.strip().splitlines()[-1]
    # exec: the harness is the batch shell, so --signal=B:TERM and scancel --batch reach it;
    # -P: the folder sbatch ran in is not on the node's import path
    node = f"{sys.executable} -P -m rexmle.runner.executor_slurm_node {tmp_path / 'part-0'}"
    assert last == f"exec {node}"


def test_the_whole_run_settings_reach_the_node_with_a_copy_of_the_llm_config(tmp_path: Path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    sbatch = bin_dir / "sbatch"
    sbatch.write_text("#!/bin/sh\necho 4242\n", encoding="utf-8")  # answers like sbatch
    sbatch.chmod(0o755)
    llm_config = tmp_path / "my-llm.yaml"
    # a valid config (run.json records a field of it), marked so that its copy can be told apart
    submitted = resources.files("rexmle.llm").joinpath("default_llm.yaml").read_text("utf-8")
    submitted += "\n# as submitted\n"
    llm_config.write_text(submitted, encoding="utf-8")
    run = RunSettings(
        data_dir=tmp_path / "data",
        runs_dir=tmp_path / "runs",
        sandbox="local",
        kill_grace_s=2.5,
        keep_data=True,
        grade_workers=3,
        grade_memory_bytes=3001 << 20,
        validation_memory_bytes=None,
        grade_timeout_s=77.0,
        max_upload_bytes=12345,
        max_requests_per_minute=7,
        llm_config=llm_config,
        llm_for_every_run=True,
        llm_budget_usd=0.5,
        llm_max_calls_per_minute=9,
    )
    job = make_job(
        load_agent("dummy"), "isles22", 0, time_limit_s=60, mini=True,
        runs_dir=run.runs_dir, group="g",
    )  # fmt: skip
    slurm = SlurmSettings(resources=SlurmResources(), gpus_per_run=0, run=run)
    submission = submit([job], slurm, env={"PATH": f"{bin_dir}:/usr/bin:/bin"})
    assert submission.job_ids == {job.folder: "4242_0"}
    part = submission.batch_dir / "part-0"
    node_job, node_settings = read_batch_entry(part, 0)
    copy = submission.batch_dir / "llm_config.yaml"
    assert node_settings == run.model_copy(update={"llm_config": copy})  # every field, whole
    assert copy.read_bytes() == llm_config.read_bytes()
    llm_config.write_text("models: {changed: 1}\n", encoding="utf-8")  # edits after submission
    assert copy.read_text(encoding="utf-8") == submitted  # do not reach the job
    assert node_job.config == job.config
    assert node_job.folder == job.folder
    recorded = node_settings.recorded()
    assert recorded.llm_budget_usd == 0.5
    assert recorded.grade_memory_bytes == 3001 << 20
    assert recorded.llm_config == str(copy)


def test_without_slurm_the_error_says_what_is_missing(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    job = make_job(
        load_agent("dummy"),
        "isles22",
        0,
        time_limit_s=60,
        mini=True,
        runs_dir=tmp_path / "runs",
        group="g",
    )
    with pytest.raises(SlurmError, match="sbatch is not on PATH"):
        submit([job], settings(tmp_path), env={"PATH": str(tmp_path / "empty")})
    job.folder.mkdir(parents=True)
    (job.folder / "scheduled.json").write_text(json.dumps({"job_id": "7_0"}), encoding="utf-8")
    with pytest.raises(SlurmError, match="squeue is not on PATH"):
        mark_lost_jobs([job.folder], env={"PATH": str(tmp_path / "empty")})
