"""Refusals before anything starts, each saying what to do: a model the LLM config lacks, an
agents cache a sandbox cannot show, unknown agents and tasks in a dry run, experiment files
with wrong fields (named with their line).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from runner_support import COPY_SAMPLE
from typer.testing import CliRunner, Result

from rexmle.cli import app
from rexmle.llm.config import load_llm_config


def rexmle(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(app, list(args), env=env)


def flat(result: Result) -> str:
    return " ".join(result.output.split())


def test_an_unconfigured_model_is_refused_before_anything_starts(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for extra in ([], ["--dry-run"]):
        result = rexmle(
            "run", "--agent", "aide", "--model", "gpt-4o", "--task", "isles22", "--mini",
            "--runs-dir", str(runs), "--data-dir", str(tmp_path / "data"), *extra,
        )  # fmt: skip
        assert result.exit_code == 2
        configured = ", ".join(load_llm_config(None).models)
        assert (
            "--model: model 'gpt-4o' (aide-gpt-4o, role code) is not in the built-in LLM "
            f"config; its models: {configured}."
        ) in flat(result)
        assert "--llm-config FILE" in flat(result)
    assert not runs.exists()  # no run folder, no gateway, no data prepared
    assert not (tmp_path / "data").exists()


def test_a_model_in_the_given_llm_config_is_accepted(tmp_path: Path) -> None:
    config = tmp_path / "llm.yaml"
    config.write_text(
        "providers:\n  local: {api: openai, base_url: 'http://127.0.0.1:9/v1', key_env: null}\n"
        "models:\n  gpt-4o: {provider: local, upstream: gpt-4o, "
        "price: {input: 1, cached_input: 1, output: 1}}\n"
    )
    result = rexmle(
        "run", "--agent", "aide", "--model", "gpt-4o", "--task", "isles22", "--mini",
        "--runs-dir", str(tmp_path / "runs"), "--llm-config", str(config), "--dry-run",
    )  # fmt: skip
    # past the model check (the dry run may still stop at AIDE's uninstalled environment)
    assert "model 'gpt-4o'" not in flat(result)
    assert result.exit_code == 0 or "rexmle agents install aide" in flat(result)


def test_an_experiment_model_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "study.yaml"
    path.write_text(
        "name: s\nagents:\n  - agent: aide\n    models: [gpt-5, gpt-4o]\n"
        "tasks: [isles22]\nseeds: [0]\n"
    )
    result = rexmle("run", "--experiment", str(path), "--dry-run")
    assert result.exit_code == 2
    assert f"{path}, line 4: agents[0].models[1]: model 'gpt-4o'" in flat(result)


@pytest.mark.parametrize("root", ["/tmp", "/var/tmp", "/dev/shm"])
def test_agents_install_refuses_a_cache_under_a_private_root(root: str) -> None:
    cache = Path(root) / "rexmle-agents-refused-here"
    result = rexmle("agents", "install", "aide", env={"REXMLE_AGENTS_DIR": str(cache)})
    assert result.exit_code == 2
    assert f"the agents cache {cache} is under {root}: every sandbox has its own {root}" in flat(
        result
    )
    assert "Set REXMLE_AGENTS_DIR" in flat(result)
    assert not cache.exists()  # refused before the install started


def test_agents_install_refuses_a_cache_under_the_runs_root() -> None:
    runs = Path("/nonexistent-rexmle-runs")  # outside /tmp; nothing is made there
    cache = runs / "agents"
    result = rexmle(
        "agents", "install", "aide",
        env={"REXMLE_AGENTS_DIR": str(cache), "REXMLE_RUNS_DIR": str(runs)},
    )  # fmt: skip
    assert result.exit_code == 2
    assert "the sandbox hides that folder from agents" in flat(result)
    assert not cache.exists()


def test_an_unknown_agent_in_an_experiment_fails_the_dry_run(tmp_path: Path) -> None:
    path = tmp_path / "study.yaml"
    path.write_text("name: s\nagents:\n  - {agent: dummy}\n  - agent: baselin\ntasks: [isles22]\n")
    path.write_text(path.read_text() + "seeds: [0]\n")
    result = rexmle("run", "--experiment", str(path), "--dry-run")
    assert result.exit_code == 2
    assert (
        f"{path}, line 4: agents[1].agent: unknown agent 'baselin' (did you mean 'baseline'?); "
        "built-in agents:"
    ) in flat(result)


def test_an_unknown_task_in_an_experiment_fails_the_dry_run(tmp_path: Path) -> None:
    path = tmp_path / "study.yaml"
    path.write_text("name: s\nagents: [{agent: dummy}]\ntasks:\n  - isles22\n  - isles2\n")
    path.write_text(path.read_text() + "seeds: [0]\n")
    result = rexmle("run", "--experiment", str(path), "--dry-run")
    assert result.exit_code == 2
    assert f"{path}, line 5: tasks[1]: unknown task 'isles2' (did you mean 'isles22'?)" in flat(
        result
    )


def test_an_unknown_agent_given_by_flag_fails_the_dry_run(tmp_path: Path) -> None:
    result = rexmle(
        "run", "--agent", "baselin", "--task", "isles22", "--mini",
        "--runs-dir", str(tmp_path / "runs"), "--dry-run",
    )  # fmt: skip
    assert result.exit_code == 2
    assert "--agent: unknown agent 'baselin' (did you mean 'baseline'?)" in flat(result)


def test_experiment_file_errors_are_plain_words_with_field_and_line(tmp_path: Path) -> None:
    path = tmp_path / "study.yaml"
    path.write_text(
        "name: s\n"
        "agents:\n"
        "  - agent: dummy\n"
        "    agnt: x\n"
        "    memory_limit_mb: -3\n"
        "tasks: [isles22]\n"
        "sandbox: bwarp\n"
    )
    result = rexmle("run", "--experiment", str(path), "--dry-run")
    assert result.exit_code == 2
    lines = [line.strip() for line in result.output.splitlines()]
    assert f"error: {path}: not a valid experiment:" in lines
    assert "line 5: agents[0].memory_limit_mb: should be greater than 0, got -3" in lines
    assert any(
        line.startswith("line 4: agents[0].agnt: unknown field (fields here: agent,")
        for line in lines
    )
    assert "seeds: required, missing" in lines
    assert (
        "line 7: sandbox: should be 'auto', 'bwrap', 'local', 'docker' or 'apptainer', got 'bwarp'"
    ) in lines
    assert "pydantic" not in result.output
    assert "type=" not in result.output


def test_a_run_folder_of_another_config_names_what_differs_and_the_ways_out(
    isles22_dirs, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    args = [
        "run", "--agent", "command", "--agent-cmd", COPY_SAMPLE, "--agent-name", "mine",
        "--task", "isles22", "--mini", "--data-dir", str(isles22_dirs.root.parent),
        "--runs-dir", str(runs), "--sandbox", "local",
    ]  # fmt: skip
    assert rexmle(*args, "--time-limit", "60").exit_code == 0
    for extra in ([], ["--dry-run"]):
        refused = rexmle(*args, "--time-limit", "30", *extra)
        assert refused.exit_code == 2
        text = flat(refused)
        assert "holds a run of another config: agent.time_limit_s: 60.0 → 30.0;" in text
        assert "time_limit_s: 60.0 → 30.0" in text.split("agent.time_limit_s")[1]
        assert "Rerun with --force-config" in text
        assert "another --agent-name" in text
    dry = rexmle(*args, "--time-limit", "30", "--force-config", "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert "to run" in dry.output  # the replaced run is planned, nothing ran
    replaced = rexmle(*args, "--time-limit", "30", "--force-config")
    assert replaced.exit_code == 0, replaced.output
    from rexmle.records.runs import read_record

    record = read_record(runs / "default" / "isles22" / "mine" / "seed-0")
    assert record is not None
    assert record.config.time_limit_s == 30.0


def test_a_dry_run_by_flags_shows_its_runs_before_the_agent_is_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As with an experiment file: the job table, the cost and what to install, exit 0."""
    from rexmle.agents.environments import AgentEnv

    monkeypatch.setattr(AgentEnv, "is_installed", lambda _self: False)
    result = rexmle(
        "run", "--agent", "aide", "--task", "isles22", "--mini",
        "--runs-dir", str(tmp_path / "runs"), "--dry-run",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "run ids unknown: the environment of aide is not installed" in flat(result)
    assert "rexmle agents install aide" in flat(result)
    assert "LLM cost per run" in flat(result)
    assert not (tmp_path / "runs").exists()  # nothing ran
    # a wrong command is still refused
    no_command = rexmle("run", "--agent", "command", "--task", "isles22", "--mini", "--dry-run")
    assert no_command.exit_code == 2


def test_a_model_given_twice_by_flags_is_refused(tmp_path: Path) -> None:
    result = rexmle(
        "run", "--agent", "aide/claude-sonnet-4-5", "--model", "gpt-5", "--task", "isles22",
        "--runs-dir", str(tmp_path / "runs"), "--dry-run",
    )  # fmt: skip
    assert result.exit_code == 2
    assert (
        "--agent aide/claude-sonnet-4-5 names its model already: drop --model gpt-5, or give "
        "--agent aide --model gpt-5"
    ) in flat(result)
