"""The run-table: one typed row per run, the single source of every report table and plot.

Columns (``RUN_TABLE_COLUMNS``, dtypes fixed so pandas users get the same frame every time):
group, condition, selection, experiment, data (mini / full / unknown), task, category, agent, seed,
status, finished, scored, failed, valid, headline_key, headline_value (NaN when not valid),
percentile (0 for FAIL), medal, above_median, isolated, sandbox, network, reason,
time_limit_s, agent_seconds, validation_requests, llm_total_tokens, llm_cost_usd, path.

Written as CSV, JSON (records) or Parquet (needs pyarrow) by :func:`write_run_table`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from rexmle.errors import RexmleError
from rexmle.records.results import RunResult
from rexmle.tasks.registry import all_tasks

CATEGORY_OF_TYPE = {
    "segmentation": "segmentation",
    "detection": "detection",
    "classification": "classification",
    "regression": "image quality & enhancement",
    "enhancement": "image quality & enhancement",
}
CATEGORY_ORDER = ("segmentation", "detection", "classification", "image quality & enhancement")
TABLE_KEY = ("group", "condition", "data")
"""Runs are only ever compared within one (group, condition, data) combination."""

RUN_TABLE_COLUMNS: dict[str, str] = {
    "group": "string",
    "condition": "string",
    "selection": "string",
    "experiment": "string",
    "data": "string",
    "task": "string",
    "category": "string",
    "agent": "string",
    "seed": "int64",
    "status": "string",
    "finished": "bool",
    "scored": "bool",
    "failed": "bool",
    "valid": "bool",
    "headline_key": "string",
    "headline_value": "float64",
    "percentile": "float64",
    "medal": "string",
    "above_median": "bool",
    "isolated": "boolean",
    "sandbox": "string",
    "network": "string",
    "reason": "string",
    "time_limit_s": "float64",
    "agent_seconds": "float64",
    "validation_requests": "int64",
    "llm_total_tokens": "float64",
    "llm_cost_usd": "float64",
    "path": "string",
}


def category_of(task_id: str) -> str:
    """The published category of a task (segmentation, detection, ...)."""
    return CATEGORY_OF_TYPE[all_tasks()[task_id].task_type]


def _llm_number(llm: dict[str, object], *keys: str) -> float:
    for key in keys:
        value = llm.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return float("nan")


def _llm_tokens(llm: dict[str, object]) -> float:
    """Total tokens: the recorded total, else the sum of input and output (prompt and
    completion) tokens; NaN when the run recorded none.
    """
    total = _llm_number(llm, "total_tokens", "tokens")
    if not np.isnan(total):
        return total
    pairs = (
        ("tokens_in", "tokens_out"),
        ("input_tokens", "output_tokens"),
        ("prompt_tokens", "completion_tokens"),
    )
    for pair in pairs:
        parts = [_llm_number(llm, key) for key in pair]
        if not any(np.isnan(p) for p in parts):
            return float(sum(parts))
    return float("nan")


def run_table(results: Sequence[RunResult]) -> pd.DataFrame:
    """One row per run with the columns of ``RUN_TABLE_COLUMNS`` (empty frame when no runs)."""
    rows = [
        {
            "group": r.group,
            "condition": r.condition,
            "selection": r.selection,
            "experiment": r.experiment,
            "data": r.data,
            "task": r.task,
            "category": category_of(r.task),
            "agent": r.agent,
            "seed": r.seed,
            "status": r.status,
            "finished": r.finished,
            "scored": r.scored,
            "failed": r.failed,
            "valid": r.valid,
            "headline_key": r.headline_key,
            "headline_value": np.nan if r.headline_value is None else r.headline_value,
            "percentile": r.percentile,
            "medal": r.medal,
            "above_median": r.above_median,
            "isolated": r.isolated,
            "sandbox": r.sandbox_kind,
            "network": r.network,
            "reason": r.reason,
            "time_limit_s": np.nan if r.time_limit_s is None else r.time_limit_s,
            "agent_seconds": np.nan if r.agent_seconds is None else r.agent_seconds,
            "validation_requests": r.validation_requests,
            "llm_total_tokens": _llm_tokens(r.llm),
            "llm_cost_usd": _llm_number(r.llm, "cost_usd", "cost"),
            "path": str(r.path),
        }
        for r in results
    ]
    frame = pd.DataFrame(rows, columns=list(RUN_TABLE_COLUMNS))
    return frame.astype(RUN_TABLE_COLUMNS)


def write_run_table(frame: pd.DataFrame, path: Path) -> None:
    """Write the run-table; the format follows the suffix: .csv, .json or .parquet.

    Raises:
        RexmleError: unknown suffix, or .parquet without pyarrow installed.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".json", ".parquet"):
        msg = f"run-table file {path}: use a .csv, .json or .parquet name"
        raise RexmleError(msg)
    path.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".csv":
        frame.to_csv(path, index=False)
    elif suffix == ".json":
        frame.to_json(path, orient="records", indent=2)
    else:
        try:
            import pyarrow  # noqa: F401
        except ImportError as err:
            msg = f"writing {path} needs pyarrow (pip install pyarrow), or use .csv / .json"
            raise RexmleError(msg) from err
        frame.to_parquet(path, index=False)
