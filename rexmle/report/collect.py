"""Collect run results from a runs dir: ``<runs>/<group>/<task>/<agent>/seed-<k>/``.

Each run folder holds ``run.json`` (its ``status``) and, when grading happened, ``grade.json``
(the grade report). A run without a valid grade counts as a failure: headline value 0, percentile 0.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from rexmle.challenges.registry import all_tasks
from rexmle.errors import RexmleError

_SEED = re.compile(r"^seed-(\d+)$")


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


def _read_json(path: Path) -> dict[str, object]:
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        msg = f"cannot read {path}: {err}"
        raise RexmleError(msg) from err
    if not isinstance(loaded, dict):
        msg = f"{path}: expected a JSON object"
        raise RexmleError(msg)
    return loaded


def collect_runs(runs_dir: Path) -> list[RunResult]:
    """Every run under ``runs_dir``, sorted by (group, task, agent, seed).

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
        task, agent = relative[-3], relative[-2]
        group = "/".join(relative[:-3]) or "."
        if task not in tasks:
            continue
        record = _read_json(run_json)
        grade_path = folder / "grade.json"
        grade = _read_json(grade_path) if grade_path.is_file() else None
        headline = tasks[task].headline.key
        valid = bool(grade and grade.get("valid"))
        metrics = {k: float(v) for k, v in (grade or {}).get("metrics", {}).items()}  # type: ignore[union-attr]
        ranking = (grade or {}).get("ranking")
        if not isinstance(ranking, dict):
            ranking = {}
        reasons = [str(r) for r in (grade or {}).get("reasons", [])]  # type: ignore[union-attr]
        results.append(
            RunResult(
                group=group,
                task=task,
                agent=agent,
                seed=int(match.group(1)),
                status=str(record.get("status", "unknown")),
                valid=valid,
                headline_key=headline,
                headline_value=metrics.get(headline) if valid else None,
                percentile=float(ranking.get("percentile", 0.0)) if valid else 0.0,
                medal=ranking.get("medal") if valid else None,  # type: ignore[arg-type]
                above_median=bool(ranking.get("above_median", False)) if valid else False,
                metrics=metrics if valid else {},
                reasons=reasons,
                path=folder,
            )
        )
    return sorted(results, key=lambda r: (r.group, r.task, r.agent, r.seed))
