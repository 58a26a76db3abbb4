"""The ``usenhance`` task: one enhanced 8-bit PNG per low-quality test image."""

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
from rexmle.challenges.usenhance import fixture, metrics, prepare, submission
from rexmle.split import Split
from rexmle.tasks.files import case_path_items
from rexmle.tasks.parallel import map_cases

COLUMN = "enhanced_image_path"


class UsEnhanceTask(TaskImplementation):
    """USenhance paired low-to-high quality ultrasound enhancement."""

    id_column: ClassVar[str] = "image_id"
    path_columns: ClassVar[tuple[str, ...]] = (COLUMN,)

    def make_fixture(self, raw_dir: Path, *, seed: int = 0) -> None:
        """Write the mini ``train_datasets`` tree."""
        fixture.make_fixture(raw_dir, seed=seed)

    def prepare(self, raw_dir: Path, public_dir: Path, private_dir: Path, *, mini: bool) -> Split:
        """Sorted pairs, split, grayscale copies (see the prepare module)."""
        return prepare.prepare(raw_dir, public_dir, private_dir, seed=self.spec.split.seed or 42)

    def check_case(self, case: SubmissionCase, public_dir: Path) -> list[str]:
        """PNG, mode L, expected size."""
        return submission.check_enhanced_png(case.case_id, case.paths[COLUMN], public_dir)

    def score(
        self, submission: LoadedSubmission, gold: LoadedSubmission, dirs: TaskDirs, *, workers: int
    ) -> Scores:
        """Per-image LNCC, SSIM and PSNR in parallel, then means."""
        items = case_path_items(submission, gold, COLUMN)
        cases = map_cases(metrics.score_case, items, workers=workers)
        return Scores(metrics=metrics.aggregate(cases), cases=cases)

    def solve_baseline(self, public_dir: Path, submission_dir: Path, *, seed: int = 0) -> None:
        """Least-squares 5 x 5 filter (see the baseline module)."""
        from rexmle.challenges.usenhance.baseline import solve

        solve(public_dir, submission_dir)
