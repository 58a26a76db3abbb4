"""Discovers task YAML files under ``rexmle/challenges/<family>/`` and resolves their functions.

A family folder is found by its files alone: every ``<task-id>.yaml`` in a folder of
``rexmle/challenges`` is a task, ``<task-id>.leaderboard.csv`` beside it its human leaderboard,
and the functions its ``functions`` section names are imported only when first called. Nothing
here imports a family's code at discovery time, so a broken family cannot hide the others.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from rexmle.declarations import parse_declaration
from rexmle.errors import SpecError, TaskNotImplemented
from rexmle.tasks.definitions import DEFAULT_DEFINITIONS, DefinitionSet
from rexmle.tasks.spec import SubmissionSpec, TaskSpec

CHALLENGES_PACKAGE = "rexmle.challenges"
LEADERBOARD_SUFFIX = ".leaderboard.csv"
NOT_TASK_FILES = frozenset({"solutions.yaml"})
"""YAML files of a family folder that declare no task (the winning-solution write-ups)."""


def _challenges_root() -> Traversable:
    return resources.files(CHALLENGES_PACKAGE)


def family_folder(family: str) -> Traversable:
    """The folder of a challenge family (``rexmle/challenges/<family>/``)."""
    return _challenges_root().joinpath(family)


@functools.cache
def all_tasks() -> dict[str, TaskSpec]:
    """Every registered task, by id, sorted by id.

    Raises:
        SpecError: a YAML file is malformed, or two files declare the same id.
    """
    found: dict[str, TaskSpec] = {}
    for family in sorted(_challenges_root().iterdir(), key=lambda p: p.name):
        if not family.is_dir() or family.name.startswith(("_", ".")):
            continue
        for entry in sorted(family.iterdir(), key=lambda p: p.name):
            if not entry.name.endswith(".yaml") or entry.name in NOT_TASK_FILES:
                continue
            spec = _load_spec(family.name, entry)
            if spec.id in found:
                msg = f"task id {spec.id!r} is declared twice"
                raise SpecError(msg)
            found[spec.id] = spec
    return dict(sorted(found.items()))


def _load_spec(family: str, entry: Traversable) -> TaskSpec:
    where = f"rexmle/challenges/{family}/{entry.name}"
    spec = parse_declaration(entry.read_text(encoding="utf-8"), TaskSpec, where, what="task")
    if spec.family != family:
        msg = f"{where}: family {spec.family!r} differs from its folder {family!r}"
        raise SpecError(msg)
    if entry.name != f"{spec.id}.yaml":
        msg = f"{where}: file name must be {spec.id}.yaml"
        raise SpecError(msg)
    return spec


def get_task(task_id: str) -> TaskSpec:
    """The spec of one task.

    Only ``<task_id>.yaml`` is read when exactly one family folder holds a file of that name
    (a file is named after the id it declares, see :func:`_load_spec`), so grading one task
    parses one declaration, not twenty. Otherwise every declaration is read, which names the
    known ids or the id declared twice.

    Raises:
        SpecError: no task has this id (the message lists the known ids), or its YAML file is
            malformed.
    """
    if all_tasks.cache_info().currsize == 0:
        candidates = _files_named(f"{task_id}.yaml")
        if len(candidates) == 1:
            return _single_spec(*candidates[0])
    tasks = all_tasks()
    if task_id not in tasks:
        msg = f"unknown task {task_id!r}; known tasks: {', '.join(tasks)}"
        raise SpecError(msg)
    return tasks[task_id]


def _files_named(name: str) -> list[tuple[str, str]]:
    """``(family, file name)`` of every family folder holding a file called ``name``."""
    if name in NOT_TASK_FILES:
        return []
    return [
        (family.name, name)
        for family in sorted(_challenges_root().iterdir(), key=lambda p: p.name)
        if family.is_dir()
        and not family.name.startswith(("_", "."))
        and family.joinpath(name).is_file()
    ]


@functools.cache
def _single_spec(family: str, file_name: str) -> TaskSpec:
    """One declaration, read and checked as :func:`all_tasks` reads it (cached)."""
    return _load_spec(family, family_folder(family).joinpath(file_name))


def forget_tasks() -> None:
    """Drop every cached declaration: the next look-up reads the YAML files again."""
    all_tasks.cache_clear()
    _single_spec.cache_clear()


def resolve_function(family: str, dotted: str) -> Callable[..., Any]:
    """The function named ``module:function``; a module starting with ``.`` is in the family.

    Raises:
        SpecError: the name is malformed, the module does not import, or it has no such
            callable.
    """
    module_name, sep, attribute = dotted.partition(":")
    if not sep or not module_name or not attribute:
        msg = f"{family}: function {dotted!r} must look like 'module:function' ('.module' = family)"
        raise SpecError(msg)
    if module_name.startswith("."):
        module_name = f"{CHALLENGES_PACKAGE}.{family}{module_name}"
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        msg = f"{family}: cannot import {module_name} for {dotted!r} ({err})"
        raise SpecError(msg) from err
    function = getattr(module, attribute, None)
    if not callable(function):
        msg = f"{family}: {module_name} has no function {attribute!r} (named as {dotted!r})"
        raise SpecError(msg)
    return function


FUNCTION_NAMES = (
    "make_fixture",
    "prepare",
    "score_case",
    "score_dataset",
    "aggregate",
    "check_case",
    "check_submission",
    "test_ids",
    "solve_baseline",
)
STUDY_FUNCTION_NAMES = ("score_case", "score_dataset", "aggregate")
"""The functions a ``functions.study`` table may replace."""


@dataclass(frozen=True)
class Task:
    """A registered task: its declarations and its family's functions (imported on first use)."""

    spec: TaskSpec

    @property
    def id(self) -> str:
        """The task id."""
        return self.spec.id

    @property
    def columns(self) -> SubmissionSpec:
        """The declared submission columns.

        Raises:
            SpecError: the YAML declares no ``submission`` section.
        """
        if self.spec.submission is None:
            msg = f"{self.id}: no submission columns are declared (section submission)"
            raise SpecError(msg)
        return self.spec.submission

    def function(
        self, name: str, definitions: DefinitionSet = DEFAULT_DEFINITIONS
    ) -> Callable[..., Any] | None:
        """The function declared as ``functions.<name>``, or None when the YAML names none.

        With ``definitions="study"`` a scoring function named in ``functions.study`` replaces the
        official one; a study ``score_case`` also replaces an official ``score_dataset`` and the
        other way round (the scorer is one choice).
        """
        if self.spec.functions is None:
            return None
        study = self.spec.functions.study if definitions == "study" else None
        if study is not None and name in STUDY_FUNCTION_NAMES:
            if getattr(study, name) is not None:
                return resolve_function(self.spec.family, getattr(study, name))
            other = {"score_case": "score_dataset", "score_dataset": "score_case"}.get(name)
            if other is not None and getattr(study, other) is not None:
                return None
        dotted = getattr(self.spec.functions, name)
        return None if dotted is None else resolve_function(self.spec.family, dotted)

    def has_study_definitions(self) -> bool:
        """Whether the family declares study scoring functions for this task."""
        return self.spec.functions is not None and self.spec.functions.study is not None

    def required_function(self, name: str) -> Callable[..., Any]:
        """The function ``functions.<name>``.

        Raises:
            TaskNotImplemented: the YAML names no such function.
        """
        function = self.function(name)
        if function is None:
            where = f"rexmle/challenges/{self.spec.family}/{self.id}.yaml"
            msg = f"{self.id}: no {name} function is declared ({where}, section functions)"
            raise TaskNotImplemented(msg)
        return function

    def make_fixture(self, raw_dir: Path, *, seed: int = 0, real_quirks: bool = False) -> None:
        """Write the task's mini raw data into ``raw_dir`` (the family's ``make_fixture``).

        ``real_quirks``: also write the variants the real archive is known to hold (odd file
        suffixes, extra sibling folders, folder names with spaces; the family's ``LAYOUT.md``
        lists them), which prepare must read exactly as the plain fixture.
        """
        make = self.required_function("make_fixture")
        if real_quirks:
            make(raw_dir, seed=seed, real_quirks=True)
        else:
            make(raw_dir, seed=seed)

    @property
    def has_baseline(self) -> bool:
        """Whether the family declares a non-LLM baseline solver."""
        return self.spec.functions is not None and self.spec.functions.solve_baseline is not None

    def solve_baseline(self, public_dir: Path, submission_dir: Path, *, seed: int = 0) -> None:
        """Run the family's baseline on ``public_dir``, writing a submission into ``submission_dir``.

        Raises:
            TaskNotImplemented: the family has no baseline solver.
        """
        # deferred: jobs pulls in the image readers; the registry is imported at the CLI's start,
        # which a grader under a small memory limit must survive to report its failure (exit 2)
        from rexmle.tasks.jobs import BaselineJob

        job = BaselineJob(public=public_dir, submission=submission_dir, task=self.spec, seed=seed)
        self.required_function("solve_baseline")(job)

    def description(self) -> str:
        """The agent-facing description, its ``{{...}}`` placeholders filled.

        Raises:
            TaskNotImplemented: the description file is missing.
            SpecError: a placeholder names no declared value.
        """
        name = self.spec.description
        if name is None:
            msg = f"{self.id}: no description file is declared (key description)"
            raise TaskNotImplemented(msg)
        source = family_folder(self.spec.family).joinpath(name)
        if not source.is_file():
            msg = f"{self.id}: no description file rexmle/challenges/{self.spec.family}/{name}"
            raise TaskNotImplemented(msg)
        return fill_placeholders(source.read_text(encoding="utf-8"), self.spec)

    def leaderboard_file(self) -> Traversable:
        """The human leaderboard CSV beside the task's YAML (may not exist)."""
        return family_folder(self.spec.family).joinpath(f"{self.id}{LEADERBOARD_SUFFIX}")

    @property
    def leaderboard_source(self) -> str:
        """The leaderboard file's path in the repository (for reports)."""
        return f"rexmle/challenges/{self.spec.family}/{self.id}{LEADERBOARD_SUFFIX}"


def fill_placeholders(text: str, spec: TaskSpec) -> str:
    """Replace ``{{id}}``, ``{{name}}`` and ``{{params.<key>}}`` in ``text`` by the spec's values.

    Raises:
        SpecError: a ``{{...}}`` placeholder names a value the spec does not declare.
    """
    import re

    values = {"id": spec.id, "name": spec.name}
    values.update({f"params.{k}": str(v) for k, v in spec.params.items()})

    def substitute(match: re.Match[str]) -> str:
        key = match.group(1).strip()
        if key not in values:
            msg = f"{spec.id}: the description's placeholder {{{{{key}}}}} names no declared value"
            raise SpecError(msg)
        return values[key]

    return re.sub(r"\{\{([^{}]+)\}\}", substitute, text)


def load_task(task_id: str) -> Task:
    """The task ``task_id`` with its functions.

    Raises:
        SpecError: unknown task id.
        TaskNotImplemented: the task declares no functions yet.
    """
    spec = get_task(task_id)
    if spec.functions is None:
        msg = (
            f"task {task_id!r} is registered, but its prepare and grade functions are not "
            f"declared (section functions of rexmle/challenges/{spec.family}/{task_id}.yaml)"
        )
        raise TaskNotImplemented(msg)
    return Task(spec)
