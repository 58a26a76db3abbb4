"""Hand-built scoring cases graded with both definition sets (official and study)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import SimpleITK as sitk

from rexmle.tasks.definitions import DefinitionSet
from rexmle.tasks.jobs import ScoreCase
from rexmle.tasks.registry import load_task
from rexmle.tasks.rows import CaseRow
from rexmle.tasks.submission import SubmissionCase


def score_case(
    task_id: str,
    definitions: DefinitionSet,
    pred: Path,
    gold: Path,
    *,
    case_id: str = "c1",
    private: Path | None = None,
) -> CaseRow:
    """Score one case with the task's ``score_case`` of ``definitions`` (as grading resolves it)."""
    task = load_task(task_id)
    (column,) = task.columns.path_columns
    scorer = task.function("score_case", definitions)
    assert scorer is not None
    return scorer(
        ScoreCase(
            case_id=case_id,
            submitted=SubmissionCase(case_id=case_id, row={}, paths={column: pred}),
            gold=SubmissionCase(case_id=case_id, row={}, paths={column: gold}),
            public=pred.parent,
            private=private or gold.parent,
            params=dict(task.spec.params),
        )
    )


def aggregate(task_id: str, definitions: DefinitionSet, rows: list[CaseRow]) -> dict[str, float]:
    """The task's ``aggregate`` of ``definitions`` over ``rows``."""
    task = load_task(task_id)
    function = task.function("aggregate", definitions)
    assert function is not None
    return function(rows, task.spec)


def write_xyz(path: Path, array_xyz: np.ndarray, spacing_xyz: tuple[float, float, float]) -> Path:
    """Write an (x, y, z) array as a SimpleITK image with spacing (s_x, s_y, s_z)."""
    image = sitk.GetImageFromArray(np.ascontiguousarray(np.transpose(array_xyz)))
    image.SetSpacing(spacing_xyz)
    sitk.WriteImage(image, str(path))
    return path
