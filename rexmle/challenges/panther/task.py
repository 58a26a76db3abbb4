"""The PANTHER tasks: bind fixture, preparation, validity rules, metrics and baseline."""

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
from rexmle.challenges.panther import fixture, metrics, prepare, submission
from rexmle.split import Split
from rexmle.tasks.files import case_path_items
from rexmle.tasks.parallel import map_cases

PATH_COLUMN = "predicted_mask_path"


class _PantherTask(TaskImplementation):
    """PANTHER binary tumour segmentation on the MRI grid (one subclass per task)."""

    id_column: ClassVar[str] = "image_id"
    path_columns: ClassVar[tuple[str, ...]] = (PATH_COLUMN,)
    task_number: ClassVar[int]

    def make_fixture(self, raw_dir: Path, *, seed: int = 0) -> None:
        """Write the shared mini raw tree (the same for both tasks)."""
        fixture.make_fixture(raw_dir, seed=seed)

    def prepare(self, raw_dir: Path, public_dir: Path, private_dir: Path, *, mini: bool) -> Split:
        """Split and copy this task's cases (see :mod:`rexmle.challenges.panther.prepare`)."""
        return prepare.prepare(
            raw_dir,
            public_dir,
            private_dir,
            task=self.task_number,
            seed=self.spec.split.seed or 42,
        )

    def check_case(self, case: SubmissionCase, public_dir: Path) -> list[str]:
        """Mask rules: .mha/.nii.gz, 3-D, one component, test size and spacing, values {0, 1}."""
        return submission.check_mask_file(case.case_id, case.paths[PATH_COLUMN], public_dir)

    def score(
        self, submission: LoadedSubmission, gold: LoadedSubmission, dirs: TaskDirs, *, workers: int
    ) -> Scores:
        """Per-case surfel metrics in parallel, then means and the volume RMSE."""
        items = case_path_items(submission, gold, PATH_COLUMN)
        cases = map_cases(metrics.score_case, items, workers=workers)
        return Scores(metrics=metrics.aggregate(cases), cases=cases)

    def solve_baseline(self, public_dir: Path, submission_dir: Path, *, seed: int = 0) -> None:
        """Intensity window + largest component fitted on the training tumours."""
        from rexmle.challenges.panther.baseline import solve

        solve(public_dir, submission_dir, seed=seed)


class PantherTask1(_PantherTask):
    """Task 1: T1 contrast-enhanced arterial-phase diagnostic MRI."""

    task_number: ClassVar[int] = 1


class PantherTask2(_PantherTask):
    """Task 2: T2 MR-Linac MRI."""

    task_number: ClassVar[int] = 2
