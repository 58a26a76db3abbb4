"""The four PUMA tasks: bind fixture, preparation, validity rules, metrics and baselines."""

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
from rexmle.challenges.puma import fixture, metrics, prepare, submission
from rexmle.challenges.puma.classes import Track, nuclei_classes
from rexmle.split import Split
from rexmle.tasks.files import case_path_items
from rexmle.tasks.parallel import map_cases


class _PumaTask(TaskImplementation):
    """What the four tasks share: the raw fixture and the split parameters."""

    def make_fixture(self, raw_dir: Path, *, seed: int = 0) -> None:
        """Write the shared mini raw tree (the same whichever task asks)."""
        fixture.make_fixture(raw_dir, seed=seed)

    @property
    def test_fraction(self) -> float:
        """Share of the cases in the test split (spec: 0.2)."""
        return self.spec.split.test_fraction or 0.2

    @property
    def seed(self) -> int:
        """``random_state`` of the split (spec: 42)."""
        return 42 if self.spec.split.seed is None else self.spec.split.seed


class PumaTissueTask(_PumaTask):
    """Semantic tissue map, classes 0-5 (``puma-track1-task1``, ``puma-track2-task1``)."""

    id_column: ClassVar[str] = "case_id"
    path_columns: ClassVar[tuple[str, ...]] = ("predicted_mask_path",)

    def prepare(self, raw_dir: Path, public_dir: Path, private_dir: Path, *, mini: bool) -> Split:
        """Split, copy ROIs, rasterise tissue annotations (see the prepare module)."""
        return prepare.prepare_tissue(
            raw_dir, public_dir, private_dir, test_fraction=self.test_fraction, seed=self.seed
        )

    def check_case(self, case: SubmissionCase, public_dir: Path) -> list[str]:
        """Map file rules: TIFF/PNG, 2-D, integer, ROI size, values 0-5."""
        return submission.check_tissue_file(
            case.case_id, case.paths["predicted_mask_path"], public_dir
        )

    def score(
        self, submission: LoadedSubmission, gold: LoadedSubmission, dirs: TaskDirs, *, workers: int
    ) -> Scores:
        """Pixel counts per case in parallel, then the pooled micro Dice."""
        items = case_path_items(submission, gold, "predicted_mask_path")
        cases = map_cases(metrics.score_tissue_case, items, workers=workers)
        return Scores(metrics=metrics.aggregate_tissue(cases), cases=cases)

    def solve_baseline(self, public_dir: Path, submission_dir: Path, *, seed: int = 0) -> None:
        """Per-pixel colour classifier fitted on the training masks."""
        from rexmle.challenges.puma.baseline_tissue import solve

        solve(public_dir, submission_dir, seed=seed)


class _PumaNucleiTask(_PumaTask):
    """Nuclei detection and classification by centroid (``puma-track{1,2}-task2``)."""

    id_column: ClassVar[str] = "case_id"
    path_columns: ClassVar[tuple[str, ...]] = ("predicted_nuclei_path",)
    track: ClassVar[Track]

    @property
    def classes(self) -> tuple[str, ...]:
        """The canonical class names of this track."""
        return nuclei_classes(self.track)

    def prepare(self, raw_dir: Path, public_dir: Path, private_dir: Path, *, mini: bool) -> Split:
        """Split, copy ROIs, convert nuclei annotations (see the prepare module)."""
        return prepare.prepare_nuclei(
            raw_dir,
            public_dir,
            private_dir,
            track=self.track,
            test_fraction=self.test_fraction,
            seed=self.seed,
        )

    def check_case(self, case: SubmissionCase, public_dir: Path) -> list[str]:
        """JSON rules: one of polygons/nuclei, required keys, class names, finite numbers."""
        _, reasons = submission.read_nuclei_file(case.paths["predicted_nuclei_path"], self.classes)
        return reasons

    def score(
        self, submission: LoadedSubmission, gold: LoadedSubmission, dirs: TaskDirs, *, workers: int
    ) -> Scores:
        """Matching counts per case in parallel, then the PUMA macro F1."""
        items = [
            (*pair, self.classes)
            for pair in case_path_items(submission, gold, "predicted_nuclei_path")
        ]
        cases = map_cases(metrics.score_nuclei_case, items, workers=workers)
        return Scores(metrics=metrics.aggregate_nuclei(cases, self.classes), cases=cases)

    def solve_baseline(self, public_dir: Path, submission_dir: Path, *, seed: int = 0) -> None:
        """Dark-blob detector with a nearest-mean classifier fitted on the training nuclei."""
        from rexmle.challenges.puma.baseline_nuclei import solve

        solve(public_dir, submission_dir, classes=self.classes, seed=seed)


class PumaNucleiTrack1Task(_PumaNucleiTask):
    """Track 1: ``tumor``, ``TILs``, ``other``."""

    track: ClassVar[Track] = 1


class PumaNucleiTrack2Task(_PumaNucleiTask):
    """Track 2: ten nucleus classes."""

    track: ClassVar[Track] = 2
