"""The folders of a prepared task and its ``prepared.json`` (ARCHITECTURE.md, "Prepared challenge")."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from rexmle.config import resolve_data_dir
from rexmle.errors import NotPrepared
from rexmle.tasks.registry import get_task

DataMode = Literal["mini", "full"]


@dataclass(frozen=True)
class TaskDirs:
    """Folders of a prepared task: ``root`` = ``<data_dir>/<task-id>``."""

    root: Path
    raw: Path

    @property
    def public(self) -> Path:
        """What agents get."""
        return self.root / "public"

    @property
    def private(self) -> Path:
        """Answers and grader inputs."""
        return self.root / "private"

    @property
    def gold(self) -> Path:
        """Ground truth written as a submission."""
        return self.private / "gold"

    @property
    def prepared_json(self) -> Path:
        """Written last: its presence means the task is completely prepared."""
        return self.root / "prepared.json"


def task_dirs(task_id: str, data_dir: Path | None = None) -> TaskDirs:
    """Folders of ``task_id`` under the data dir (see :mod:`rexmle.config`)."""
    root = resolve_data_dir(data_dir)
    spec = get_task(task_id)
    return TaskDirs(root=root / task_id, raw=root / spec.raw_folder / "raw")


def read_prepared(dirs: TaskDirs) -> dict[str, object] | None:
    """The task's prepared.json, or None when the task is not (completely) prepared."""
    if not dirs.prepared_json.is_file():
        return None
    return json.loads(dirs.prepared_json.read_text(encoding="utf-8"))


def require_prepared(task_id: str, dirs: TaskDirs) -> None:
    """Raise NotPrepared unless ``prepared.json`` exists (it is written last by prepare)."""
    if not dirs.prepared_json.is_file():
        msg = (
            f"task {task_id!r} is not prepared in {dirs.root.parent} "
            f"(no {dirs.prepared_json.name}); run: rexmle prepare {task_id} [--mini] "
            f"--data-dir {dirs.root.parent}"
        )
        raise NotPrepared(msg)


def prepared_data_mode(dirs: TaskDirs) -> DataMode:
    """``mini`` when ``prepared.json`` says the task was prepared from the mini fixture."""
    prepared = read_prepared(dirs) or {}
    return "mini" if prepared.get("mini") else "full"
