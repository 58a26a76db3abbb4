"""The one run path: every ``rexmle run`` option has one role, ``--condition``, settings recorded,
stops during grading recorded ``cancelled``, and a working folder holding ``rexmle/`` is harmless.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import typer
import yaml
from runner_support import COPY_SAMPLE
from typer.testing import CliRunner, Result

from rexmle.cli import app
from rexmle.records.runs import SettingsRecord, read_record
from rexmle.runner.commands import RUN_OPTION_ROLES, settings_from_flags
from rexmle.runner.experiment import load_experiment
from rexmle.runner.settings import NOT_RECORDED, RunSettings

STUDY_VALUES = {
    "agent": "dummy",
    "task": "isles22",
    "suite": "mini",
    "seeds": "2",
    "time_limit": "60",
    "executor": "local",
    "concurrency": "2",
    "gpus": "0",
    "group": "g",
    "agent_cmd": "true",
    "agent_name": "named",
    "agent_env": "HOME",
    "memory_limit_mb": "100",
    "model": "gpt-5",
    "steps": "2",
    "step_timeout": "5",
    "sandbox": "local",
    "slurm_arg": "--mem=1G",
    "agent_dir": ".",
}
"""A value for each study option that takes one (flags such as --mini take none)."""


def in_process(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def run_params() -> list:
    """The options of the ``run`` command, as the CLI parses them."""
    command = typer.main.get_command(app)
    return list(command.commands["run"].params)  # type: ignore[attr-defined]


def write_study(tmp_path: Path, **more: object) -> Path:
    content = {
        "name": "study",
        "agents": [{"agent": "dummy"}],
        "tasks": ["isles22"],
        "seeds": [0],
        "time_limit_s": 60,
        "mini": True,
        "sandbox": "local",
        **more,
    }
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(content), encoding="utf-8")
    return path


def test_every_run_option_has_exactly_one_role():
    names = {param.name for param in run_params()}
    assert names == set(RUN_OPTION_ROLES)  # a new option must say how it maps


def test_every_study_option_is_refused_by_name_beside_an_experiment(tmp_path: Path):
    study = write_study(tmp_path)
    for param in run_params():
        if RUN_OPTION_ROLES[param.name] != "study":
            continue
        flag = param.opts[0]
        given = [flag] if param.is_flag else [f"{flag}={STUDY_VALUES[param.name]}"]
        result = in_process("run", "--experiment", str(study), *given, "--dry-run")
        assert result.exit_code == 2, (flag, result.output)
        assert "--experiment describes the whole study" in result.output, flag
        assert flag in result.output, (flag, result.output)


def test_every_settings_option_reaches_the_run_settings(tmp_path: Path):
    study = load_experiment(write_study(tmp_path))
    config = tmp_path / "llm.yaml"
    config.write_text("models: {}\n", encoding="utf-8")
    defaults: dict[str, object] = {
        "runs_dir": None,
        "data_dir": None,
        "kill_grace": 5.0,
        "keep_data": False,
        "grade_memory_mb": 16384,
        "validation_memory_mb": 8192,
        "llm_config": None,
        "llm": False,
        "llm_budget_usd": None,
        "llm_max_calls_per_minute": None,
        "llm_shared_gateway": False,
    }
    changed: dict[str, object] = {
        "runs_dir": tmp_path / "elsewhere",
        "data_dir": tmp_path / "data-elsewhere",
        "kill_grace": 1.5,
        "keep_data": True,
        "grade_memory_mb": 3001,
        "validation_memory_mb": 0,
        "llm_config": config,
        "llm": True,
        "llm_budget_usd": 0.5,
        "llm_max_calls_per_minute": 7,
        "llm_shared_gateway": True,
    }
    settings_options = {n for n, role in RUN_OPTION_ROLES.items() if role == "settings"}
    assert settings_options == set(defaults)
    base = settings_from_flags(defaults, study)
    for name, value in changed.items():
        moved = settings_from_flags({**defaults, name: value}, study)
        differ = {
            field
            for field in RunSettings.model_fields
            if getattr(moved, field) != getattr(base, field)
        }
        assert differ, f"--{name} changes nothing in RunSettings"
    assert settings_from_flags({**defaults, "grade_memory_mb": 3001}, study).grade_memory_bytes == (
        3001 << 20
    )
    assert (
        settings_from_flags({**defaults, "validation_memory_mb": 0}, study).validation_memory_bytes
        is None
    )


def test_every_result_changing_setting_is_recorded():
    recorded = set(SettingsRecord.model_fields)
    assert set(RunSettings.model_fields) - set(NOT_RECORDED) <= recorded


def test_run_json_says_how_geminis_openai_compatible_route_went(tmp_path: Path):
    built_in = RunSettings(data_dir=tmp_path, runs_dir=tmp_path).recorded()
    assert built_in.llm_gemini_openai_route == "google"
    config = tmp_path / "llm.yaml"
    config.write_text(
        "providers: {g: {api: gemini, base_url: 'http://127.0.0.1:1/v1beta'}}\n"
        "models: {m: {provider: g, upstream: m, price: {input: 1, cached_input: 1, output: 1}}}\n"
        "gemini_openai_route: litellm\n"
    )
    given = RunSettings(data_dir=tmp_path, runs_dir=tmp_path, llm_config=config).recorded()
    assert given.llm_gemini_openai_route == "litellm"


def test_an_llm_config_that_is_missing_is_refused_by_name(tmp_path: Path):
    result = in_process(
        "run", "--agent", "dummy", "--task", "isles22", "--mini",
        "--llm-config", str(tmp_path / "nope.yaml"), "--runs-dir", str(tmp_path / "r"),
    )  # fmt: skip
    assert result.exit_code == 2
    assert "--llm-config" in result.output
    assert "no such file" in result.output


@pytest.mark.parametrize(
    ("flags", "reason"),
    [
        (["--executor", "slurm", "--gpus", "0"], "--gpus: local executor only"),
        (["--executor", "slurm", "--concurrency", "2"], "--concurrency: local executor only"),
        (["--slurm-arg=--mem=1G"], "--slurm-arg applies to --executor slurm only"),
        (["--no-wait"], "--no-wait: for the slurm executor only"),
        (["--poll", "1"], "--poll: for the slurm executor only"),
    ],
)
def test_options_of_the_other_executor_are_refused(tmp_path: Path, flags, reason):
    result = in_process(
        "run", "--agent", "dummy", "--task", "isles22", "--mini", *flags,
        "--runs-dir", str(tmp_path / "r"), "--dry-run",
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert reason in result.output


def test_condition_selects_one_condition_of_an_experiment(tmp_path: Path):
    study = write_study(
        tmp_path, conditions=[{"name": "short", "time_limit_s": 30}, {"name": "long"}]
    )
    both = in_process("run", "--experiment", str(study), "--dry-run")
    assert both.exit_code == 0, both.output
    assert "short" in both.output
    assert "long" in both.output
    one = in_process("run", "--experiment", str(study), "--condition", "short", "--dry-run")
    assert one.exit_code == 0, one.output
    assert "short" in one.output
    assert "long" not in one.output
    assert "1 runs (1 to run)" in one.output
    unknown = in_process("run", "--experiment", str(study), "--condition", "nope", "--dry-run")
    assert unknown.exit_code == 2
    assert "has no condition 'nope' (its conditions: short, long)" in unknown.output


def test_condition_in_a_flag_run_applies_a_preset_condition(tmp_path: Path):
    runs = tmp_path / "runs"
    result = in_process(
        "run", "--agent", "dummy", "--task", "isles22", "--mini", "--condition", "24h",
        "--runs-dir", str(runs), "--dry-run",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "24h" in result.output
    assert " 24 " in result.output  # the condition's 24 h limit, not the dummy's own
    missing = in_process(
        "run", "--agent", "dummy", "--task", "isles22", "--mini", "--condition", "nope",
        "--runs-dir", str(runs), "--dry-run",
    )  # fmt: skip
    assert missing.exit_code == 2
    assert (
        "no preset declares a condition 'nope' (preset conditions: 24h, 3day, paper, rexmle, "
        "solution-informed)" in missing.output
    )
    # a condition two presets declare differently is refused unless one is named
    both = in_process(
        "run", "--agent", "dummy", "--task", "isles22", "--mini", "--condition",
        "solution-informed", "--runs-dir", str(runs), "--dry-run",
    )  # fmt: skip
    assert both.exit_code == 2
    assert "--condition paper-grid/solution-informed" in both.output
    named = in_process(
        "run", "--agent", "dummy", "--task", "isles22", "--mini", "--condition",
        "paper-grid-3day/solution-informed", "--runs-dir", str(runs), "--dry-run",
    )  # fmt: skip
    assert named.exit_code == 0, named.output
    assert " 72 " in named.output


def test_settings_beside_an_experiment_reach_run_json(tmp_path: Path, isles22_dirs):
    study = write_study(tmp_path)
    runs = tmp_path / "runs"
    result = in_process(
        "run", "--experiment", str(study), "--grade-memory-mb", "3001", "--kill-grace", "1.5",
        "--runs-dir", str(runs), "--data-dir", str(isles22_dirs.root.parent),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    record = read_record(runs / "study" / "isles22" / "dummy" / "seed-0")
    assert record is not None
    assert record.status == "completed"
    assert record.experiment == "study"
    assert record.settings is not None
    assert record.settings.grade_memory_bytes == 3001 << 20
    assert record.settings.kill_grace_s == 1.5
    assert record.settings.sandbox == "local"


def wait_for(condition, *, timeout_s: float = 120.0, step_s: float = 0.2) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(step_s)


def rexmle_script() -> str:
    """The installed ``rexmle`` command (as a user runs it, from any folder)."""
    return str(Path(sys.executable).parent / "rexmle")


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_during_grading_is_cancelled_and_runs_again(tmp_path: Path, isles22_dirs, stop):
    runs = tmp_path / "runs"
    argv = [
        rexmle_script(), "run", "--agent", "command", "--agent-cmd", COPY_SAMPLE,
        "--task", "isles22", "--mini", "--sandbox", "local",
        "--runs-dir", str(runs), "--data-dir", str(isles22_dirs.root.parent),
    ]  # fmt: skip
    folder = runs / "default" / "isles22"
    # a terminal's Ctrl-C goes to the whole foreground process group: so does this SIGINT
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        wait_for(lambda: any(folder.glob("*/seed-0/grade.log")), step_s=0.01)
        os.killpg(process.pid, stop)
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stderr
    (run_folder,) = folder.glob("*/seed-0")
    record = read_record(run_folder)
    assert record is not None
    assert record.status == "cancelled", record.error
    assert "cancelled while grading" in (record.error or "")
    assert record.grade is None
    assert not (run_folder / "grade.json").exists()
    again = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert again.returncode == 0, again.stderr
    assert "1 run(s) to do, 0 already done" in again.stderr
    rerun = read_record(run_folder)
    assert rerun is not None
    assert rerun.status == "completed"


def test_a_working_folder_holding_a_rexmle_folder_does_not_break_a_run(
    tmp_path: Path, isles22_dirs
):
    cwd = tmp_path / "parent-of-a-clone"
    shadow = cwd / "rexmle"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('the shadow package')\n")
    runs = tmp_path / "runs"
    done = subprocess.run(
        [
            rexmle_script(), "run", "--agent", "dummy", "--task", "isles22", "--mini",
            "--sandbox", "local", "--runs-dir", str(runs),
            "--data-dir", str(isles22_dirs.root.parent),
        ],
        cwd=cwd, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    record = read_record(runs / "default" / "isles22" / "dummy" / "seed-0")
    assert record is not None
    assert record.status == "completed", record.error
    assert record.grade is not None
    assert record.grade.valid
