"""Collect run results from a runs dir: ``<runs>/<group>/<task>/<agent>/seed-<k>/``.

Each run folder holds ``run.json`` (its ``status``, config, sandbox, optional ``llm``,
``condition``, ``experiment``, ``scheduler``, ``agent_env``) and, when grading happened,
``grade.json`` (the grade report). One :class:`RunResult` per run folder; every table and plot
of a report is computed from these rows (see :mod:`rexmle.report.runtable`).

Definitions used everywhere in the report:

- *finished*: the run has a final status (not ``running``, not ``cancelled``). Unfinished runs
  are listed but never scored: they run again.
- *scored*: finished and not ``infra_error`` (a harness failure is never the agent's fault).
- *FAIL*: a scored run without a valid graded submission: headline value None, percentile 0.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from rexmle.errors import RexmleError
from rexmle.grading.report import read_grade_report
from rexmle.tasks.registry import all_tasks

_SEED = re.compile(r"^seed-(\d+)$")
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


def read_json_object(path: Path) -> dict[str, object]:
    """A JSON file that must hold an object.

    Raises:
        RexmleError: unreadable, not JSON, or not an object.
    """
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as err:
        msg = f"cannot read {path}: {err}"
        raise RexmleError(msg) from err
    if not isinstance(loaded, dict):
        msg = f"{path}: expected a JSON object"
        raise RexmleError(msg)
    return loaded


def _dict(value: object) -> dict[str, object]:
    return value if isinstance(value, dict) else {}


def _label(value: object) -> str:
    """A condition or experiment as one string (a mapping becomes sorted key=value pairs)."""
    if value is None:
        return ""
    if isinstance(value, dict):
        for key in ("name", "id", "label"):
            if isinstance(value.get(key), str):
                return str(value[key])
        return ",".join(f"{k}={value[k]}" for k in sorted(value))
    return str(value)


def _selection(record: dict[str, object], config: dict[str, object]) -> str:
    """run.json ``selection``, else the policy of the agent declaration in its config."""
    recorded = record.get("selection")
    if isinstance(recorded, str):
        return recorded
    declared = _dict(_dict(config.get("agent")).get("llm")).get("selection")
    return declared if isinstance(declared, str) else ""


def _float_or_none(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def result_from_folder(folder: Path, *, group: str, task: str, agent: str, seed: int) -> RunResult:
    """The :class:`RunResult` of one run folder (run.json required, grade.json optional).

    Raises:
        RexmleError: run.json or grade.json is unreadable.
    """
    record = read_json_object(folder / "run.json")
    grade_path = folder / "grade.json"
    grade = read_grade_report(grade_path) if grade_path.is_file() else None
    graded = grade if grade is not None and grade.valid else None  # None: FAIL or not graded
    config = _dict(record.get("config"))
    sandbox = _dict(record.get("sandbox"))
    timings = _dict(record.get("timings_s"))
    configured = config.get("mini")
    data = grade.data if grade is not None and grade.data is not None else None
    if data is None and isinstance(configured, bool):
        data = "mini" if configured else "full"
    isolated = sandbox.get("isolated")
    network = sandbox.get("network")
    if isinstance(network, dict):
        network = network.get("mode", json.dumps(network, sort_keys=True))
    return RunResult(
        group=group,
        task=task,
        agent=agent,
        seed=seed,
        status=str(record.get("status", "unknown")),
        valid=graded is not None,
        headline_key=all_tasks()[task].headline.key,
        headline_value=None if graded is None else graded.headline_value,
        percentile=0.0 if graded is None else graded.ranking.percentile,
        medal=None if graded is None else graded.ranking.medal,
        above_median=False if graded is None else graded.ranking.above_median,
        metrics={} if graded is None else dict(graded.metrics),
        reasons=[] if grade is None else list(grade.reasons),
        path=folder,
        condition=_label(record.get("condition")),
        selection=_selection(record, config),
        experiment=_label(record.get("experiment")),
        data=data or "unknown",
        isolated=isolated if isinstance(isolated, bool) else None,
        sandbox_kind=str(sandbox.get("kind", "")),
        network="" if network is None else str(network),
        error=str(record["error"]) if record.get("error") else None,
        exit_code=record.get("exit_code") if isinstance(record.get("exit_code"), int) else None,  # type: ignore[arg-type]
        time_limit_s=_float_or_none(config.get("time_limit_s")),
        agent_seconds=_float_or_none(timings.get("agent")),
        validation_requests=int(record.get("validation_requests", 0) or 0),  # type: ignore[call-overload]
        has_submission=(folder / "submission" / "submission.csv").is_file(),
        llm=_dict(record.get("llm")),
        extra={k: record[k] for k in ("scheduler", "agent_env") if record.get(k) is not None},
    )


def collect_runs(runs_dir: Path) -> list[RunResult]:
    """Every run under ``runs_dir``, sorted by (group, task, agent, seed).

    A run folder is ``<group...>/<task>/<agent>/seed-<k>/`` with a run.json; folders of unknown
    tasks are skipped.

    Raises:
        RexmleError: the folder does not exist, or a run.json/grade.json is unreadable.
    """
    runs_dir = Path(runs_dir)
    if not runs_dir.is_dir():
        msg = f"runs dir {runs_dir} does not exist"
        raise RexmleError(msg)
    tasks = all_tasks()
    results: list[RunResult] = []
    for run_json in sorted(runs_dir.rglob("run.json")):
        folder = run_json.parent
        relative = folder.relative_to(runs_dir).parts
        match = _SEED.match(folder.name)
        if match is None or len(relative) < 3:
            continue
        if any(_SEED.match(part) for part in relative[:-1]):
            continue  # inside another run's folder (its workspace is the agent's to write)
        task, agent = relative[-3], relative[-2]
        if task not in tasks:
            continue
        group = "/".join(relative[:-3]) or "."
        results.append(
            result_from_folder(folder, group=group, task=task, agent=agent, seed=int(match[1]))
        )
    return sorted(results, key=lambda r: (r.group, r.task, r.agent, r.seed))
