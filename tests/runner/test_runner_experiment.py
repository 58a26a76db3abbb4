"""Experiment files: validation, deterministic expansion, equality with flags, the paper grid."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from rexmle.agents.registry import load_agent
from rexmle.cli import app
from rexmle.errors import SpecError
from rexmle.records.runs import RunConfig, read_record
from rexmle.runner.batch import plan_runs
from rexmle.runner.experiment import (
    dry_run_summary,
    expand,
    experiment_jobs,
    load_experiment,
)
from rexmle.tasks.registry import all_tasks

TASKS = ["isles22", "seg_a"]


def write_experiment(tmp_path: Path, **fields: object) -> Path:
    content = {
        "name": "study",
        "agents": [{"agent": "dummy"}, {"agent": "baseline"}],
        "tasks": TASKS,
        "seeds": [0, 1, 2],
        "time_limit_s": 30,
        "mini": True,
        **fields,
    }
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(content), encoding="utf-8")
    return path


def test_expansion_is_deterministic_and_in_file_order(tmp_path: Path):
    path = write_experiment(tmp_path, seeds=[2, 0])
    first = experiment_jobs(load_experiment(path), tmp_path / "runs")
    again = experiment_jobs(load_experiment(path), tmp_path / "runs")
    assert [(j.folder, j.config.run_id()) for j in first] == [
        (j.folder, j.config.run_id()) for j in again
    ]
    # agents x tasks x seeds, each in file order
    order = [(j.config.agent.id, j.config.task, j.config.seed) for j in first]
    assert order == [(a, t, s) for a in ("dummy", "baseline") for t in TASKS for s in (2, 0)]
    assert len({j.config.run_id() for j in first}) == len(first) == 8


def test_experiment_runs_equal_the_same_runs_given_by_flags(tmp_path: Path):
    runs = tmp_path / "runs"
    from_file = experiment_jobs(load_experiment(write_experiment(tmp_path, group="g1")), runs)
    from_flags = []
    for agent in ("dummy", "baseline"):
        spec = load_agent(agent).with_overrides(time_limit_s=30)
        plan = plan_runs(
            spec,
            TASKS,
            seeds=3,
            time_limit_s=spec.time_limit_s,
            mini=True,
            runs_dir=runs,
            group="g1",
            retry_failed=False,
        )
        from_flags += plan.jobs
    assert sorted((str(j.folder), j.config.run_id()) for j in from_file) == sorted(
        (str(j.folder), j.config.run_id()) for j in from_flags
    )


def test_unset_budget_and_condition_leave_the_run_id_as_before():
    config = RunConfig(
        task="isles22",
        task_spec_version=1,
        agent=load_agent("dummy").with_overrides(time_limit_s=30),
        seed=2,
        time_limit_s=30,
        mini=True,
    )
    # the config as it was hashed before the optional fields existed
    optional = ("llm_budget_usd", "condition", "llm_uncapped", "prompts", "solution_informed")
    unset: dict[str, object] = dict.fromkeys(optional, True)
    unset["agent"] = {"dir", "dir_sha256"}
    before = config.model_dump(mode="json", exclude=unset)
    text = json.dumps(before, sort_keys=True, separators=(",", ":"))
    assert config.run_id() == hashlib.sha256(text.encode()).hexdigest()[:16]
    assert config.model_copy(update={"condition": "3day"}).run_id() != config.run_id()
    assert config.model_copy(update={"llm_budget_usd": 5.0}).run_id() != config.run_id()


def test_models_and_conditions_get_their_own_folders_and_ids(tmp_path: Path):
    path = write_experiment(
        tmp_path,
        agents=[{"agent": "aide", "models": ["gpt-5", "claude-sonnet-4-5"], "budget_usd": 5}],
        tasks=["isles22"],
        seeds=[0],
        conditions=[{"name": "short"}, {"name": "long", "time_limit_s": 90}],
    )
    jobs = experiment_jobs(load_experiment(path), tmp_path / "runs")
    rel = [str(j.folder.relative_to(tmp_path / "runs")) for j in jobs]
    assert rel == [
        "study-short/isles22/aide-gpt-5/seed-0",
        "study-short/isles22/aide-claude-sonnet-4-5/seed-0",
        "study-long/isles22/aide-gpt-5/seed-0",
        "study-long/isles22/aide-claude-sonnet-4-5/seed-0",
    ]
    # a model entry is the same agent as `--agent aide/<model>`
    assert jobs[1].config.agent.model_copy(update={"time_limit_s": 0}) == load_agent(
        "aide/claude-sonnet-4-5"
    ).model_copy(update={"time_limit_s": 0})
    assert [j.config.time_limit_s for j in jobs] == [30, 30, 90, 90]
    assert [j.config.condition for j in jobs] == ["short", "short", "long", "long"]
    assert {j.config.agent.llm.models["code"] for j in jobs if j.config.agent.llm} == {
        "gpt-5",
        "claude-sonnet-4-5",
    }
    assert len({j.config.run_id() for j in jobs}) == 4
    summary = dry_run_summary(jobs, gpus_per_run=2)
    # GPU-hours: 2 GPUs x (30 + 30 + 90 + 90) s / 3600 = 480 / 3600; ceiling: 4 runs x $5
    assert summary.gpu_hours == pytest.approx(480 / 3600)
    assert summary.cost_ceiling_usd == pytest.approx(20.0)


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"seeds": [0, 0]}, "seeds repeat: 0"),
        ({"suite": "mini"}, "not both"),
        (
            {"agents": [{"agent": "aide/claude-sonnet-4-5", "models": ["gpt-5"]}]},
            "names its model \\(claude-sonnet-4-5\\) and models lists",
        ),
        ({"seeds": []}, "seeds"),
        ({"agents": []}, "agents"),
        ({"gpus": 2}, "gpus"),  # unknown field (the right one is gpus_per_run)
        ({"tasks": ["no-such-task"]}, "no-such-task"),
        ({"agents": [{"agent": "dummy", "budget_usd": 3}]}, "not an llm agent"),
        ({"agents": [{"agent": "dummy", "models": ["gpt-5"]}]}, "not an llm agent"),
        ({"conditions": [{"name": "a"}, {"name": "a"}]}, "conditions repeat: a"),
        (
            {"conditions": [{"name": "a", "agents": {"nope": {"steps": 1}}}]},
            "overrides agents the study does not run: nope",
        ),
        ({"conditions": [{"name": "a", "budget_usd": 0}]}, "budget_usd must be > 0"),
        ({"conditions": [{"name": "a", "budget_usd": "lots"}]}, "budget_usd"),
        ({"conditions": [{"name": "a", "prompts": "theirs"}]}, "prompts"),
        ({"agents": [{"agent": "dummy", "selection": "study"}]}, "not an llm agent"),
    ],
)
def test_bad_experiment_files_are_refused_with_the_reason(tmp_path: Path, fields, reason):
    path = write_experiment(tmp_path, **fields)
    with pytest.raises(SpecError, match=reason):
        experiment_jobs(load_experiment(path), tmp_path / "runs")


def test_a_file_with_neither_tasks_nor_suite_is_not_told_it_gave_both(tmp_path: Path):
    path = write_experiment(tmp_path, tasks=[])
    with pytest.raises(SpecError) as refused:
        load_experiment(path)
    assert "give either 'tasks' (a list of task ids) or 'suite' (mini or all)" in str(refused.value)
    assert "not both" not in str(refused.value)


def test_a_missing_experiment_file_names_the_presets(tmp_path: Path):
    with pytest.raises(SpecError, match="paper-grid"):
        load_experiment(tmp_path / "nope.yaml")


def test_the_paper_preset_expands_to_the_published_grid():
    study = load_experiment("paper-grid").only_condition("paper")
    keys = expand(study)
    # AIDE and ML-Master with three back-ends, R&D-Agent with GPT-5: 7 pairs x 20 tasks x 1 seed
    assert len(keys) == 7 * 20 == 140
    pairs = {(k.agent, k.model) for k in keys}
    backends = ("gpt-5", "claude-sonnet-4-5", "gemini-3-pro")
    assert pairs == {("aide", m) for m in backends} | {("ml-master", m) for m in backends} | {
        ("rdagent", "gpt-5")
    }
    assert {k.task for k in keys} == set(all_tasks())
    assert len(all_tasks()) == 20
    assert {k.seed for k in keys} == {0}
    assert len(set(keys)) == len(keys)
    jobs = experiment_jobs(study, Path("runs"))
    assert len({job.config.run_id() for job in jobs}) == 140
    assert {job.config.time_limit_s for job in jobs} == {43200}
    assert dry_run_summary(jobs, gpus_per_run=1).gpu_hours == pytest.approx(140 * 12)
    # every condition of the preset is the same 140 runs, in its own folder and with its own ids
    grid = load_experiment("paper-grid")
    assert [c.name for c in grid.conditions] == ["paper", "24h", "solution-informed", "rexmle"]
    all_jobs = experiment_jobs(grid, Path("runs"))
    assert len(all_jobs) == 4 * 140
    assert len({job.config.run_id() for job in all_jobs}) == 4 * 140


def test_dry_run_prints_the_table_count_and_gpu_hours(tmp_path: Path):
    path = write_experiment(tmp_path, gpus_per_run=2)
    result = CliRunner().invoke(
        app, ["run", "--experiment", str(path), "--dry-run", "--runs-dir", str(tmp_path / "r")]
    )
    assert result.exit_code == 0, result.output
    # 12 runs x 2 GPUs x 30 s = 720 GPU-seconds = 0.2 GPU-hours
    assert "12 runs (12 to run), 2 GPU per run, 0.2 GPU-hours" in result.stdout
    job = experiment_jobs(load_experiment(path), tmp_path / "r")[0]
    assert job.config.run_id() in result.stdout
    assert not (tmp_path / "r").exists()  # nothing ran, nothing written


def test_experiment_refuses_flags_that_it_describes(tmp_path: Path):
    result = CliRunner().invoke(
        app, ["run", "--experiment", str(write_experiment(tmp_path)), "--agent", "dummy"]
    )
    assert result.exit_code == 2
    assert "drop --agent" in result.stderr


def test_an_experiment_runs_locally_and_status_counts_it(tmp_path: Path, isles22_dirs):
    path = write_experiment(
        tmp_path, agents=[{"agent": "dummy"}], tasks=["isles22"], seeds=[0, 1], sandbox="local"
    )
    runs = tmp_path / "runs"
    data = str(isles22_dirs.root.parent)
    args = ["run", "--experiment", str(path), "--runs-dir", str(runs), "--data-dir", data]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.stderr
    records = [read_record(runs / "study" / "isles22" / "dummy" / f"seed-{k}") for k in (0, 1)]
    assert [r.status for r in records if r] == ["completed", "completed"]
    assert {r.experiment for r in records if r} == {"study"}
    status = CliRunner().invoke(app, ["status", str(runs), "--json"])
    assert status.exit_code == 0, status.output
    assert json.loads(status.stdout)["counts"] == {"completed": 2}
