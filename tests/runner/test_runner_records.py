"""Run ids, run.json and the resume rule."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from rexmle.agents.registry import load_agent
from rexmle.records.runs import (
    RunConfig,
    RunConflict,
    RunRecord,
    needs_run,
    read_record,
    run_dir,
    write_record,
)


def config(**changes: object) -> RunConfig:
    values: dict[str, object] = {
        "task": "isles22",
        "task_spec_version": 1,
        "agent": load_agent("dummy"),
        "seed": 0,
        "time_limit_s": 600.0,
        "mini": True,
    }
    values.update(changes)
    return RunConfig.model_validate(values)


def record(cfg: RunConfig, status: str) -> RunRecord:
    return RunRecord(
        run_id=cfg.run_id(),
        group="g",
        task=cfg.task,
        agent=cfg.agent.id,
        seed=cfg.seed,
        status=status,  # type: ignore[arg-type]
        config=cfg,
        started_at="2026-01-01T00:00:00+00:00",
    )


def test_run_id_is_the_hash_of_the_canonical_config():
    cfg = config()
    # unset optional fields (model, budget, condition, ...) are left out of the hashed JSON
    optional = (
        "model",
        "llm_budget_usd",
        "condition",
        "llm_uncapped",
        "prompts",
        "solution_informed",
    )
    unset: dict[str, object] = dict.fromkeys(optional, True)
    unset["agent"] = {"dir", "dir_sha256"}  # an agent without its own code folder
    fields = cfg.model_dump(mode="json", exclude=unset)
    canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"))
    assert cfg.run_id() == hashlib.sha256(canonical.encode()).hexdigest()[:16]
    assert config().run_id() == cfg.run_id()  # stable
    changed = {
        config(seed=1).run_id(),
        config(time_limit_s=601.0).run_id(),
        config(mini=False).run_id(),
        config(agent=load_agent("baseline")).run_id(),
        config(task_spec_version=2).run_id(),
    }
    assert cfg.run_id() not in changed
    assert len(changed) == 5


def test_run_dir_layout(tmp_path: Path):
    assert run_dir(tmp_path, "grp", "isles22", "dummy", 3) == (
        tmp_path / "grp" / "isles22" / "dummy" / "seed-3"
    )


def test_record_round_trip_and_torn_file(tmp_path: Path):
    cfg = config()
    write_record(tmp_path, record(cfg, "completed"))
    assert read_record(tmp_path) == record(cfg, "completed")
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]  # no temporary left behind
    (tmp_path / "run.json").write_text('{"run_id": "x", "sta')
    assert read_record(tmp_path) is None


@pytest.mark.parametrize(
    ("status", "retry_failed", "expected"),
    [
        ("running", False, True),  # the harness died mid-run: run again
        ("completed", False, False),
        ("completed", True, False),
        ("timeout", True, False),
        ("invalid_submission", True, False),
        ("agent_error", False, False),
        ("agent_error", True, True),
        ("infra_error", False, False),
        ("infra_error", True, True),
    ],
)
def test_resume_rule(tmp_path: Path, status: str, retry_failed: bool, expected: bool):
    cfg = config()
    write_record(tmp_path, record(cfg, status))
    assert needs_run(tmp_path, cfg, retry_failed=retry_failed) is expected


def test_no_record_means_run(tmp_path: Path):
    assert needs_run(tmp_path / "absent", config(), retry_failed=False) is True


def test_another_config_in_the_same_folder_is_a_conflict(tmp_path: Path):
    write_record(tmp_path, record(config(), "completed"))
    with pytest.raises(RunConflict, match="another config"):
        needs_run(tmp_path, config(time_limit_s=5.0), retry_failed=False)
