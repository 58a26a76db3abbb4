"""A task's human leaderboard: ``<task-id>.leaderboard.csv`` beside its YAML, ranked metrics."""

from __future__ import annotations

from importlib import resources

from rexmle.errors import SpecError
from rexmle.ranking import Leaderboard, read_leaderboard_csv
from rexmle.tasks.registry import Task, get_task


def load_leaderboard(task_id: str) -> Leaderboard:
    """The leaderboard of ``task_id``; its columns are the ranked metrics, directions declared.

    Raises:
        SpecError: the file is missing or does not match the declared ranked metrics.
    """
    task = Task(get_task(task_id))
    with resources.as_file(task.leaderboard_file()) as real:
        if not real.is_file():
            msg = f"no leaderboard file for task {task_id!r} ({task.leaderboard_source})"
            raise SpecError(msg)
        return read_leaderboard_csv(task_id, real, task.spec.directions)


def leaderboard_source(task_id: str) -> str:
    """The leaderboard file's path in the repository, as reports cite it."""
    return Task(get_task(task_id)).leaderboard_source


def leaderboard_bytes(task_id: str) -> bytes:
    """The leaderboard file's bytes (for its checksum in reports)."""
    return Task(get_task(task_id)).leaderboard_file().read_bytes()
