"""The TopBrain tracks: bind fixture, preparation, validity rules, metrics and baseline."""

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
from rexmle.challenges.topbrain import fixture, metrics, prepare, submission
from rexmle.challenges.topbrain.labels import TRACKS
from rexmle.split import Split
from rexmle.tasks.files import case_path_items
from rexmle.tasks.parallel import map_cases

PATH_COLUMN = "predicted_mask_path"


class _TopBrainTrack(TaskImplementation):
    """TopBrain multiclass vessel segmentation on the angiography grid (one subclass per track)."""

    id_column: ClassVar[str] = "image_id"
    path_columns: ClassVar[tuple[str, ...]] = (PATH_COLUMN,)
    modality: ClassVar[str]

    def make_fixture(self, raw_dir: Path, *, seed: int = 0) -> None:
        """Write the shared mini raw tree (the same for both tracks)."""
        fixture.make_fixture(raw_dir, seed=seed)

    def prepare(self, raw_dir: Path, public_dir: Path, private_dir: Path, *, mini: bool) -> Split:
        """Split and copy this track's cases (see :mod:`rexmle.challenges.topbrain.prepare`)."""
        return prepare.prepare(
            raw_dir,
            public_dir,
            private_dir,
            modality=self.modality,
            seed=self.spec.split.seed or 42,
        )

    def check_case(self, case: SubmissionCase, public_dir: Path) -> list[str]:
        """Label map rules: readable, 3-D, one component, test image size, track label set."""
        return submission.check_label_file(
            case.case_id, case.paths[PATH_COLUMN], public_dir, TRACKS[self.modality]
        )

    def score(
        self, submission: LoadedSubmission, gold: LoadedSubmission, dirs: TaskDirs, *, workers: int
    ) -> Scores:
        """Per-case metrics in parallel, then means and the side-road detection F1."""
        items = [(*pair, self.modality) for pair in case_path_items(submission, gold, PATH_COLUMN)]
        results = map_cases(metrics.score_case, items, workers=workers)
        rows = [row for row, _ in results]
        outcomes = [found for _, found in results]
        return Scores(metrics=metrics.aggregate(rows, outcomes, self.modality), cases=rows)

    def solve_baseline(self, public_dir: Path, submission_dir: Path, *, seed: int = 0) -> None:
        """Vessel threshold + label atlas in normalised coordinates, fitted on training cases."""
        from rexmle.challenges.topbrain.baseline import solve

        solve(public_dir, submission_dir, modality=self.modality, seed=seed)


class TopBrainTrack1(_TopBrainTrack):
    """Track 1: CT angiography, labels 1-40."""

    modality: ClassVar[str] = "ct"


class TopBrainTrack2(_TopBrainTrack):
    """Track 2: MR angiography (TOF), labels 1-42."""

    modality: ClassVar[str] = "mr"
