"""Fixtures for rexmle.runner tests: isles22 mini data and a helper that runs a command agent."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from rexmle.agents.registry import load_agent
from rexmle.preparation import prepare_task
from rexmle.records.runs import RunConfig, RunRecord, run_dir
from rexmle.runner.executor import RunJob, RunOptions, execute_run
from rexmle.runner.sandbox import Sandbox
from rexmle.runner.sandbox.local import LocalSandbox
from rexmle.runner.settings import RunSettings
from rexmle.tasks.folders import TaskDirs

RunAgent = Callable[..., tuple[RunRecord, Path]]


@pytest.fixture
def isles22_dirs(prepared_mini: Callable[[str], TaskDirs]) -> TaskDirs:
    """isles22 mini data shared by the session's tests (never modified by them)."""
    return prepared_mini("isles22")


@pytest.fixture
def own_isles22(tmp_path: Path) -> TaskDirs:
    """isles22 mini data prepared for this test alone (it may break it)."""
    dirs, _ = prepare_task("isles22", data_dir=tmp_path / "data", mini=True, fixture_secret=None)
    return dirs


@pytest.fixture
def run_agent(tmp_path: Path) -> RunAgent:
    """Run one agent (a shell command by default) on isles22 and return (record, run folder)."""

    def run(
        command: str | None,
        *,
        dirs: TaskDirs,
        sandbox: Sandbox | None = None,
        agent: str = "command",
        time_limit_s: float = 60.0,
        network: bool = False,
        seed: int = 0,
        env: list[str] | None = None,
    ) -> tuple[RunRecord, Path]:
        spec = load_agent(agent).with_overrides(
            command=command, time_limit_s=time_limit_s, network=network, env=env
        )
        config = RunConfig(
            task="isles22",
            task_spec_version=1,
            agent=spec,
            seed=seed,
            time_limit_s=spec.time_limit_s,
            mini=True,
        )
        runs_dir = tmp_path / "runs"
        folder = run_dir(runs_dir, "test", "isles22", spec.id, seed)
        options = RunOptions(
            settings=RunSettings(
                runs_dir=runs_dir, data_dir=dirs.root.parent, kill_grace_s=1.0, grade_workers=1
            ),
            sandbox=sandbox or LocalSandbox(),
        )
        record = execute_run(RunJob(config=config, group="test", folder=folder), options)
        return record, folder

    return run
