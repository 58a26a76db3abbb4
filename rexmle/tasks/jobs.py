"""The arguments a family's functions receive: one object each, holding only what it may see.

Validation sees public data only (:class:`CheckContext`); scoring sees one case with its gold
(:class:`ScoreCase`) or all of them (:class:`ScoreJob`); preparation sees raw data and writes
public and private (:class:`PrepareJob`); the baseline sees public data (:class:`BaselineJob`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rexmle.split import Split, shuffle_split
from rexmle.tasks.csvfile import read_id_column
from rexmle.tasks.files import write_csv
from rexmle.tasks.spec import TaskSpec
from rexmle.tasks.submission import LoadedSubmission, SubmissionCase


def declared_columns(task: TaskSpec) -> tuple[str, ...]:
    """The task's declared submission columns, id column first.

    Raises:
        ValueError: the task declares no ``submission`` section.
    """
    if task.submission is None:
        msg = f"{task.id}: no submission columns are declared (section submission)"
        raise ValueError(msg)
    return task.submission.required_columns


class _OfTask:
    """What every job knows of the task it runs for (``task`` is a field of each job)."""

    task: TaskSpec

    @property
    def params(self) -> dict[str, Any]:
        """The task's declared ``params``."""
        return self.task.params

    @property
    def columns(self) -> tuple[str, ...]:
        """The declared submission columns, id column first (the header of submission CSVs)."""
        return declared_columns(self.task)


@dataclass(frozen=True)
class PrepareJob(_OfTask):
    """Prepare ``raw`` into ``public`` and ``private`` (both exist, empty).

    ``mini`` disables checks that only hold on the real data. Write train data, test inputs and
    ``sample_submission.csv`` (+ its files) into ``public``, ``gold/`` (+ grader extras) into
    ``private``; the pipeline writes ``split.json``, ``description.md`` and ``prepared.json``.
    """

    raw: Path
    public: Path
    private: Path
    task: TaskSpec
    mini: bool

    @property
    def gold(self) -> Path:
        """``private/gold/``: the answers, written as a submission."""
        return self.private / "gold"

    def write_answer_csvs(
        self, gold_rows: Sequence[Sequence[object]], sample_rows: Sequence[Sequence[object]]
    ) -> None:
        """Write ``private/gold/submission.csv`` and ``public/sample_submission.csv``.

        Both have the declared columns as header and one row per test case, in the order given.
        """
        write_csv(self.gold / "submission.csv", self.columns, gold_rows)
        write_csv(self.public / "sample_submission.csv", self.columns, sample_rows)

    def shuffle_split(self, keys: list[str], *, sort_keys: bool = True) -> Split:
        """Split ``keys`` with the declared seed and test fraction, under the declared rule.

        Raises:
            ValueError: the task's split declares no seed or no test fraction.
        """
        split = self.task.split
        if split.seed is None or split.test_fraction is None:
            msg = f"{self.task.id}: the split declares no seed or test_fraction to shuffle with"
            raise ValueError(msg)
        drawn = shuffle_split(
            keys, test_fraction=split.test_fraction, seed=split.seed, sort_keys=sort_keys
        )
        return Split(train=drawn.train, test=drawn.test, rule=split.rule)


@dataclass(frozen=True)
class CheckContext(_OfTask):
    """What a validity check may read: the task's declarations and ``public/``."""

    task: TaskSpec
    public: Path


@dataclass(frozen=True)
class ScoreCase:
    """One valid submitted case and its gold case (picklable: scored in worker processes)."""

    case_id: str
    submitted: SubmissionCase
    gold: SubmissionCase
    public: Path
    private: Path
    params: dict[str, Any]

    def paths(self, column: str) -> tuple[Path, Path]:
        """(submitted file, gold file) of a path column."""
        return self.submitted.paths[column], self.gold.paths[column]

    def file_pair(self) -> tuple[Path, Path]:
        """(submitted file, gold file) of a task with exactly one path column.

        Raises:
            ValueError: the task has no path column or more than one.
        """
        if len(self.submitted.paths) != 1:
            msg = f"case {self.case_id!r}: file_pair needs one path column, got {self.submitted.paths}"
            raise ValueError(msg)
        (column,) = self.submitted.paths
        return self.paths(column)


@dataclass(frozen=True)
class ScoreJob(_OfTask):
    """A whole valid submission and gold, for scorers that need every case at once."""

    submission: LoadedSubmission
    gold: LoadedSubmission
    task: TaskSpec
    public: Path
    private: Path
    workers: int


@dataclass(frozen=True)
class BaselineJob(_OfTask):
    """Train the non-LLM baseline on ``public`` and write a submission into ``submission``."""

    public: Path
    submission: Path
    task: TaskSpec
    seed: int = 0

    def test_ids(self) -> list[str]:
        """The ids to predict: the id column of ``public/sample_submission.csv``, in file order."""
        return read_id_column(self.public / "sample_submission.csv", self.columns[0])

    def write_submission_csv(self, rows: Sequence[Sequence[object]]) -> None:
        """Write ``submission.csv`` into the submission folder: the declared columns, then rows."""
        write_csv(self.submission / "submission.csv", self.columns, rows)
