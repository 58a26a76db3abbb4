"""The ``dentex`` task: binds fixture, preparation, validity rules, metrics and baseline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

from rexmle.challenges.base import (
    LoadedSubmission,
    Scores,
    SubmissionCase,
    TaskDirs,
    TaskImplementation,
)
from rexmle.challenges.dentex import fixture, metrics, prepare, submission
from rexmle.errors import HarnessError
from rexmle.split import Split


class DentexTask(TaskImplementation):
    """DENTEX hierarchical detection: one JSON array of detections per test X-ray."""

    id_column: ClassVar[str] = "image_id"
    path_columns: ClassVar[tuple[str, ...]] = ("predictions_json",)

    def make_fixture(self, raw_dir: Path, *, seed: int = 0) -> None:
        """Write the mini extracted ``training_data/`` tree."""
        fixture.make_fixture(raw_dir, seed=seed)

    def prepare(self, raw_dir: Path, public_dir: Path, private_dir: Path, *, mini: bool) -> Split:
        """Split and copy (see :mod:`rexmle.challenges.dentex.prepare`)."""
        return prepare.prepare(raw_dir, public_dir, private_dir, seed=self.spec.split.seed or 42)

    def test_ids(self, public_dir: Path) -> list[str]:
        """Stems of ``public/test/images/*.png``."""
        return sorted(p.stem for p in (public_dir / "test" / "images").glob("*.png"))

    def check_case(self, case: SubmissionCase, public_dir: Path) -> list[str]:
        """Prediction JSON rules 2-8 of the spec."""
        return submission.check_prediction_file(
            case.case_id, case.paths["predictions_json"], public_dir
        )

    def score(
        self, submission: LoadedSubmission, gold: LoadedSubmission, dirs: TaskDirs, *, workers: int
    ) -> Scores:
        """COCO evaluation per level over all test images (dataset-level, one process)."""
        ids, _, truth = metrics.load_truth(dirs.private / prepare.GT_FILE)
        if sorted(ids) != submission.ids():
            msg = "dentex: gt_coco.json images differ from the submission's test ids"
            raise HarnessError(msg)
        detections = {
            case_id: json.loads(
                submission.cases[case_id].paths["predictions_json"].read_text(encoding="utf-8-sig")
            )
            for case_id in ids
        }
        values = metrics.dentex_scores(truth, [detections[i] for i in ids])
        return Scores(metrics=values, cases=metrics.per_image_counts(ids, truth, detections))

    def solve_baseline(self, public_dir: Path, submission_dir: Path, *, seed: int = 0) -> None:
        """Position-prior detector fitted on the training boxes (see the baseline module)."""
        from rexmle.challenges.dentex.baseline import solve

        solve(public_dir, submission_dir, seed=seed)
