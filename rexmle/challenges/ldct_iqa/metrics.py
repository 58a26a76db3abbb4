"""LDCT-IQA validity and scoring: |PLCC| + |SROCC| + |KROCC| once over all test images.

Spec ldct-iqa.md, "Validity rules" and "Metrics". Each case row holds the submitted
(``predicted``) and the reference score; the correlations are ``dataset`` metrics, computed
by :func:`aggregate` over the rows in id order.
"""

from __future__ import annotations

import math
import re

import numpy as np

from rexmle.metrics.correlation import ldct_iqa_score
from rexmle.tasks.jobs import CheckContext, ScoreJob
from rexmle.tasks.rows import CaseRow, column
from rexmle.tasks.spec import TaskSpec
from rexmle.tasks.submission import SubmissionCase

_DECIMAL = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def parse_score(text: str) -> float | None:
    """The cell as a finite float, or None.

    Accepted: a plain decimal number, optionally signed, optionally in exponent notation
    (``2``, ``-0.5``, ``.5``, ``3.1e-2``). Rejected: empty cells, spaces, text, ``nan``, ``inf``,
    digit separators (``1_5``, ``1,5``) and values beyond the float range.
    """
    if not _DECIMAL.match(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def check_case(case: SubmissionCase, context: CheckContext) -> list[str]:
    """Reasons against one row: every value column must hold a finite decimal number."""
    assert context.task.submission is not None  # the YAML declares the columns
    reasons = []
    for name in context.task.submission.value_columns:
        text = case.row[name]
        if parse_score(text) is None:
            reasons.append(f"{name} {text!r} is not a finite number")
    return reasons


def score_dataset(job: ScoreJob) -> list[CaseRow]:
    """One row per test image, in id order: ``predicted`` and ``reference`` scores."""
    assert job.task.submission is not None  # the YAML declares the columns
    (value_column,) = job.task.submission.value_columns
    return [
        CaseRow(
            case_id=case_id,
            values={
                "predicted": float(job.submission.cases[case_id].row[value_column]),
                "reference": float(job.gold.cases[case_id].row[value_column]),
            },
        )
        for case_id in sorted(job.gold.cases)
    ]


def aggregate(rows: list[CaseRow], task: TaskSpec) -> dict[str, float]:
    """``score`` and its terms ``plcc``, ``srocc``, ``krocc`` over all rows at once.

    A constant side gives each term ``params.constant_correlation`` (see
    :func:`rexmle.metrics.correlation.ldct_iqa_score`).
    """
    x = np.array(column(rows, "predicted"), dtype=float)
    y = np.array(column(rows, "reference"), dtype=float)
    result = ldct_iqa_score(x, y, constant_value=float(task.params["constant_correlation"]))
    return {
        "score": result.score,
        "plcc": result.plcc,
        "srocc": result.srocc,
        "krocc": result.krocc,
    }
