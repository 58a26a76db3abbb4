"""The help of every command: no Python placeholders, every parameter explained, and the
statements that were once false now true (``--agent`` names every agent, the rate cap is per
minute, the executor is local or slurm).
"""

from __future__ import annotations

import re

import pytest
import typer.main
from typer.testing import CliRunner

from rexmle.agents.registry import all_agents
from rexmle.cli import app

FORBIDDEN = re.compile(r"<bool>|<list\[|NoneType|typing\.|<class |Optional\[|\|None")
"""Placeholders that leak Python annotations into the help instead of words."""


def command_paths() -> list[tuple[str, ...]]:
    """Every command and group of the ``rexmle`` app, as argument paths (the app itself: ())."""
    paths: list[tuple[str, ...]] = []
    stack: list[tuple[tuple[str, ...], object]] = [((), typer.main.get_command(app))]
    while stack:
        path, command = stack.pop()
        paths.append(path)
        for name, sub in getattr(command, "commands", {}).items():
            stack.append(((*path, name), sub))
    return sorted(paths)


def help_of(path: tuple[str, ...]) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.output


def test_every_command_is_walked() -> None:
    paths = command_paths()
    assert ("run",) in paths
    assert ("agents", "install") in paths
    assert len(paths) >= 20


@pytest.mark.parametrize("path", command_paths(), ids=lambda p: " ".join(p) or "rexmle")
def test_help_has_no_python_placeholders_and_explains_every_parameter(
    path: tuple[str, ...],
) -> None:
    text = help_of(path)
    assert not FORBIDDEN.search(text), FORBIDDEN.findall(text)
    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]  # type: ignore[attr-defined]
    for param in command.params:
        assert (getattr(param, "help", None) or "").strip(), f"{' '.join(path)}: {param.name}"


def test_run_help_names_every_registered_agent_and_states_the_caps_truly() -> None:
    text = " ".join(help_of(("run",)).split())
    agent_help = text[text.index("--agent ") : text.index("--task ")]
    for agent_id in all_agents():
        assert agent_id in agent_help, agent_id
    calls = text[text.index("--llm-max-calls-per-minute") :][:200]
    assert "60 s" in calls
    assert "per run" not in calls.split("--experiment")[0]
    executor = text[text.index("--executor") :][:80]
    assert "local" in executor
    assert "slurm" in executor
    assert "--agent-dir" in text
    assert "--force-config" in text


def test_flags_show_no_type_and_repeatable_options_their_element_type() -> None:
    text = help_of(("run",))
    flag_line = next(line for line in text.splitlines() if "--dry-run" in line)
    assert "<" not in flag_line
    task_line = next(line for line in text.splitlines() if "--task " in line)
    assert "<str>..." in task_line


def test_run_names_every_shipped_preset() -> None:
    from rexmle.runner.experiment import PRESETS

    text = " ".join(help_of(("run",)).replace("│", " ").split())
    assert all(preset in text for preset in PRESETS), PRESETS
    assert f"a shipped preset: {', '.join(PRESETS)}" in text
