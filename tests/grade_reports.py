"""Complete grade reports for synthetic run folders (what the grader writes as grade.json)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from rexmle.grading.report import GradeReport
from rexmle.ranking import MedalThresholds, Ranking


def grade_report_json(
    task: str,
    *,
    valid: bool,
    metrics: dict[str, float] | None = None,
    percentile: float = 0.0,
    reasons: Sequence[str] = (),
    cases: Sequence[dict[str, object]] = (),
    data: Literal["mini", "full"] | None = None,
) -> str:
    """A grade report as JSON: ``metrics`` and ``percentile`` as given, a 10-row leaderboard."""
    metrics = dict(metrics or {})
    ranking = Ranking(
        n_rows=10,
        positions={key: 5.0 for key in metrics},
        mean_position=5.0 if valid else 11.0,
        percentile=percentile,
        medal=None,
        above_median=False,
        any_medal=False,
        thresholds=MedalThresholds(gold=1.0, silver=2.0, bronze=3.0, above_median=5.5),
    )
    report = GradeReport(
        task=task,
        valid=valid,
        reasons=list(reasons),
        metrics=metrics,
        cases=list(cases),
        ranking=ranking,
        data=data,
        rexmle_version="0",
        seconds=0.0,
    )
    return report.model_dump_json()
