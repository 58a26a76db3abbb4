"""Tables of a report: the published-form leaderboard and per-seed statistics.

Published form (spec/paper-results.md): one row per task, grouped by category (segmentation,
detection, classification, image quality & enhancement; tasks alphabetical within a category), per
agent the headline value and the percentile rank, the best human value, and an "overall mean
percentile" row. A task where an agent has no valid submission shows FAIL and counts as percentile 0.
With several seeds, the value is the mean over valid seeds and the percentile the mean over all
seeds (a failed seed counts 0).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from rexmle.challenges.registry import all_tasks
from rexmle.ranking import load_leaderboard
from rexmle.report.collect import RunResult

CATEGORY_OF_TYPE = {
    "segmentation": "segmentation",
    "detection": "detection",
    "classification": "classification",
    "regression": "image quality & enhancement",
    "enhancement": "image quality & enhancement",
}
CATEGORY_ORDER = ("segmentation", "detection", "classification", "image quality & enhancement")
FAIL = "FAIL"


def human_best(task_id: str) -> float:
    """Best human leaderboard value of the task's headline metric."""
    spec = all_tasks()[task_id]
    column = load_leaderboard(task_id).rows[spec.headline.key].astype(float)
    return float(column.max() if spec.headline.higher_is_better else column.min())


def task_order(task_ids: Sequence[str]) -> list[str]:
    """Tasks in the published row order: by category, then alphabetically."""
    specs = all_tasks()

    def key(task_id: str) -> tuple[int, str]:
        category = CATEGORY_OF_TYPE[specs[task_id].task_type]
        return CATEGORY_ORDER.index(category), task_id

    return sorted(set(task_ids), key=key)


def leaderboard_table(
    results: Sequence[RunResult], *, tasks: Sequence[str] | None = None
) -> pd.DataFrame:
    """The published-form table (one row per task + the overall row), values as display strings.

    Columns: task, category, metric, then ``<agent> value`` and ``<agent> rank`` per agent, then
    ``human``. Rank cells are percentiles in percent with no decimals, or "--" for FAIL.
    """
    specs = all_tasks()
    agents = sorted({r.agent for r in results})
    task_ids = task_order(tasks if tasks is not None else [r.task for r in results])
    rows = []
    overall: dict[str, list[float]] = {a: [] for a in agents}
    for task_id in task_ids:
        spec = specs[task_id]
        row: dict[str, object] = {
            "task": task_id,
            "category": CATEGORY_OF_TYPE[spec.task_type],
            "metric": spec.headline.key,
        }
        for agent in agents:
            runs = [r for r in results if r.task == task_id and r.agent == agent]
            valid = [r.headline_value for r in runs if r.headline_value is not None]
            percentile = float(np.mean([r.percentile for r in runs])) if runs else 0.0
            overall[agent].append(percentile)
            if not valid:
                row[f"{agent} value"], row[f"{agent} rank"] = FAIL, "--"
            else:
                row[f"{agent} value"] = f"{np.mean(valid):.2f}"
                row[f"{agent} rank"] = f"{100 * percentile:.0f}%"
        row["human"] = f"{human_best(task_id):.2f}"
        rows.append(row)
    summary: dict[str, object] = {"task": "Overall mean percentile", "category": "", "metric": ""}
    for agent in agents:
        summary[f"{agent} value"] = ""
        summary[f"{agent} rank"] = f"{100 * np.mean(overall[agent]):.2f}%" if task_ids else "--"
    summary["human"] = ""
    rows.append(summary)
    return pd.DataFrame(rows)


def seed_statistics(
    results: Sequence[RunResult], *, n_bootstrap: int = 2000, seed: int = 0
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per (agent, task) and per agent statistics over seeds.

    Per (agent, task): seeds, valid seeds, percentile mean / sample std (ddof 1; 0 for one seed) /
    min / max, headline mean and std over valid seeds, medals. Per agent: mean percentile over all
    (task, seed) runs and a 95 % percentile-bootstrap confidence interval of the mean over tasks
    (tasks resampled with replacement, ``n_bootstrap`` draws, numpy Generator seeded with ``seed``).
    """
    frame = pd.DataFrame(
        [
            {
                "agent": r.agent,
                "task": r.task,
                "seed": r.seed,
                "valid": r.valid,
                "status": r.status,
                "percentile": r.percentile,
                "headline": r.headline_value,
                "medal": r.medal,
            }
            for r in results
        ]
    )
    if frame.empty:
        return pd.DataFrame(), pd.DataFrame()
    per_task = []
    for (agent, task), group in frame.groupby(["agent", "task"], sort=True):
        values = group["headline"].dropna().astype(float)
        per_task.append(
            {
                "agent": agent,
                "task": task,
                "seeds": len(group),
                "valid": int(group["valid"].sum()),
                "percentile_mean": float(group["percentile"].mean()),
                "percentile_std": float(group["percentile"].std(ddof=1)) if len(group) > 1 else 0.0,
                "percentile_min": float(group["percentile"].min()),
                "percentile_max": float(group["percentile"].max()),
                "headline_mean": float(values.mean()) if len(values) else float("nan"),
                "headline_std": float(values.std(ddof=1)) if len(values) > 1 else 0.0,
                "medals": int(group["medal"].notna().sum()),
            }
        )
    per_task_frame = pd.DataFrame(per_task)
    rng = np.random.default_rng(seed)
    per_agent = []
    for agent, group in per_task_frame.groupby("agent", sort=True):
        task_means = group["percentile_mean"].to_numpy(dtype=float)
        draws = rng.choice(task_means, size=(n_bootstrap, len(task_means)), replace=True).mean(
            axis=1
        )
        runs = frame[frame["agent"] == agent]
        per_agent.append(
            {
                "agent": agent,
                "tasks": len(group),
                "runs": len(runs),
                "valid_rate": float(runs["valid"].mean()),
                "mean_percentile": float(task_means.mean()),
                "ci95_low": float(np.quantile(draws, 0.025)),
                "ci95_high": float(np.quantile(draws, 0.975)),
                "medals": int(group["medals"].sum()),
            }
        )
    return per_task_frame, pd.DataFrame(per_agent)
