"""The ``neurips-cellseg`` task: binds fixture, preparation, validity rules, metrics, baseline."""

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
from rexmle.challenges.neurips_cellseg import fixture, metrics, prepare, submission
from rexmle.split import Split
from rexmle.tasks.files import case_path_items
from rexmle.tasks.parallel import map_cases


class NeuripsCellsegTask(TaskImplementation):
    """NeurIPS 2022 CellSeg: one instance label map per test image."""

    id_column: ClassVar[str] = "image_id"
    path_columns: ClassVar[tuple[str, ...]] = ("predicted_mask_path",)

    def make_fixture(self, raw_dir: Path, *, seed: int = 0) -> None:
        """Write the mini extracted Training-labeled and Tuning trees."""
        fixture.make_fixture(raw_dir, seed=seed)

    def prepare(self, raw_dir: Path, public_dir: Path, private_dir: Path, *, mini: bool) -> Split:
        """Split and copy (see :mod:`rexmle.challenges.neurips_cellseg.prepare`)."""
        return prepare.prepare(
            raw_dir, public_dir, private_dir, mini=mini, seed=self.spec.split.seed or 42
        )

    def test_ids(self, public_dir: Path) -> list[str]:
        """Ids listed in ``public/test/image_sizes.csv``."""
        return sorted(submission.image_sizes(public_dir))

    def check_case(self, case: SubmissionCase, public_dir: Path) -> list[str]:
        """Label-map rules 2-5 of the spec."""
        return submission.check_mask_file(
            case.case_id, case.paths["predicted_mask_path"], public_dir
        )

    def score(
        self, submission: LoadedSubmission, gold: LoadedSubmission, dirs: TaskDirs, *, workers: int
    ) -> Scores:
        """Per-image F1 in parallel, then means over all test images."""
        items = case_path_items(submission, gold, "predicted_mask_path")
        cases = map_cases(metrics.score_case, items, workers=workers)
        return Scores(metrics=metrics.aggregate(cases), cases=cases)

    def solve_baseline(self, public_dir: Path, submission_dir: Path, *, seed: int = 0) -> None:
        """Learned-threshold connected components (see the baseline module)."""
        from rexmle.challenges.neurips_cellseg.baseline import solve

        solve(public_dir, submission_dir, seed=seed)
