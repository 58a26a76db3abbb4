"""The ``ldct-iqa`` task: one quality score per test slice, CSV only."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import ClassVar

from rexmle.challenges.base import (
    LoadedSubmission,
    Scores,
    SubmissionCase,
    TaskDirs,
    TaskImplementation,
)
from rexmle.challenges.ldct_iqa import fixture, metrics, prepare
from rexmle.split import Split

_DECIMAL = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def parse_score(text: str) -> float | None:
    """The cell as a finite float, or None.

    Accepted: a plain decimal number, optionally signed, optionally in exponent notation
    (``2``, ``-0.5``, ``.5``, ``3.1e-2``). Rejected: empty cells, spaces, text, ``nan``, ``inf``,
    digit separators (``1_5``, ``1,5``) and values beyond the float range.
    """
    if not _DECIMAL.match(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


class LdctIqaTask(TaskImplementation):
    """LDCT-IQA regression of radiologists' mean quality score."""

    id_column: ClassVar[str] = "image_id"
    value_columns: ClassVar[tuple[str, ...]] = ("quality_score",)

    def make_fixture(self, raw_dir: Path, *, seed: int = 0) -> None:
        """Write the extracted train and test archives."""
        fixture.make_fixture(raw_dir, seed=seed)

    def prepare(self, raw_dir: Path, public_dir: Path, private_dir: Path, *, mini: bool) -> Split:
        """Official train/test sets (see :mod:`rexmle.challenges.ldct_iqa.prepare`)."""
        return prepare.prepare(raw_dir, public_dir, private_dir)

    def check_case(self, case: SubmissionCase, public_dir: Path) -> list[str]:
        """The score must be a finite decimal number."""
        text = case.row["quality_score"]
        if parse_score(text) is None:
            return [f"quality_score {text!r} is not a finite number"]
        return []

    def score(
        self, submission: LoadedSubmission, gold: LoadedSubmission, dirs: TaskDirs, *, workers: int
    ) -> Scores:
        """Correlations over all test images at once."""
        predicted = {i: float(c.row["quality_score"]) for i, c in submission.cases.items()}
        reference = {i: float(c.row["quality_score"]) for i, c in gold.cases.items()}
        cases: list[dict[str, object]] = [
            {"case_id": i, "predicted": predicted[i], "reference": reference[i]}
            for i in sorted(reference)
        ]
        return Scores(metrics=metrics.score(predicted, reference), cases=cases)

    def solve_baseline(self, public_dir: Path, submission_dir: Path, *, seed: int = 0) -> None:
        """Noise-feature regression (see the baseline module)."""
        from rexmle.challenges.ldct_iqa.baseline import solve

        solve(public_dir, submission_dir)
