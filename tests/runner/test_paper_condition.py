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

from rexmle.agents.adapters.native_llm import native_backend
from rexmle.cli import app
from rexmle.llm.config import LlmConfig, load_llm_config
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
        # aideml 0.2.2 backend: the provider chosen from the model name (claude-* its Anthropic
        # back-end, gemini-* its Gemini one); gpt-5 on its OpenAI client
        # (setup/aide/backend_openai.txt: Azure OpenAI)
        "llm_route": "native",
        "backends": {
            "gpt-5": "openai",
            "claude-sonnet-4-5-20250929": "anthropic",
            "gemini-3-pro-preview": "gemini",
        },
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
        # agents/ML-Master/utils/llm_caller.py: provider from the model name (claude* Anthropic
        # client, gemini* google-genai); gpt-5: .env ML_MASTER_GPT5_* (Azure OpenAI)
        "llm_route": "native",
        "backends": {
            "gpt-5": "openai",
            "claude-sonnet-4-5-20250929": "anthropic",
            "gemini-3-pro-preview": "gemini",
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
        # .env: CHAT_MODEL azure/gpt-5 through LiteLLM (OpenAI-style; no Claude or Gemini run)
        "llm_route": "openai",
        "backends": {"gpt-5": "openai"},
    },
}
THREE_DAY = {
    # agents/aide/config_3_days.yaml: step_count 10000, time_limit 259200, exec.timeout 32400
    "aide": {"steps": 10000, "step_timeout_s": 32400, "time_limit_s": 259200},
    # agents/aide/config_3_days.yaml: the same three back-ends
    # agents/rdagent/config_3_days.yaml: timeout "72h" = 259200 s
    "rdagent": {"steps": None, "step_timeout_s": None, "time_limit_s": 259200},
}


