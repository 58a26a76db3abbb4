"""Discovers task YAML files under ``rexmle/challenges/<family>/`` and loads them into TaskSpec."""

from __future__ import annotations

import functools
import importlib
from importlib import resources

import yaml
from pydantic import ValidationError

from rexmle.challenges.base import TaskImplementation
from rexmle.challenges.spec import TaskSpec
from rexmle.errors import SpecError, TaskNotImplemented


@functools.cache
def all_tasks() -> dict[str, TaskSpec]:
    """Every registered task, by id, sorted by id.

    Raises:
        SpecError: a YAML file is malformed, or two files declare the same id.
    """
    root = resources.files("rexmle.challenges")
    found: dict[str, TaskSpec] = {}
    for family in sorted(root.iterdir(), key=lambda p: p.name):
        if not family.is_dir() or family.name.startswith(("_", ".")):
            continue
        for entry in sorted(family.iterdir(), key=lambda p: p.name):
            if not entry.name.endswith(".yaml"):
                continue
            where = f"rexmle/challenges/{family.name}/{entry.name}"
            try:
                raw = yaml.safe_load(entry.read_text(encoding="utf-8"))
                spec = TaskSpec.model_validate(raw)
            except (yaml.YAMLError, ValidationError) as err:
                msg = f"{where}: {err}"
                raise SpecError(msg) from err
            if spec.family != family.name:
                msg = f"{where}: family {spec.family!r} differs from its folder {family.name!r}"
                raise SpecError(msg)
            if entry.name != f"{spec.id}.yaml":
                msg = f"{where}: file name must be {spec.id}.yaml"
                raise SpecError(msg)
            if spec.id in found:
                msg = f"task id {spec.id!r} is declared twice"
                raise SpecError(msg)
            found[spec.id] = spec
    return dict(sorted(found.items()))


def get_task(task_id: str) -> TaskSpec:
    """The spec of one task.

    Raises:
        SpecError: no task has this id (the message lists the known ids).
    """
    tasks = all_tasks()
    if task_id not in tasks:
        msg = f"unknown task {task_id!r}; known tasks: {', '.join(tasks)}"
        raise SpecError(msg)
    return tasks[task_id]


def load_implementation(task_id: str) -> TaskImplementation:
    """Instantiate the task's implementation class (``module:Class`` in its YAML).

    Raises:
        TaskNotImplemented: the task has no implementation yet.
        SpecError: the implementation path does not name a TaskImplementation subclass.
    """
    spec = get_task(task_id)
    if spec.implementation is None:
        msg = (
            f"task {task_id!r} is registered, but its prepare and grade code are not built yet "
            f"(implementation: null in rexmle/challenges/{spec.family}/{task_id}.yaml)"
        )
        raise TaskNotImplemented(msg)
    module_name, _, class_name = spec.implementation.partition(":")
    try:
        module = importlib.import_module(module_name)
        cls = getattr(module, class_name)
    except (ImportError, AttributeError) as err:
        msg = f"{task_id}: cannot load implementation {spec.implementation!r} ({err})"
        raise SpecError(msg) from err
    if not (isinstance(cls, type) and issubclass(cls, TaskImplementation)):
        msg = f"{task_id}: {spec.implementation!r} is not a TaskImplementation subclass"
        raise SpecError(msg)
    return cls(spec)
