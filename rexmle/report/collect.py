"""Collect run results from a runs dir: ``<runs>/<group>/<task>/<agent>/seed-<k>/``.

Each run folder holds ``run.json`` (a :class:`~rexmle.records.runs.RunRecord`, read typed) and,
when grading happened, ``grade.json`` (the grade report). One
:class:`~rexmle.records.results.RunResult` per run folder (its definitions of finished, scored
and FAIL are there); every table and plot of a report is computed from these rows (see
:mod:`rexmle.report.runtable`).
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import ValidationError

from rexmle.errors import RexmleError
from rexmle.grading.report import read_grade_report
from rexmle.records.results import RunResult
from rexmle.records.runs import RUN_JSON, RunRecord
from rexmle.tasks.registry import all_tasks

_SEED = re.compile(r"^seed-(\d+)$")


def read_run_record(folder: Path) -> RunRecord:
    """The run's ``run.json`` as its typed record.

    Raises:
        RexmleError: missing, unreadable, or not a run record (the file and the fields named).
    """
    path = folder / RUN_JSON
    try:
        return RunRecord.model_validate_json(path.read_bytes())
    except OSError as err:
        msg = f"cannot read {path}: {err}"
        raise RexmleError(msg) from err
    except ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'the file'}: {e['msg']}"
            for e in err.errors()[:5]
        )
        msg = f"{path} is not a run record ({problems})"
        raise RexmleError(msg) from err


def _selection(record: RunRecord) -> str:
    """run.json ``selection``, else the policy of the agent declaration in its config."""
    if record.selection is not None:
        return record.selection
    llm = record.config.agent.llm
    return "" if llm is None else llm.selection


def result_from_folder(folder: Path, *, group: str, task: str, agent: str, seed: int) -> RunResult:
    """The :class:`RunResult` of one run folder (run.json required, grade.json optional).

    Raises:
        RexmleError: run.json or grade.json is unreadable.
    """
    record = read_run_record(folder)
    grade_path = folder / "grade.json"
    grade = read_grade_report(grade_path) if grade_path.is_file() else None
    graded = grade if grade is not None and grade.valid else None  # None: FAIL or not graded
    data = grade.data if grade is not None and grade.data is not None else None
    if data is None:
        data = "mini" if record.config.mini else "full"
    sandbox = record.sandbox
    extra: dict[str, object] = {}
    if record.scheduler is not None:
        extra["scheduler"] = record.scheduler.model_dump(mode="json")
    if record.agent_env is not None:
        extra["agent_env"] = dict(record.agent_env)
    return RunResult(
        group=group,
        task=task,
        agent=agent,
        seed=seed,
        status=record.status,
        valid=graded is not None,
        headline_key=all_tasks()[task].headline.key,
        headline_value=None if graded is None else graded.headline_value,
        percentile=0.0 if graded is None else graded.ranking.percentile,
        medal=None if graded is None else graded.ranking.medal,
        above_median=False if graded is None else graded.ranking.above_median,
        metrics={} if graded is None else dict(graded.metrics),
        reasons=[] if grade is None else list(grade.reasons),
        path=folder,
        condition=record.condition or "",
        selection=_selection(record),
        experiment=record.experiment or "",
        data=data,
        isolated=None if sandbox is None else sandbox.isolated,
        sandbox_kind="" if sandbox is None else sandbox.kind,
        network="" if sandbox is None or sandbox.network is None else sandbox.network,
        error=record.error or None,
        exit_code=record.exit_code,
        time_limit_s=record.config.time_limit_s,
        agent_seconds=record.timings_s.get("agent"),
        validation_requests=record.validation_requests,
        has_submission=(folder / "submission" / "submission.csv").is_file(),
        llm={} if record.llm is None else record.llm.model_dump(mode="json"),
        extra=extra,
        record=record,
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
