"""`rexmle status`: counts per status and the ETA of the unfinished runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rexmle.agents.registry import load_agent
from rexmle.records.runs import (
    RunConfig,
    RunRecord,
    SchedulerRecord,
    read_record,
    run_dir,
    write_record,
)
from rexmle.runner.status import SCHEDULED_JSON, runs_status


def put(runs: Path, seed: int, status: str, total_s: float | None = None) -> None:
    config = RunConfig(
        task="isles22",
        task_spec_version=1,
        agent=load_agent("dummy"),
        seed=seed,
        time_limit_s=60,
        mini=True,
    )
    record = RunRecord(
        run_id=config.run_id(),
        group="g",
        task="isles22",
        agent="dummy",
        seed=seed,
        status=status,  # type: ignore[arg-type]
        config=config,
        started_at="2026-01-01T00:00:00+00:00",
        timings_s={} if total_s is None else {"total": total_s},
    )
    write_record(run_dir(runs, "g", "isles22", "dummy", seed), record)


def test_counts_and_eta(tmp_path: Path):
    runs = tmp_path / "runs"
    put(runs, 0, "completed", 100.0)
    put(runs, 1, "agent_error", 200.0)
    put(runs, 2, "running")
    put(runs, 3, "running")
    put(runs, 4, "cancelled")
    for seed in (5, 6):  # submitted, not started
        folder = run_dir(runs, "g", "isles22", "dummy", seed)
        folder.mkdir(parents=True)
        (folder / SCHEDULED_JSON).write_text("{}", encoding="utf-8")
    torn = run_dir(runs, "g", "isles22", "dummy", 7)
    torn.mkdir(parents=True)
    (torn / "run.json").write_text("{", encoding="utf-8")
    state = runs_status(runs)
    assert state.counts == {
        "completed": 1,
        "agent_error": 1,
        "running": 2,
        "cancelled": 1,
        "queued": 2,
    }
    assert state.total == 7
    assert state.unreadable == [str(torn / "run.json")]
    # mean of finished runs (100 + 200) / 2 = 150 s; left = 2 queued + 2 running = 4 (a cancelled
    # run runs again only when asked); 2 running at once -> ceil(4 / 2) = 2 waves -> 300 s
    assert state.mean_run_s == pytest.approx(150.0)
    assert state.eta_s == pytest.approx(300.0)


def test_slurm_states_decide_for_runs_the_files_call_queued_or_running(tmp_path: Path):
    runs = tmp_path / "runs"
    put(runs, 0, "completed", 100.0)
    jobs = {1: "9_1", 2: "9_2", 3: "9_3", 4: "9_4"}
    for seed, job_id in jobs.items():
        folder = run_dir(runs, "g", "isles22", "dummy", seed)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / SCHEDULED_JSON).write_text(json.dumps({"job_id": job_id}), encoding="utf-8")
    folder = run_dir(runs, "g", "isles22", "dummy", 4)  # its harness started, then the job died
    record = read_record(folder) or _record(4)
    record.scheduler = SchedulerRecord(kind="slurm", job_id="9_4")
    write_record(folder, record)
    asked: list[list[str]] = []

    def states(job_ids: list[str]) -> dict[str, str]:
        asked.append(sorted(job_ids))
        return {"9_1": "PENDING", "9_2": "CANCELLED", "9_4": "NODE_FAIL"}  # 9_3 forgotten

    state = runs_status(runs, states)
    assert asked == [["9_1", "9_2", "9_3", "9_4"]]  # one question, only unfinished runs
    assert state.counts == {"completed": 1, "queued": 1, "cancelled": 1, "lost": 2}
    # only the pending one is left: no ETA counts the cancelled or lost ones
    assert state.eta_s == pytest.approx(100.0)


def _record(seed: int) -> RunRecord:
    config = RunConfig(
        task="isles22", task_spec_version=1, agent=load_agent("dummy"), seed=seed,
        time_limit_s=60, mini=True,
    )  # fmt: skip
    return RunRecord(
        run_id=config.run_id(), group="g", task="isles22", agent="dummy", seed=seed,
        status="running", config=config, started_at="2026-01-01T00:00:00+00:00",
    )  # fmt: skip


def test_no_eta_before_a_run_finished(tmp_path: Path):
    put(tmp_path, 0, "running")
    state = runs_status(tmp_path)
    assert state.counts == {"running": 1}
    assert state.eta_s is None
