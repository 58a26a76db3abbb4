"""The paper condition gives exactly the study's settings; the dry run states the deviations and
the LLM caps that are enforced, with a forecast computed from the price table.

STUDY below is written from the authors' reference scripts (rajpurkarlab/ReX-MLE at 477c834,
folder rex-mle/), each value with the file it comes from; it is not read from the code under
test.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from rexmle.cli import app
from rexmle.llm.config import load_llm_config
from rexmle.runner.deviations import DEVIATIONS, deviations_of
from rexmle.runner.executor import RunJob
from rexmle.runner.experiment import experiment_jobs, load_experiment
from rexmle.runner.llm_cost import enforced_limits, forecast_usd

STUDY = {
    "aide": {
        # agents/aide/config.yaml: agent.steps 2000, exec.timeout 32400, TIME_LIMIT_SECS 43200
        "steps": 2000,
        "step_timeout_s": 32400,
        "time_limit_s": 43200,
        # agents/aide/config.yaml: agent.code.temp 1, agent.feedback.temp 1
        "temperatures": {"code": 1.0, "feedback": 1.0},
        # agents/aide/config.yaml: gpt-5, claude-sonnet-4-5-20250929, gemini-3-pro-preview
        "upstreams": {"gpt-5", "claude-sonnet-4-5-20250929", "gemini-3-pro-preview"},
        # agents/aide/start.sh: submission/ of the workspace, else working/submission.csv
        "selection": "study",
        "scenario": None,
        # agents/aide/config.yaml: agent.search.max_debug_depth 20, agent.search.debug_prob 1
        "options": {"agent.search.max_debug_depth": 20, "agent.search.debug_prob": 1},
    },
    "ml-master": {
        # agents/ML-Master/config.yaml: agent.steps 5000, exec.timeout 43200, TIME_LIMIT 43200
        "steps": 5000,
        "step_timeout_s": 43200,
        "time_limit_s": 43200,
        # agents/ML-Master/config.yaml: agent.code.temp 1.0, agent.feedback.temp 1.0
        "temperatures": {"code": 1.0, "feedback": 1.0},
        # agents/ML-Master/config.yaml: ml-master/gpt5, claude and gemini3 entries
        "upstreams": {"gpt-5", "claude-sonnet-4-5-20250929", "gemini-3-pro-preview"},
        # agents/ML-Master/start.sh: best_submission/
        "selection": "study",
        "scenario": None,
        # agents/ML-Master/config.yaml: kwargs_common
        "options": {
            "agent.search.max_debug_depth": 20,
            "agent.search.debug_prob": 1.0,
            "agent.search.num_drafts": 5,
            "agent.search.num_bugs": 1,
            "agent.search.num_improves": 3,
            "agent.search.invalid_metric_upper_bound": 100,
            "agent.search.metric_improvement_threshold": 0.0001,
            "agent.search.max_improve_failure": 3,
            "agent.search.parallel_search_num": 3,
        },
    },
    "rdagent": {
        # agents/rdagent/config.yaml: no loop count (its default), timeout "12h" = 43200 s
        "steps": None,
        "step_timeout_s": None,
        "time_limit_s": 43200,
        # .env: temperature 1
        "temperatures": {"chat": 1.0},
        # run_rdagent.sh, .env: gpt-5 only
        "upstreams": {"gpt-5"},
        # agents/rdagent/start.sh: the newest loop's sota_exp_to_submit
        "selection": "study",
        # .env, rexmle_scenario.py: KaggleScen with the MLE-data mode on
        "scenario": "kaggle",
        "options": {},
    },
}
THREE_DAY = {
    # agents/aide/config_3_days.yaml: step_count 10000, time_limit 259200, exec.timeout 32400
    "aide": {"steps": 10000, "step_timeout_s": 32400, "time_limit_s": 259200},
    # agents/rdagent/config_3_days.yaml: timeout "72h" = 259200 s
    "rdagent": {"steps": None, "step_timeout_s": None, "time_limit_s": 259200},
}


def jobs_of(preset: str, condition: str) -> list[RunJob]:
    return experiment_jobs(load_experiment(preset).only_condition(condition), Path("runs"))


def adapter_jobs(jobs: list[RunJob], adapter: str) -> list[RunJob]:
    return [j for j in jobs if j.config.agent.llm and j.config.agent.llm.adapter == adapter]


@pytest.mark.parametrize("adapter", sorted(STUDY))
def test_the_paper_condition_gives_the_study_settings(adapter):
    expected = STUDY[adapter]
    jobs = adapter_jobs(jobs_of("paper-grid", "paper"), adapter)
    assert len(jobs) == 20 * len(expected["upstreams"])  # 20 tasks x back-ends x 1 seed
    llm = load_llm_config()
    upstreams = set()
    for job in jobs:
        config, settings = job.config, job.config.agent.llm
        assert settings is not None
        assert settings.steps == expected["steps"]
        assert settings.step_timeout_s == expected["step_timeout_s"]
        assert config.time_limit_s == expected["time_limit_s"]
        assert settings.temperatures == expected["temperatures"]
        assert settings.selection == expected["selection"]
        assert settings.scenario == expected["scenario"]
        assert dict(settings.options) == expected["options"]
        assert config.seed == 0
        assert config.prompts == "study"
        assert config.solution_informed is None
        # no USD cap, as the study; the gateway still meters every call
        assert config.llm_uncapped is True
        assert enforced_limits(config, llm.limits).budget_usd is None
        chat = {m for role, m in settings.models.items() if role != "embedding"}
        assert len(chat) == 1
        upstreams.add(llm.models[chat.pop()].upstream)
    assert upstreams == expected["upstreams"]


@pytest.mark.parametrize("adapter", sorted(THREE_DAY))
def test_the_three_day_ablation_gives_the_study_settings(adapter):
    jobs = adapter_jobs(jobs_of("paper-grid-3day", "3day"), adapter)
    assert jobs
    for job in jobs:
        settings = job.config.agent.llm
        assert settings is not None
        assert settings.steps == THREE_DAY[adapter]["steps"]
        assert settings.step_timeout_s == THREE_DAY[adapter]["step_timeout_s"]
        assert job.config.time_limit_s == THREE_DAY[adapter]["time_limit_s"]
        assert settings.temperatures == STUDY[adapter]["temperatures"]
        assert settings.selection == "study"
        assert settings.scenario == STUDY[adapter]["scenario"]
        assert job.config.llm_uncapped is True
    # the reference repository has no 3-day config for ML-Master
    assert not adapter_jobs(jobs_of("paper-grid-3day", "3day"), "ml-master")


def test_the_other_conditions_change_only_what_they_name():
    paper = {(j.config.task, j.config.agent.id): j.config for j in jobs_of("paper-grid", "paper")}
    for condition, changed in (
        ("24h", {"time_limit_s": 86400.0}),
        ("solution-informed", {"solution_informed": True}),
    ):
        for job in jobs_of("paper-grid", condition):
            base = paper[(job.config.task, job.config.agent.id)]
            expected = base.model_copy(update={**changed, "condition": condition})
            if "time_limit_s" in changed:
                agent = base.agent.model_copy(update={"time_limit_s": changed["time_limit_s"]})
                expected = expected.model_copy(update={"agent": agent})
            assert job.config == expected
    for job in jobs_of("paper-grid", "rexmle"):
        base = paper[(job.config.task, job.config.agent.id)]
        assert job.config.prompts is None
        assert job.config.llm_uncapped is None
        assert job.config.llm_budget_usd == 100
        assert job.config.agent.llm.selection == "best-valid"
        assert job.config.agent.llm.steps == base.agent.llm.steps
        if job.config.agent.llm.adapter == "rdagent":
            assert job.config.agent.llm.scenario == "data-science"


def test_the_table_ids_are_unique_and_the_paper_condition_has_no_avoidable_deviation():
    assert len({d.id for d in DEVIATIONS}) == len(DEVIATIONS)
    limits = load_llm_config().limits
    for job in jobs_of("paper-grid", "paper"):
        ids = {d.id for d in deviations_of(job.config, enforced_limits(job.config, limits))}
        # what the study did and ReX-MLE keeps on purpose (stated), nothing else
        avoidable = {"prompts", "selection", "llm-budget", "time-limit", "steps", "step-timeout"}
        assert not ids & avoidable, job.label
        assert {"network", "validation", "sandbox", "llm-routes"} <= ids
        assert ("rdagent-scenario" in ids) is False
    job = jobs_of("paper-grid", "paper")[0]
    # the local sandbox isolates nothing, as the study's agents ran: no sandbox deviation then
    assert "sandbox" in {d.id for d in deviations_of(job.config, limits, sandbox="bwrap")}
    assert "sandbox" not in {d.id for d in deviations_of(job.config, limits, sandbox="local")}
    for job in jobs_of("paper-grid", "rexmle"):
        ids = {d.id for d in deviations_of(job.config, enforced_limits(job.config, limits))}
        assert {"prompts", "selection", "llm-budget"} <= ids
        if job.config.agent.llm.adapter == "rdagent":
            assert "rdagent-scenario" in ids


def dry_run(*args: str, runs: Path) -> str:
    result = CliRunner().invoke(app, ["run", *args, "--dry-run", "--runs-dir", str(runs)])
    assert result.exit_code == 0, result.output
    return result.stdout


def deviation_ids(output: str) -> list[str]:
    section = output.split("deviations from the study", 1)[1]
    return [line.split("]")[0].strip(" [") for line in section.splitlines() if "  [" in line]


def test_dry_run_states_each_deviation_with_study_ours_and_why(tmp_path: Path):
    output = dry_run("--experiment", "paper-grid", "--condition", "paper", runs=tmp_path / "r")
    ids = deviation_ids(output)
    assert ids == [
        "network",
        "sandbox",
        "environment",
        "validation",
        "llm-routes",
        "llm-rate",
        "gpus",
        "grading-script",
        "ml-master-upload",
        *(["prompts-unavailable"] if "prompts-unavailable" in ids else []),
    ]
    assert "[network] network (140 of 140 runs)" in output
    assert "[ml-master-upload] ML-Master validation upload (60 of 140 runs)" in output
    block = output.split("[validation]", 1)[1].split("  [", 1)[0]
    assert "study: a validation server ran the full grader against the private answers" in block
    assert "ours:  the validation server checks the format only and never scores" in block
    assert "why:   a score against the test answers leaks them" in block
    rexmle = dry_run("--experiment", "paper-grid", "--condition", "rexmle", runs=tmp_path / "r")
    assert {"prompts", "selection", "llm-budget", "rdagent-scenario"} <= set(deviation_ids(rexmle))
    day = dry_run("--experiment", "paper-grid", "--condition", "24h", runs=tmp_path / "r")
    assert "ours:  86400 s (24 h)" in day
    # an agent the study did not run has nothing to deviate from
    dummy = dry_run("--agent", "dummy", "--task", "isles22", "--mini", runs=tmp_path / "r")
    assert "deviations from the study: none apply" in dummy


def test_dry_run_prints_the_ceiling_that_is_enforced(tmp_path: Path):
    paper = dry_run("--experiment", "paper-grid", "--condition", "paper", runs=tmp_path / "r")
    assert "true ceiling: none (140 run(s) without a USD cap, metered)" in paper
    rexmle = dry_run("--experiment", "paper-grid", "--condition", "rexmle", runs=tmp_path / "r")
    # 140 runs x the condition's 100 USD
    assert "true ceiling: $14,000.00" in rexmle
    # a study without its own cap takes the LLM config's (100 USD, 120 calls/min), or the flags'
    study = tmp_path / "study.yaml"
    study.write_text("name: s\nagents: [{agent: aide}]\ntasks: [isles22]\nseeds: [0]\n")
    flags = ("--experiment", str(study))
    default = dry_run(*flags, runs=tmp_path / "r")
    default_row = next(line for line in default.splitlines() if " aide " in line and "$" in line)
    assert "$100.00" in default_row
    assert " 120 " in default_row
    assert "true ceiling: $100.00" in default
    capped = dry_run(*flags, "--llm-budget-usd", "7", "--llm-max-calls-per-minute", "9",
                     runs=tmp_path / "r")  # fmt: skip
    row = next(line for line in capped.splitlines() if " aide " in line and "$" in line)
    assert "$7.00" in row
    assert " 9 " in row
    assert "true ceiling: $7.00" in capped


def test_the_forecast_is_the_stated_arithmetic_on_the_price_table(tmp_path: Path):
    (job,) = [
        j
        for j in jobs_of("paper-grid", "paper")
        if j.config.task == "isles22" and j.config.agent.id == "aide-gpt-5"
    ]
    # 12 h / 600 s per step = 72 steps (< 2000); 2 calls per step; per call
    # 6000 x 1.25 / 1e6 + 4000 x 10 / 1e6 = 0.0075 + 0.04 = 0.0475 USD -> 144 x 0.0475 = 6.84
    assert forecast_usd(job.config, load_llm_config()) == pytest.approx(6.84)
    output = dry_run("--experiment", "paper-grid", "--condition", "paper", runs=tmp_path / "r")
    row = next(line for line in output.splitlines() if " aide-gpt-5 " in line and "$" in line)
    assert "$6.84" in row
    assert "$136.80" in row
    assert "forecast = an estimate, not a measurement" in output


@pytest.mark.parametrize("agent", ["aide/claude-sonnet-4-5", "ml-master/gemini-3-pro", "rdagent"])
def test_a_preset_condition_applies_its_new_fields_to_a_flag_run(agent):
    from rexmle.runner.experiment import AgentEntry, Experiment, preset_condition, with_condition

    flags = Experiment(
        name="default", agents=[AgentEntry(agent=agent)], tasks=["isles22"], seeds=[0]
    )
    adapter = agent.partition("/")[0]
    for name in ("paper", "paper-grid/solution-informed"):
        (job,) = experiment_jobs(with_condition(flags, preset_condition(name)), Path("runs"))
        settings = job.config.agent.llm
        assert settings is not None
        assert settings.steps == STUDY[adapter]["steps"]
        assert settings.step_timeout_s == STUDY[adapter]["step_timeout_s"]
        assert job.config.time_limit_s == STUDY[adapter]["time_limit_s"]
        assert settings.selection == "study"
        assert settings.scenario == STUDY[adapter]["scenario"]
        assert job.config.prompts == "study"
        assert job.config.llm_uncapped is True
        assert job.config.solution_informed is (True if "solution" in name else None)
        assert job.group == f"default-{name.rpartition('/')[2]}"


def test_dry_run_warns_when_solution_informed_runs_lack_a_writeup(tmp_path: Path, monkeypatch):
    from rexmle.errors import SpecError
    from rexmle.runner import solution_writeups

    def unavailable():
        msg = "this install lacks the write-ups (test)"
        raise SpecError(msg)

    monkeypatch.setattr(solution_writeups, "writeup_source", unavailable)
    args = ("--experiment", "paper-grid", "--condition", "solution-informed")
    output = dry_run(*args, runs=tmp_path / "r")
    assert "WARNING: 140 solution-informed run(s) of 20 task(s) have no write-up" in output
    assert "this install lacks the write-ups (test)" in output
    paper = dry_run("--experiment", "paper-grid", "--condition", "paper", runs=tmp_path / "r")
    assert "WARNING" not in paper
    monkeypatch.undo()  # the shipped write-ups: every task has one, nothing to warn about
    assert "WARNING" not in dry_run(*args, runs=tmp_path / "r")


def test_every_task_s_writeup_can_be_given_to_a_solution_informed_run():
    from rexmle.runner.dry_run import writeup_problems
    from rexmle.tasks.registry import all_tasks

    jobs = jobs_of("paper-grid", "solution-informed")
    assert {job.config.task for job in jobs} == set(all_tasks())
    assert writeup_problems(jobs) == {}
