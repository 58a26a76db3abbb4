"""The ``isles22`` task: binds fixture, preparation, validity rules, metrics and baseline."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rexmle.challenges.base import (
    LoadedSubmission,
    Scores,
    SubmissionCase,
    TaskDirs,
    TaskImplementation,
)
from rexmle.challenges.common import case_path_items
from rexmle.challenges.isles22 import fixture, metrics, prepare, submission
from rexmle.grading.parallel import map_cases
from rexmle.split import Split


class Isles22Task(TaskImplementation):
    """ISLES'22 binary infarct segmentation on the DWI grid."""

    id_column: ClassVar[str] = "case_id"
    path_columns: ClassVar[tuple[str, ...]] = ("predicted_mask_path",)

    def make_fixture(self, raw_dir: Path, *, seed: int = 0) -> None:
        """Write the mini BIDS tree."""
        fixture.make_fixture(raw_dir, seed=seed)

    def prepare(self, raw_dir: Path, public_dir: Path, private_dir: Path, *, mini: bool) -> Split:
        """Split and copy (see :mod:`rexmle.challenges.isles22.prepare`)."""
        return prepare.prepare(raw_dir, public_dir, private_dir, seed=self.spec.split.seed or 42)

    def check_case(self, case: SubmissionCase, public_dir: Path) -> list[str]:
        """Mask file rules: NIfTI, 3-D, DWI shape, values {0, 1}."""
        return submission.check_mask_file(
            case.case_id, case.paths["predicted_mask_path"], public_dir
        )

    def score(
        self, submission: LoadedSubmission, gold: LoadedSubmission, dirs: TaskDirs, *, workers: int
    ) -> Scores:
        """Per-case metrics in parallel, then means."""
        items = case_path_items(submission, gold, "predicted_mask_path")
        cases = map_cases(metrics.score_case, items, workers=workers)
        return Scores(metrics=metrics.aggregate(cases), cases=cases)

    def solve_baseline(self, public_dir: Path, submission_dir: Path, *, seed: int = 0) -> None:
        """Threshold baseline fitted on the training cases (see the baseline module)."""
        from rexmle.challenges.isles22.baseline import solve

        solve(public_dir, submission_dir, seed=seed)
