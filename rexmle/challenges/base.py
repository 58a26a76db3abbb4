"""The interface every task implementation fills in, and the objects passed across it.

A task implementation is the code half of a task (the YAML file is the declarative half): it makes
the mini raw fixture, prepares raw data into ``public/`` and ``private/``, checks submission files,
scores a valid submission against ``private/gold/`` and, for the baseline agent, solves the task.
Generic work (CSV parsing, id and path rules, parallel scoring, ranking, reports) lives in
:mod:`rexmle.grading`, so an implementation only says what is specific to its task.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import ClassVar

from rexmle.errors import TaskNotImplemented
from rexmle.split import Split
from rexmle.tasks.folders import TaskDirs
from rexmle.tasks.spec import TaskSpec
from rexmle.tasks.submission import LoadedSubmission, SubmissionCase


@dataclass
class Scores:
    """What a task's scorer returns: aggregated metrics and one row per case."""

    metrics: dict[str, float]
    cases: list[dict[str, object]]


class TaskImplementation(ABC):
    """Code of one task. Subclasses set the CSV columns and implement the abstract methods."""

    id_column: ClassVar[str] = "case_id"
    path_columns: ClassVar[tuple[str, ...]] = ()
    """Columns holding relative file paths (resolved and checked by the generic rules)."""
    value_columns: ClassVar[tuple[str, ...]] = ()
    """Other required columns (parsed by :meth:`check_case`)."""

    def __init__(self, spec: TaskSpec) -> None:
        self.spec = spec

    @property
    def required_columns(self) -> tuple[str, ...]:
        """Every column a submission must have."""
        return (self.id_column, *self.path_columns, *self.value_columns)

    # ---- preparation ---------------------------------------------------------------------------
    @abstractmethod
    def make_fixture(self, raw_dir: Path, *, seed: int = 0) -> None:
        """Write the mini raw dataset into ``raw_dir`` in exactly the real raw layout."""

    @abstractmethod
    def prepare(self, raw_dir: Path, public_dir: Path, private_dir: Path, *, mini: bool) -> Split:
        """Read ``raw_dir``; write ``public/`` (train data, test inputs, sample submission and its
        files) and ``private/`` (``gold/`` and grader extras). Return the split; the caller writes
        ``private/split.json``, ``public/description.md`` and ``prepared.json``.

        ``mini`` disables the real-data case-count checks. Raises DataError on unexpected raw data.
        """

    def description(self) -> str:
        """The agent-facing description (``<task-id>.md`` beside the YAML, else description.md)."""
        package = resources.files(f"rexmle.challenges.{self.spec.family}")
        for name in (f"{self.spec.id}.md", self.spec.description_file):
            candidate = package.joinpath(name)
            if candidate.is_file():
                return candidate.read_text(encoding="utf-8")
        msg = f"{self.spec.id}: no description file in rexmle/challenges/{self.spec.family}/"
        raise TaskNotImplemented(msg)

    # ---- validation (public data only) ---------------------------------------------------------
    def test_ids(self, public_dir: Path) -> list[str]:
        """The ids a submission must hold: by default those of ``public/sample_submission.csv``."""
        from rexmle.tasks.csvfile import read_id_column

        return read_id_column(public_dir / "sample_submission.csv", self.id_column)

    def check_case(self, case: SubmissionCase, public_dir: Path) -> list[str]:
        """Task-specific checks of one case's files/values; returns reasons (empty when valid)."""
        return []

    def check_submission(self, submission: LoadedSubmission, public_dir: Path) -> list[str]:
        """Checks across cases (after every case passed); returns reasons (empty when valid)."""
        return []

    # ---- scoring ---------------------------------------------------------------------------------
    @abstractmethod
    def score(
        self, submission: LoadedSubmission, gold: LoadedSubmission, dirs: TaskDirs, *, workers: int
    ) -> Scores:
        """Score a valid submission against gold; returns every leaderboard key (+ extra keys)."""

    # ---- baseline agent --------------------------------------------------------------------------
    def solve_baseline(self, public_dir: Path, submission_dir: Path, *, seed: int = 0) -> None:
        """The non-LLM baseline: train on ``public_dir`` and write a submission."""
        msg = f"{self.spec.id}: the baseline agent has no solver for this task yet"
        raise TaskNotImplemented(msg)


__all__ = ["LoadedSubmission", "Scores", "SubmissionCase", "TaskDirs", "TaskImplementation"]
