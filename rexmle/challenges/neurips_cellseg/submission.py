"""NeurIPS-CellSeg submission rules (spec neurips-cellseg.md, "Validity rules"), public data only.

A case is one instance label map: a TIFF (``.tif``/``.tiff``) or PNG file holding a 2-D integer
array of the test image's (height, width) from ``public/test/image_sizes.csv``, values in
0 ... 2**31 - 1, at most 1 000 000 distinct instance ids. Nothing is resized, cast or squeezed.
"""

from __future__ import annotations

import csv
import functools
from pathlib import Path

import numpy as np

from rexmle.errors import SpecError
from rexmle.tasks.checks import check_shape, distinct_values, read_submitted_image
from rexmle.tasks.jobs import CheckContext
from rexmle.tasks.spec import FileRule, SubmissionSpec, TaskSpec
from rexmle.tasks.submission import SubmissionCase

from .prepare import SIZES_FILE

MAX_INSTANCE_ID = 2**31 - 1
MAX_INSTANCES = 1_000_000


@functools.lru_cache(maxsize=8)
def image_sizes(public_dir: Path, id_column: str) -> dict[str, tuple[int, int]]:
    """Test id -> (height, width) from ``public/test/image_sizes.csv``."""
    with open(public_dir / "test" / SIZES_FILE, newline="", encoding="utf-8") as handle:
        return {
            row[id_column]: (int(row["height"]), int(row["width"]))
            for row in csv.DictReader(handle)
        }


def _declared(task: TaskSpec) -> tuple[SubmissionSpec, FileRule]:
    """The declared submission and the file rule of its one path column."""
    if task.submission is None or len(task.submission.columns) != 1:
        msg = f"{task.id}: declare exactly one submission column (the label map's path)"
        raise SpecError(msg)
    rule = task.submission.columns[0].file
    if rule is None:
        msg = f"{task.id}: the label map's column declares no file rule (suffixes)"
        raise SpecError(msg)
    return task.submission, rule


def _sizes(context: CheckContext) -> dict[str, tuple[int, int]]:
    submission, _ = _declared(context.task)
    return image_sizes(context.public, submission.id_column)


def test_ids(context: CheckContext) -> list[str]:
    """The ids to submit: those of ``public/test/image_sizes.csv``, sorted."""
    return sorted(_sizes(context))


def check_case(case: SubmissionCase, context: CheckContext) -> list[str]:
    """Reasons why the case's file is not a valid instance map (rules 2-5 of the spec).

    The suffix rule is declared in the YAML; this checks the decoded array against the test
    image's (height, width) from ``public/test/image_sizes.csv``.
    """
    _, rule = _declared(context.task)
    expected = _sizes(context)[case.case_id]
    (path,) = case.paths.values()
    image, problem = read_submitted_image(path, suffixes=rule.suffixes, expected_shape=expected)
    if image is None:
        return [str(problem)]
    labels = np.asarray(image.array)
    if labels.ndim != 2:
        return [
            f"{path.name}: the array has shape {labels.shape}; write a single-channel 2-D "
            f"label map (no channel axis, no RGB)"
        ]
    if labels.dtype.kind not in "iu":
        return [
            f"{path.name}: dtype {labels.dtype} is not an integer type; write instance ids as "
            f"uint8/16/32/64 or int8/16/32/64 (float and bool maps are not accepted)"
        ]
    shape_problem = check_shape(labels.shape, expected, what=path.name)
    if shape_problem:
        return [shape_problem]
    if labels.size == 0:
        return []
    low, high = int(labels.min()), int(labels.max())
    if low < 0:
        return [f"{path.name}: negative value {low}; 0 is background, instances are positive ids"]
    if high > MAX_INSTANCE_ID:
        return [
            f"{path.name}: instance id {high} exceeds {MAX_INSTANCE_ID} (2**31 - 1); the official "
            f"evaluation casts maps to int32, so renumber the instances"
        ]
    n_instances = int(np.count_nonzero(distinct_values(labels)))
    if n_instances > MAX_INSTANCES:
        return [
            f"{path.name}: {n_instances} distinct instance ids; at most {MAX_INSTANCES} allowed"
        ]
    return []
