"""The six TopCoW tasks: one class per task kind, the track (CT or MR) read from the task id."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import ClassVar

from rexmle.challenges.base import (
    LoadedSubmission,
    Scores,
    SubmissionCase,
    TaskDirs,
    TaskImplementation,
)
from rexmle.challenges.topcow import fixture, metrics, prepare, submission
from rexmle.challenges.topcow.labels import modality_of
from rexmle.challenges.topcow.roi import Box
from rexmle.split import Split
from rexmle.tasks.files import case_path_items
from rexmle.tasks.parallel import map_cases
from rexmle.tasks.spec import TaskSpec

MODALITY_WORDS = {"ct": "CT angiography (CTA)", "mr": "MR angiography (3-D TOF MRA)"}


class _TopcowTask(TaskImplementation):
    """What the three task kinds share: fixture, split, common public layout, description."""

    id_column: ClassVar[str] = prepare.ID_COLUMN
    task_number: ClassVar[int]

    def __init__(self, spec: TaskSpec) -> None:
        super().__init__(spec)
        self.modality = modality_of(spec.id)

    @property
    def path_column(self) -> str:
        """The submission's path column."""
        return prepare.PATH_COLUMNS[self.task_number]

    def make_fixture(self, raw_dir: Path, *, seed: int = 0) -> None:
        """Write the shared mini release (both modalities, whichever task asks)."""
        fixture.make_fixture(raw_dir, seed=seed)

    def prepare(self, raw_dir: Path, public_dir: Path, private_dir: Path, *, mini: bool) -> Split:
        """Check, split and copy (see :mod:`rexmle.challenges.topcow.prepare`)."""
        return prepare.prepare(
            raw_dir,
            public_dir,
            private_dir,
            modality=self.modality,
            task=self.task_number,
            seed=self.spec.split.seed or 42,
        )

    def description(self) -> str:
        """The task kind's description with this track's modality filled in."""
        package = resources.files("rexmle.challenges.topcow")
        template = package.joinpath(self.spec.description_file).read_text(encoding="utf-8")
        track = self.spec.id.split("-")[1].replace("track", "track ")
        return (
            template.replace("{{MOD}}", self.modality)
            .replace("{{MODALITY}}", MODALITY_WORDS[self.modality])
            .replace("{{TASK_ID}}", self.spec.id)
            .replace("{{TRACK}}", track)
        )


class TopcowSegmentationTask(_TopcowTask):
    """Task 1: multiclass CoW segmentation, scored inside the test ROI."""

    path_columns: ClassVar[tuple[str, ...]] = (prepare.PATH_COLUMNS[1],)
    task_number: ClassVar[int] = 1

    def check_case(self, case: SubmissionCase, public_dir: Path) -> list[str]:
        """Label-map rules: readable, 3-D, one component, test image size, CoW label values."""
        return submission.check_mask_file(
            case.case_id, case.paths[self.path_column], public_dir, self.modality
        )

    def score(
        self, submission: LoadedSubmission, gold: LoadedSubmission, dirs: TaskDirs, *, workers: int
    ) -> Scores:
        """Per-case metrics in worker processes, then the nine leaderboard values."""
        items = [
            (case_id, pred, truth, dirs.private / "roi" / f"topcow_{self.modality}_{case_id}.txt")
            for case_id, pred, truth in case_path_items(submission, gold, self.path_column)
        ]
        cases = map_cases(metrics.score_segmentation_case, items, workers=workers)
        return Scores(metrics=metrics.aggregate_segmentation(cases), cases=cases)

    def solve_baseline(self, public_dir: Path, submission_dir: Path, *, seed: int = 0) -> None:
        """Threshold + nearest labelled voxel (see :mod:`rexmle.challenges.topcow.baseline`)."""
        from rexmle.challenges.topcow.baseline import solve_segmentation

        solve_segmentation(public_dir, submission_dir, modality=self.modality, seed=seed)


class TopcowBoxTask(_TopcowTask):
    """Task 2: one voxel box around the CoW region of interest."""

    path_columns: ClassVar[tuple[str, ...]] = (prepare.PATH_COLUMNS[2],)
    task_number: ClassVar[int] = 2

    def check_case(self, case: SubmissionCase, public_dir: Path) -> list[str]:
        """Box rules: JSON object, integer size and location, sizes >= 1."""
        return submission.check_box_file(
            case.case_id, case.paths[self.path_column], public_dir, self.modality
        )

    def score(
        self, submission: LoadedSubmission, gold: LoadedSubmission, dirs: TaskDirs, *, workers: int
    ) -> Scores:
        """Boundary IoU and IoU per case (closed form, in-process), then means."""
        cases: list[dict[str, object]] = []
        for case_id, pred_path, gold_path in case_path_items(submission, gold, self.path_column):
            pred, truth = _read_box(pred_path), _read_box(gold_path)
            cases.append({"case_id": case_id, **metrics.score_box(pred, truth)})
        return Scores(metrics=metrics.aggregate_boxes(cases), cases=cases)

    def solve_baseline(self, public_dir: Path, submission_dir: Path, *, seed: int = 0) -> None:
        """Mean box relative to the vessel centre (see the baseline module)."""
        from rexmle.challenges.topcow.baseline import solve_box

        solve_box(public_dir, submission_dir, modality=self.modality, seed=seed)


class TopcowEdgesTask(_TopcowTask):
    """Task 3: CoW variant as anterior and posterior edge lists."""

    path_columns: ClassVar[tuple[str, ...]] = (prepare.PATH_COLUMNS[3],)
    task_number: ClassVar[int] = 3

    def check_case(self, case: SubmissionCase, public_dir: Path) -> list[str]:
        """Edge-list rules: exactly the 8 edges, JSON integers 0 or 1."""
        return submission.check_edges_file(case.paths[self.path_column])

    def score(
        self, submission: LoadedSubmission, gold: LoadedSubmission, dirs: TaskDirs, *, workers: int
    ) -> Scores:
        """Variant strings per case, then balanced accuracies."""
        cases: list[dict[str, object]] = []
        for case_id, pred_path, gold_path in case_path_items(submission, gold, self.path_column):
            pred = json.loads(pred_path.read_text(encoding="utf-8"))
            truth = json.loads(gold_path.read_text(encoding="utf-8"))
            cases.append({"case_id": case_id, **metrics.score_edges(pred, truth)})
        return Scores(metrics=metrics.aggregate_edges(cases), cases=cases)

    def solve_baseline(self, public_dir: Path, submission_dir: Path, *, seed: int = 0) -> None:
        """Nearest training case by aligned vessel masks (see the baseline module)."""
        from rexmle.challenges.topcow.baseline import solve_edges

        solve_edges(public_dir, submission_dir, modality=self.modality, seed=seed)


def _read_box(path: Path) -> Box:
    payload = json.loads(path.read_text(encoding="utf-8"))
    size, location = payload["size"], payload["location"]
    return Box(size=(size[0], size[1], size[2]), location=(location[0], location[1], location[2]))