def backend_of(job: RunJob, llm: LlmConfig) -> dict[str, str]:
    """Upstream model -> the back-end the agent itself calls it with (``openai``: its
    OpenAI-compatible client, the gateway translating for other providers), per chat role.
    """
    settings = job.config.agent.llm
    assert settings is not None
    return {
        llm.models[model].upstream: native_backend(model, settings.llm_route) or "openai"
        for role, model in settings.models.items()
        if role != "embedding"
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
        assert settings.llm_route == expected["llm_route"]
        chat = {m for role, m in settings.models.items() if role != "embedding"}
        assert len(chat) == 1
        upstreams.add(llm.models[chat.pop()].upstream)
        # each model reaches the back-end of the agent the study used for it
        for upstream, backend in backend_of(job, llm).items():
            assert backend == expected["backends"][upstream], (job.label, upstream)
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
        assert settings.llm_route == STUDY[adapter]["llm_route"]
        assert job.config.llm_uncapped is True
    informed = adapter_jobs(jobs_of("paper-grid-3day", "solution-informed"), adapter)
    assert {j.config.agent.llm.llm_route for j in informed} == {STUDY[adapter]["llm_route"]}
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
        # every model on the agent's OpenAI-compatible path, the gateway translating
        assert job.config.agent.llm.llm_route == "openai"
        assert set(backend_of(job, load_llm_config()).values()) == {"openai"}
        if job.config.agent.llm.adapter == "rdagent":
            assert job.config.agent.llm.scenario == "data-science"


def test_the_table_ids_are_unique_and_the_paper_condition_has_no_avoidable_deviation():
    assert len({d.id for d in DEVIATIONS}) == len(DEVIATIONS)
    llm = load_llm_config()
    limits = llm.limits
    for job in jobs_of("paper-grid", "paper"):
        ids = {d.id for d in deviations_of(job.config, enforced_limits(job.config, limits))}
        # what the study did and ReX-MLE keeps on purpose (stated), nothing else
        avoidable = {"prompts", "selection", "llm-budget", "time-limit", "steps", "step-timeout"}
        assert not ids & avoidable, job.label
        assert {"network", "validation", "sandbox"} <= ids
        assert ("rdagent-scenario" in ids) is False
        # Claude and Gemini reach the agents' own back-ends, as in the study
        assert "llm-routes" not in ids, job.label
        # gpt-5 went to Azure OpenAI in the study, to the config's OpenAI provider here
        assert ("openai-endpoint" in ids) == ("gpt-5" in backend_of(job, llm)), job.label
    job = jobs_of("paper-grid", "paper")[0]
    # the local sandbox isolates nothing, as the study's agents ran: no sandbox deviation then
    assert "sandbox" in {d.id for d in deviations_of(job.config, limits, sandbox="bwrap")}
    assert "sandbox" not in {d.id for d in deviations_of(job.config, limits, sandbox="local")}
    for job in jobs_of("paper-grid", "rexmle"):
        ids = {d.id for d in deviations_of(job.config, enforced_limits(job.config, limits))}
        assert {"prompts", "selection", "llm-budget"} <= ids
        if job.config.agent.llm.adapter == "rdagent":
            assert "rdagent-scenario" in ids
        translated = {"claude-sonnet-4-5-20250929", "gemini-3-pro-preview"} & set(
            backend_of(job, llm)
        )
        assert ("llm-routes" in ids) == bool(translated), job.label


def only(jobs: list[RunJob], agent_id: str) -> RunJob:
    (job,) = [j for j in jobs if j.config.task == "isles22" and j.config.agent.id == agent_id]
    return job


def deviation(job: RunJob, deviation_id: str, llm: LlmConfig | None = None):
    records = deviations_of(job.config, None, llm_config=llm)
    return next((d for d in records if d.id == deviation_id), None)


def test_the_llm_route_deviation_follows_the_route_each_model_takes():
    paper = only(jobs_of("paper-grid", "paper"), "ml-master-gemini-3-pro")
    assert deviation(paper, "llm-routes") is None
    # the same run on the openai route: Gemini is translated by the gateway, and stated so
    spec = paper.config.agent.with_overrides(llm_route="openai")
    openai = paper.config.model_copy(update={"agent": spec})
    record = deviation(RunJob(openai, paper.group, paper.folder), "llm-routes")
    assert record is not None
    assert record.ours.startswith("gemini-3-pro as gw/<model>")
    assert "(llm_route = openai)" in record.ours
    # an adapter without a native route: stated with the reason, whatever the model
    rexmle = only(jobs_of("paper-grid", "rexmle"), "rdagent-gpt-5")
    claude = rexmle.config.agent.with_overrides(model="claude-sonnet-4-5", name="rd")
    job = RunJob(rexmle.config.model_copy(update={"agent": claude}), rexmle.group, rexmle.folder)
    record = deviation(job, "llm-routes")
    assert record is not None
    assert "the rdagent adapter has no native route" in record.ours
    # a model that is neither Claude nor Gemini has no native back-end to miss
    assert deviation(only(jobs_of("paper-grid", "rexmle"), "aide-gpt-5"), "llm-routes") is None


def test_the_openai_endpoint_deviation_names_the_configured_provider():
    job = only(jobs_of("paper-grid", "paper"), "rdagent-gpt-5")
    record = deviation(job, "openai-endpoint")
    assert record is not None
    assert "Azure OpenAI" in record.study
    assert record.ours.startswith("gpt-5, text-embedding-3-small through the gateway's")
    assert "provider openai at https://api.openai.com/v1" in record.ours
    llm = load_llm_config()
    moved = llm.model_copy(
        update={
            "providers": {
                **llm.providers,
                "openai": llm.providers["openai"].model_copy(
                    update={"base_url": "https://llm.example.org/v1"}
                ),
            }
        }
    )
    elsewhere = deviation(job, "openai-endpoint", moved)
    assert elsewhere is not None
    assert "provider openai at https://llm.example.org/v1" in elsewhere.ours
    # Claude on its own back-end: no OpenAI model, nothing to state
    assert deviation(only(jobs_of("paper-grid", "paper"), "aide-claude-sonnet-4-5"),
                     "openai-endpoint") is None  # fmt: skip


def test_gemini_translated_by_litellm_is_stated_for_aide_only_under_that_setting():
    aide = only(jobs_of("paper-grid", "paper"), "aide-gemini-3-pro")
    assert deviation(aide, "gemini-openai-translated") is None  # the default: Google's endpoint
    llm = load_llm_config()
    translated = llm.model_copy(update={"gemini_openai_route": "litellm"})
    record = deviation(aide, "gemini-openai-translated", translated)
    assert record is not None
    assert record.ours.startswith("gemini-3-pro: the gateway's LiteLLM translates")
    # ML-Master's Gemini back-end calls generateContent itself: nothing to state
    master = only(jobs_of("paper-grid", "paper"), "ml-master-gemini-3-pro")
    assert deviation(master, "gemini-openai-translated", translated) is None
    # AIDE on the OpenAI-style route: that is the llm-routes item, not this one
    spec = aide.config.agent.with_overrides(llm_route="openai")
    openai = RunJob(aide.config.model_copy(update={"agent": spec}), aide.group, aide.folder)
    assert deviation(openai, "gemini-openai-translated", translated) is None


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
        "openai-endpoint",
        "llm-rate",
        "gpus",
        "grading-script",
        "ml-master-upload",
        *(["prompts-unavailable"] if "prompts-unavailable" in ids else []),
    ]
    assert "[network] network (140 of 140 runs)" in output
    assert "[ml-master-upload] ML-Master validation upload (60 of 140 runs)" in output
    # gpt-5 of AIDE, ML-Master and R&D-Agent; Claude and Gemini on the agents' own back-ends
    assert "[openai-endpoint] OpenAI endpoint (60 of 140 runs)" in output
    block = output.split("[validation]", 1)[1].split("  [", 1)[0]
    assert "study: a validation server ran the full grader against the private answers" in block
    assert "ours:  the validation server checks the format only and never scores" in block
    assert "why:   a score against the test answers leaks them" in block
    rexmle = dry_run("--experiment", "paper-grid", "--condition", "rexmle", runs=tmp_path / "r")
    assert {"prompts", "selection", "llm-budget", "rdagent-scenario"} <= set(deviation_ids(rexmle))
    # AIDE's and ML-Master's Claude and Gemini runs: 4 pairs x 20 tasks
    assert "[llm-routes] Claude and Gemini routes (80 of 140 runs)" in rexmle
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


