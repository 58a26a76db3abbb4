"""(transition) Presents a family still written as a TaskImplementation class as a Task."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rexmle.errors import SpecError
from rexmle.tasks.registry import Task
from rexmle.tasks.spec import ColumnSpec, SubmissionSpec, TaskSpec


@dataclass(frozen=True)
class _Call:
    impl: Any
    name: str

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        impl = self.impl
        if self.name == "make_fixture":
            return impl.make_fixture(*args, **kwargs)
        if self.name == "prepare":
            job = args[0]
            return impl.prepare(job.raw, job.public, job.private, mini=job.mini)
        if self.name == "check_case":
            return impl.check_case(args[0], args[1].public)
        if self.name == "check_submission":
            return impl.check_submission(args[0], args[1].public)
        if self.name == "test_ids":
            return impl.test_ids(args[0].public)
        if self.name == "solve_baseline":
            job = args[0]
            return impl.solve_baseline(job.public, job.submission, seed=job.seed)
        if self.name == "score_dataset":
            from rexmle.tasks.folders import TaskDirs

            job = args[0]
            dirs = TaskDirs(root=job.private.parent, raw=job.private.parent / "raw")
            return impl.score(job.submission, job.gold, dirs, workers=job.workers)
        raise AttributeError(self.name)


@dataclass(frozen=True)
class LegacyTask(Task):
    """A Task whose functions are the methods of a TaskImplementation instance."""

    impl: Any = None

    @property
    def has_baseline(self) -> bool:
        from rexmle.challenges.base import TaskImplementation

        return type(self.impl).solve_baseline is not TaskImplementation.solve_baseline

    def description(self) -> str:
        return self.impl.description()

    def function(self, name: str) -> Callable[..., Any] | None:
        if name in ("score_case", "aggregate"):
            return None
        return _Call(self.impl, name)


def legacy_task(spec: TaskSpec) -> LegacyTask:
    """Instantiate ``spec.implementation`` and present it as a Task with a declared submission."""
    assert spec.implementation is not None
    module_name, _, class_name = spec.implementation.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as err:
        msg = f"{spec.id}: cannot load implementation {spec.implementation!r} ({err})"
        raise SpecError(msg) from err
    impl = cls(spec)
    columns = [ColumnSpec(name=c, kind="path") for c in impl.path_columns]
    columns += [ColumnSpec(name=c, kind="value") for c in impl.value_columns]
    submission = SubmissionSpec(id_column=impl.id_column, columns=columns)
    extra = [m.model_copy(update={"ranked": True}) for m in spec.metrics]
    patched = spec.model_copy(update={"submission": submission, "metrics": extra})
    impl.spec = patched
    return LegacyTask(spec=patched, impl=impl)
