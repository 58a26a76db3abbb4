"""Shared pytest fixtures: prepared mini tasks are built once per test session."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from rexmle.challenges.base import TaskDirs
from rexmle.preparation import prepare_task


@pytest.fixture(scope="session")
def mini_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One data dir per test worker for mini tasks prepared by `prepared_mini`."""
    return tmp_path_factory.mktemp("mini-data")


@pytest.fixture(scope="session")
def prepared_mini(mini_data_dir: Path) -> Callable[[str], TaskDirs]:
    """Prepare a mini task once per session (a no-op afterwards) and return its folders."""

    def prepare(task_id: str) -> TaskDirs:
        dirs, _ = prepare_task(task_id, data_dir=mini_data_dir, mini=True, fixture_secret=None)
        return dirs

    return prepare
