"""Pair a run's submitted mask files with the gold masks, case by case (segmentation tasks).

The gold is written as a submission (``private/gold/``), so both sides are read the same way: the
task's id column and its first path column of ``submission.csv``. Paths are resolved with the
grader's own rule (:func:`rexmle.tasks.paths.resolve_submission_path`): nothing outside the
submission folder is ever opened.

A submitted file is an agent's file: :func:`read_pair` reads it as the grader does, its header
first against the same pixel budget (:func:`rexmle.tasks.checks.pixel_budget` of the gold's
shape), so a file whose header declares more is refused without being decoded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rexmle.errors import RexmleError
from rexmle.tasks.csvfile import read_csv_rows
from rexmle.tasks.paths import resolve_submission_path
from rexmle.tasks.registry import all_tasks, load_task

if TYPE_CHECKING:
    from rexmle.io import Image

MASK_SUFFIXES = (".nii.gz", ".nii", ".mha", ".mhd", ".nrrd", ".png", ".tif", ".tiff")


@dataclass(frozen=True)
class CasePair:
    """One case's predicted and gold mask files."""

    case_id: str
    pred: Path
    gold: Path


def file_column(task_id: str, task_types: tuple[str, ...]) -> tuple[str, str] | None:
    """(id column, first path column) of an implemented task of one of ``task_types``."""
    spec = all_tasks()[task_id]
    if spec.task_type not in task_types or not spec.is_implemented:
        return None
    columns = load_task(task_id).columns
    if not columns.path_columns:
        return None
    return columns.id_column, columns.path_columns[0]


def mask_column(task_id: str) -> tuple[str, str] | None:
    """(id column, mask path column) of a segmentation task, or None for other task types."""
    return file_column(task_id, ("segmentation",))


def instance_labels(task_id: str) -> bool:
    """Whether the label values of the task's mask column number objects (``labels: instances``
    in its file rule) rather than name classes.
    """
    spec = all_tasks()[task_id]
    column = mask_column(task_id)
    if column is None or spec.submission is None:
        return False
    rules = [c.file for c in spec.submission.columns if c.name == column[1] and c.file]
    return any(rule.labels == "instances" for rule in rules)


def _paths(
    folder: Path, id_column: str, column: str, suffixes: tuple[str, ...] = MASK_SUFFIXES
) -> dict[str, Path]:
    try:
        _, rows = read_csv_rows(folder / "submission.csv")
    except RexmleError:
        return {}
    found: dict[str, Path] = {}
    for row in rows:
        cell = row.get(column, "")
        if not cell.lower().endswith(suffixes):
            continue
        path, _ = resolve_submission_path(folder, cell)
        if path is not None:
            found[row.get(id_column, "")] = path
    return found


def case_pairs(
    task_id: str,
    submission: Path,
    gold: Path,
    *,
    task_types: tuple[str, ...] = ("segmentation",),
    suffixes: tuple[str, ...] = MASK_SUFFIXES,
) -> list[CasePair]:
    """The cases present (as files with ``suffixes``) in both the submission and the gold of a
    task of one of ``task_types``, sorted by id.
    """
    columns = file_column(task_id, task_types)
    if columns is None:
        return []
    predicted = _paths(submission, *columns, suffixes)
    truth = _paths(gold, *columns, suffixes)
    return [CasePair(c, predicted[c], truth[c]) for c in sorted(predicted) if c in truth]


def read_pair(pair: CasePair) -> tuple[Image, Image]:
    """(gold, prediction) of one case; the prediction read within the grader's pixel budget.

    The gold (the harness's own file) is read first; the prediction's header is then checked
    against :func:`rexmle.tasks.checks.pixel_budget` of the gold's shape before any voxel of it
    is decoded.

    Raises:
        rexmle.io.ImageTooLarge: the prediction's header declares more values than the budget
            (nothing of it was decoded).
        rexmle.io.ImageReadError: a file cannot be read.
    """
    from rexmle.io import read_image
    from rexmle.tasks.checks import pixel_budget

    gold = read_image(pair.gold)
    pred = read_image(pair.pred, max_pixels=pixel_budget(gold.geometry.shape))
    return gold, pred