def test_the_forecast_of_a_run_never_exceeds_the_cap_that_stops_it(tmp_path: Path):
    study = tmp_path / "study.yaml"
    study.write_text("name: s\nagents: [{agent: aide}]\ntasks: [isles22, seg_a]\nseeds: [0]\n")
    # uncapped, each run's forecast is 6.84 USD (above); under a 2 USD cap the gateway stops it
    capped = dry_run("--experiment", str(study), "--llm-budget-usd", "2", runs=tmp_path / "r")
    row = next(line for line in capped.splitlines() if " aide " in line and "$" in line)
    assert row.split()[-2:] == ["$2.00", "$4.00"], row  # forecast per run, forecast of the group
    assert "forecast $4.00 in total" in capped
    assert "at most the run's USD cap" in capped


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
        assert settings.llm_route == STUDY[adapter]["llm_route"]
        assert job.config.prompts == "study"
        assert job.config.llm_uncapped is True
        assert job.config.solution_informed is (True if "solution" in name else None)
        assert job.group == f"default-{name.rpartition('/')[2]}"
    (job,) = experiment_jobs(with_condition(flags, preset_condition("rexmle")), Path("runs"))
    assert job.config.agent.llm.llm_route == "openai"


def test_a_flag_run_takes_the_route_from_its_condition():
    """``rexmle run --agent aide/claude-sonnet-4-5 --condition NAME``, as the command builds it."""
    from rexmle.runner.experiment import AgentEntry, Experiment, preset_condition, with_condition

    flags = Experiment(
        name="default",
        agents=[AgentEntry(agent="aide/claude-sonnet-4-5")],
        tasks=["isles22"],
        seeds=[0],
    )
    routes = {}
    for name in ("paper", "rexmle"):
        (job,) = experiment_jobs(with_condition(flags, preset_condition(name)), Path("runs"))
        ids = {d.id for d in deviations_of(job.config, None)}
        routes[name] = (job.config.agent.llm.llm_route, "llm-routes" in ids)
    assert routes == {"paper": ("native", False), "rexmle": ("openai", True)}


def test_a_native_route_for_an_adapter_without_one_is_refused(tmp_path: Path):
    from rexmle.errors import SpecError
    from rexmle.runner.experiment import AgentEntry, resolve_agents

    study = tmp_path / "study.yaml"
    study.write_text(
        "name: s\nagents: [{agent: rdagent}]\ntasks: [isles22]\nseeds: [0]\n"
        "conditions: [{name: c, agents: {rdagent: {llm_route: native}}}]\n"
    )
    with pytest.raises(SpecError, match="the rdagent adapter has the openai route only"):
        resolve_agents(load_experiment(study))
    with pytest.raises(SpecError, match="not an llm agent: llm_route apply to llm agents only"):
        resolve_agents(
            load_experiment(study).model_copy(
                update={
                    "agents": [AgentEntry(agent="baseline", llm_route="openai")],
                    "conditions": [],
                }
            )
        )


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
