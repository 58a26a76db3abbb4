"""One run as a report or an analysis sees it: :class:`RunResult`.

Definitions used everywhere in the report and the analysis:

- *finished*: the run has a final status (not ``running``, not ``cancelled``). Unfinished runs
  are listed but never scored: they run again.
- *scored*: finished and not ``infra_error`` (a harness failure is never the agent's fault).
- *FAIL*: a scored run without a valid graded submission: headline value None, percentile 0.

:mod:`rexmle.report.collect` builds these values from run folders.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rexmle.records.runs import RunRecord

UNFINISHED_STATUSES = frozenset({"running", "cancelled"})
"""Statuses of runs that have not ended (they run again); never scored."""
UNSCORED_STATUSES = UNFINISHED_STATUSES | {"infra_error", "unknown"}
"""Statuses that never count for or against an agent."""


@dataclass(frozen=True)
class RunResult:
    """One agent run on one task with one seed, as the report sees it."""

    group: str
    task: str
    agent: str
    seed: int
    status: str
    valid: bool
    headline_key: str
    headline_value: float | None
    """None when the submission is missing or invalid (shown as FAIL)."""
    percentile: float
    medal: str | None
    above_median: bool
    metrics: dict[str, float]
    reasons: list[str]
    path: Path
    condition: str = ""
    """The run's experimental condition (run.json ``condition``), empty when none."""
    selection: str = ""
    """Which of the agent's submissions was graded (run.json ``selection``, else the agent's
    declared policy): ``study`` or ``best-valid``; empty for agents without one."""
    experiment: str = ""
    data: str = "unknown"
    """``mini``, ``full`` or ``unknown``: the data the run was graded on, as its grade.json says
    (the grader's reading of prepared.json). A run without a graded report (it failed first, or
    its report predates the field) has the data its run.json config asked for; ``unknown``
    when that does not say either."""
    isolated: bool | None = None
    """Whether the sandbox isolated files (False for the ``local`` sandbox)."""
    sandbox_kind: str = ""
    network: str = ""
    """The agent's network mode (run.json ``sandbox.network``), empty when not recorded."""
    error: str | None = None
    """run.json ``error``: why the run ended as it did, when the harness knows."""
    exit_code: int | None = None
    time_limit_s: float | None = None
    agent_seconds: float | None = None
    validation_requests: int = 0
    has_submission: bool = False
    """Whether the graded copy of ``submission/`` holds a submission.csv."""
    llm: dict[str, object] = field(default_factory=dict)
    """run.json ``llm`` totals when the gateway recorded them (tokens, cost, requests)."""
    extra: dict[str, object] = field(default_factory=dict)
    """run.json ``scheduler`` and ``agent_env`` when present."""
    record: RunRecord | None = None
    """The run's ``run.json`` (None for a result not read from a run folder)."""

    @property
    def finished(self) -> bool:
        """The run ended (its status is final)."""
        return self.status not in UNFINISHED_STATUSES

    @property
    def scored(self) -> bool:
        """The run counts for its agent: finished and not a harness failure."""
        return self.status not in UNSCORED_STATUSES

    @property
    def failed(self) -> bool:
        """A scored run without a valid graded submission (a FAIL cell)."""
        return self.scored and not self.valid

    @property
    def reason(self) -> str:
        """The first reason the run is not a valid graded submission, or ''."""
        if self.valid:
            return ""
        if self.reasons:
            return self.reasons[0]
        if self.error:
            return self.error.splitlines()[0]
        if not self.has_submission and self.finished:
            return "no submission.csv was written"
        return ""
