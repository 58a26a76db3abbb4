"""The grade report (``rexmle grade --json``) and the validation result."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import (
    BaseModel,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)

from rexmle.errors import RexmleError
from rexmle.ranking import Ranking
from rexmle.tasks.definitions import DEFAULT_DEFINITIONS, DefinitionSet
from rexmle.tasks.rows import CaseValue

_MAX_LISTED_PROBLEMS = 5
_MINI_MEANING = (
    "rank synthetic results against the REAL human leaderboards: they test the pipeline and say "
    "nothing about how an agent performs on the challenge."
)
MINI_BANNER = (
    "MINI DATA: {n} run(s) used the synthetic mini suite. Their values and percentiles "
    + _MINI_MEANING
)
"""What every output says of runs graded on the mini data (``data: mini`` in the grade report)."""
MINI_GRADE_BANNER = (
    "MINI DATA: this grade is of the synthetic mini suite. Its values and percentiles "
    + _MINI_MEANING
)
"""What ``rexmle grade`` says of one grade of the mini data."""


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
    cases: list[dict[str, CaseValue]]
    ranking: Ranking
    data: Literal["mini", "full"] | None = None
    """The prepared data graded against: ``mini`` (synthetic fixture, ranked against the real
    leaderboard only for testing the pipeline) or ``full`` (the challenge's data); None in
    reports written before the field existed."""
    rexmle_version: str
    seconds: float
    definitions: DefinitionSet = DEFAULT_DEFINITIONS
    """The definition set the metrics and the ranking follow (:mod:`rexmle.tasks.definitions`).
    Written only when it is not ``official``, so official reports keep their exact form; a report
    without the field is official."""

    @model_serializer(mode="wrap")
    def _official_unstated(
        self, handler: SerializerFunctionWrapHandler, _info: SerializationInfo
    ) -> dict[str, object]:
        dumped: dict[str, object] = handler(self)
        if dumped.get("definitions") == DEFAULT_DEFINITIONS:
            dumped.pop("definitions")
        return dumped

    @property
    def headline_key(self) -> str:
        """The task's headline metric: the one its YAML marks ``headline: true``."""
        from rexmle.tasks.registry import get_task

        return get_task(self.task).headline.key

    @property
    def headline_value(self) -> float | None:
        """The headline metric's value; None for an invalid submission (no metrics)."""
        return self.metrics.get(self.headline_key) if self.valid else None


def read_grade_report(path: Path) -> GradeReport:
    """The grade report stored in ``path`` (a ``grade.json`` as ``rexmle grade --json`` writes).

    Raises:
        RexmleError: the file cannot be read, is not JSON, or is not a grade report; the message
            names the file and the first fields that are missing or wrong.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        msg = f"cannot read the grade report {path}: {err}"
        raise RexmleError(msg) from err
    try:
        return GradeReport.model_validate_json(text)
    except ValidationError as err:
        problems = [
            f"{'.'.join(str(part) for part in e['loc']) or '(file)'}: {e['msg']}"
            for e in err.errors()[:_MAX_LISTED_PROBLEMS]
        ]
        more = err.error_count() - len(problems)
        tail = f"; and {more} more" if more > 0 else ""
        msg = f"{path} is not a grade report ({'; '.join(problems)}{tail})"
        raise RexmleError(msg) from err
