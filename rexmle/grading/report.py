"""The grade report (``rexmle grade --json``) and the validation result."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from rexmle.ranking import Ranking


class ValidationResult(BaseModel):
    """Format check of a submission against public data only — never a score."""

    task: str
    valid: bool
    reasons: list[str]
    warnings: list[str]
    n_cases: int


class GradeReport(BaseModel):
    """Everything grading says about one submission (ARCHITECTURE.md, "Grade report JSON").

    ``metrics`` holds every leaderboard key plus extra keys the spec names (never ranked); an
    invalid submission has ``valid`` False, its ``reasons``, no metrics and percentile 0.
    """

    task: str
    valid: bool
    reasons: list[str]
    warnings: list[str] = []
    metrics: dict[str, float]
    cases: list[dict[str, object]]
    ranking: Ranking
    data: Literal["mini", "full"] | None = None
    """The prepared data graded against: ``mini`` (synthetic fixture, ranked against the real
    leaderboard only for testing the pipeline) or ``full`` (the challenge's data); None in
    reports written before the field existed."""
    rexmle_version: str
    seconds: float
