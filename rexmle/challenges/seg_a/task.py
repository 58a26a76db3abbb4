"""The ``seg_a`` task: binds fixture, preparation, validity rules, metrics and baseline."""

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
from rexmle.challenges.seg_a import fixture, metrics, prepare, submission
from rexmle.split import Split
from rexmle.tasks.files import case_path_items
from rexmle.tasks.parallel import map_cases

PATH_COLUMN = "predicted_mask_path"


class SegATask(TaskImplementation):
    """SEG.A 2023 binary aortic vessel tree segmentation on the CTA grid."""

    id_column: ClassVar[str] = "image_id"
    path_columns: ClassVar[tuple[str, ...]] = (PATH_COLUMN,)

    def make_fixture(self, raw_dir: Path, *, seed: int = 0) -> None:
        """Write the extracted mini AVT collection."""
        fixture.make_fixture(raw_dir, seed=seed)

    def prepare(self, raw_dir: Path, public_dir: Path, private_dir: Path, *, mini: bool) -> Split:
        """Split and copy (see :mod:`rexmle.challenges.seg_a.prepare`)."""
        return prepare.prepare(raw_dir, public_dir, private_dir, seed=self.spec.split.seed or 42)

    def check_case(self, case: SubmissionCase, public_dir: Path) -> list[str]:
        """Mask file rules: readable, 3-D, one component, test image size, values {0, 1}."""
        return submission.check_mask_file(case.case_id, case.paths[PATH_COLUMN], public_dir)

    def score(
        self, submission: LoadedSubmission, gold: LoadedSubmission, dirs: TaskDirs, *, workers: int
    ) -> Scores:
        """Per-case DSC and HD in parallel, then medians."""
        items = case_path_items(submission, gold, PATH_COLUMN)
        cases = map_cases(metrics.score_case, items, workers=workers)
        return Scores(metrics=metrics.aggregate(cases), cases=cases)

    def solve_baseline(self, public_dir: Path, submission_dir: Path, *, seed: int = 0) -> None:
        """HU threshold + largest component fitted on the training cases."""
        from rexmle.challenges.seg_a.baseline import solve

        solve(public_dir, submission_dir, seed=seed)
