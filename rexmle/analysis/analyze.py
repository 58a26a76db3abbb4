"""``rexmle analyze``: the failure taxonomy of every run, geometry diagnostics of valid
segmentation runs, and a summary per agent.

Geometry diagnostics need the task's private gold (the data dir: ``--data-dir``, else
``$REXMLE_DATA_DIR``, else ``~/.cache/rexmle``), prepared from the same data (mini or full) the
run used; where it is not there, the run's geometry cell says why. Submitted files are read as
the grader reads them (:func:`rexmle.analysis.cases.read_pair`): one whose header declares more
values than the grader's budget is never decoded and skips the run's geometry.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from rexmle.analysis.cases import case_pairs, instance_labels, mask_column, read_pair
from rexmle.analysis.geometry import GeometryFinding, diagnose
from rexmle.analysis.taxonomy import FailureClass, classify
from rexmle.errors import RexmleError
from rexmle.records.results import RunResult

MAX_CASES = 5
"""Cases examined per run (spread evenly over the sorted case ids)."""


@dataclass(frozen=True)
class GeometryVerdict:
    """The geometry diagnosis of one run: its cases' findings and the run-level verdict."""

    kind: str
    """``ok``, a flagged kind of :class:`GeometryFinding`, or ``skipped``."""
    detail: str
    cases_examined: int = 0
    cases_flagged: int = 0
    dice_as_is: float | None = None
    dice_fixed: float | None = None


@dataclass(frozen=True)
class RunAnalysis:
    """One run's taxonomy class and geometry verdict."""

    group: str
    condition: str
    data: str
    agent: str
    task: str
    seed: int
    status: str
    failure: FailureClass
    geometry: GeometryVerdict | None


def _spread(items: Sequence[object], n: int) -> list[object]:
    if len(items) <= n:
        return list(items)
    step = (len(items) - 1) / (n - 1)
    return [items[round(i * step)] for i in range(n)]


def geometry_of_run(
    result: RunResult, data_dir: Path | None, failure: FailureClass
) -> GeometryVerdict | None:
    """Geometry verdict of a segmentation run that is valid or invalid by shape; else None.

    Cases where prediction and truth are both empty say nothing about geometry and are not
    examined.
    """
    by_shape = failure.kind == "invalid_format" and failure.detail == "wrong_shape"
    if not (result.valid or by_shape) or mask_column(result.task) is None:
        return None
    from rexmle.io import ImageReadError
    from rexmle.tasks.folders import prepared_data_mode, task_dirs

    if data_dir is None:
        return GeometryVerdict("skipped", "no --data-dir given (the gold is needed)")
    dirs = task_dirs(result.task, data_dir)
    if not dirs.prepared_json.is_file():
        return GeometryVerdict("skipped", f"{result.task} is not prepared in {data_dir}")
    try:
        mode = prepared_data_mode(dirs)
    except (OSError, ValueError) as error:
        return GeometryVerdict("skipped", f"{dirs.prepared_json} is unreadable: {error}")
    if result.data != "unknown" and mode != result.data:
        return GeometryVerdict(
            "skipped", f"the data dir holds {mode} data but the run used {result.data} data"
        )
    pairs = _spread(case_pairs(result.task, result.path / "submission", dirs.gold), MAX_CASES)
    findings: list[GeometryFinding] = []
    instances = instance_labels(result.task)
    for pair in pairs:
        try:
            gold, predicted = read_pair(pair)  # type: ignore[arg-type]
            truth, pred = gold.array, predicted.array
            if not pred.any() and not truth.any():
                continue
            findings.append(diagnose(pred, truth, instances=instances))
        except (ImageReadError, ValueError) as error:
            return GeometryVerdict("skipped", f"case {pair.case_id}: {error}")  # type: ignore[attr-defined]
    if not findings:
        return GeometryVerdict("skipped", "no case with a non-empty mask in submission or gold")
    flagged = [f for f in findings if f.flagged]
    as_is = sum(f.dice_as_is for f in findings) / len(findings)
    fixed = sum(f.dice_fixed for f in findings) / len(findings)
    if 2 * len(flagged) >= len(findings):
        (kind, transform), _ = Counter((f.kind, f.transform) for f in flagged).most_common(1)[0]
        return GeometryVerdict(kind, transform, len(findings), len(flagged), as_is, fixed)
    return GeometryVerdict("ok", "", len(findings), len(flagged), as_is, fixed)


def analyze_runs(results: Sequence[RunResult], *, data_dir: Path | None) -> list[RunAnalysis]:
    """Taxonomy and geometry of every run."""
    analyses = []
    for r in results:
        failure = classify(r)
        analyses.append(
            RunAnalysis(
                group=r.group,
                condition=r.condition,
                data=r.data,
                agent=r.agent,
                task=r.task,
                seed=r.seed,
                status=r.status,
                failure=failure,
                geometry=geometry_of_run(r, data_dir, failure),
            )
        )
    return analyses


def analysis_table(analyses: Sequence[RunAnalysis]) -> pd.DataFrame:
    """One row per run: key columns, status, failure class, detail, evidence, geometry."""
    rows = []
    for a in analyses:
        geometry = a.geometry
        rows.append(
            {
                "group": a.group,
                "condition": a.condition,
                "data": a.data,
                "agent": a.agent,
                "task": a.task,
                "seed": a.seed,
                "status": a.status,
                "failure": a.failure.kind,
                "detail": a.failure.detail,
                "evidence": a.failure.evidence,
                "geometry": "" if geometry is None else geometry.kind,
                "geometry_detail": "" if geometry is None else geometry.detail,
            }
        )
    return pd.DataFrame(rows)


def summary_per_agent(analyses: Sequence[RunAnalysis]) -> pd.DataFrame:
    """Per (group, condition, data, agent): run count per failure label and geometry flags."""
    table = analysis_table(analyses)
    if table.empty:
        return table
    table["class"] = [a.failure.label for a in analyses]
    geometry_flagged = table["geometry"].isin(
        ["axes_permuted", "flipped", "permuted_and_flipped", "labels_remapped"]
    )
    table["geometry_flagged"] = geometry_flagged
    keys = ["group", "condition", "data", "agent"]
    counts = table.pivot_table(index=keys, columns="class", values="seed", aggfunc="count")
    counts = counts.fillna(0).astype(int)
    counts["runs"] = table.groupby(keys)["seed"].count()
    counts["geometry_flagged"] = table.groupby(keys)["geometry_flagged"].sum().astype(int)
    return counts.reset_index()


def analysis_json(analyses: Sequence[RunAnalysis]) -> str:
    """Every run's analysis and the per-agent summary, as JSON."""
    runs = []
    for a in analyses:
        item = asdict(a)
        item["failure"]["label"] = a.failure.label
        runs.append(item)
    summary = summary_per_agent(analyses)
    payload = {
        "runs": runs,
        "per_agent": json.loads(summary.to_json(orient="records")) if not summary.empty else [],
    }
    return json.dumps(payload, indent=2) + "\n"


def require_runs(results: Sequence[RunResult], runs_dir: Path) -> None:
    """Raise when there is nothing to analyse.

    Raises:
        RexmleError: no run folder under ``runs_dir``.
    """
    if not results:
        msg = f"no runs found under {runs_dir}"
        raise RexmleError(msg)
