"""Tables of a report, all computed from the run-table (:mod:`rexmle.report.runtable`).

Published form (spec/paper-results.md): one row per task, grouped by category (segmentation,
detection, classification, image quality & enhancement; tasks alphabetical within a category), per
agent the headline value and the percentile rank, the best human value, and an "overall mean
percentile" row. Rules:

- Runs are compared only within one (group, condition, data) combination: one table each; two
  groups are never pooled.
- Only scored runs count (finished, not ``infra_error``; see :mod:`rexmle.report.collect`).
- A cell whose agent has scored runs but no valid submission shows FAIL (percentile 0); a task
  an agent never ran is empty, not FAIL, and is left out of its overall mean.
- With several seeds, the value is the mean over valid seeds and the percentile the mean over
  scored seeds (a failed seed counts 0).
- A value from a run in a non-isolated sandbox carries ``NOT_ISOLATED_MARK``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd

from rexmle.errors import RexmleError
from rexmle.records.results import RunResult
from rexmle.report.runtable import (
    CATEGORY_OF_TYPE,
    CATEGORY_ORDER,
    TABLE_KEY,
    run_table,
)
from rexmle.report.stats import (
    BOOTSTRAP_METHOD,
    hierarchical_bootstrap,
    sample_std,
    sem_over_seeds,
)
from rexmle.tasks.leaderboard import leaderboard_bytes, leaderboard_source, load_leaderboard
from rexmle.tasks.registry import all_tasks

FAIL = "FAIL"
NOT_RUN = ""
NOT_ISOLATED_MARK = "†"
TableKey = tuple[str, str, str]
WIDE_AGENTS = 4
"""Above this many agents a leaderboard is shown with agents as rows."""
SUMMARY_ROWS = ("Tasks run", "Overall mean percentile")


def human_best(task_id: str) -> float:
    """Best human leaderboard value of the task's headline metric."""
    spec = all_tasks()[task_id]
    column = load_leaderboard(task_id).column(spec.headline.key)
    return float(column.max() if spec.headline.higher_is_better else column.min())


def task_order(task_ids: Sequence[str]) -> list[str]:
    """Tasks in the published row order: by category, then alphabetically."""
    specs = all_tasks()

    def key(task_id: str) -> tuple[int, str]:
        category = CATEGORY_OF_TYPE[specs[task_id].task_type]
        return CATEGORY_ORDER.index(category), task_id

    return sorted(set(task_ids), key=key)


def key_label(key: TableKey) -> str:
    """``group``, with ``condition`` and ``[MINI data]`` when they apply."""
    group, condition, data = key
    label = group if not condition else f"{group} · condition {condition}"
    if data == "mini":
        label += " · MINI data (synthetic)"
    elif data == "unknown":
        label += " · data mode not recorded"
    return label


def split_by_key(frame: pd.DataFrame) -> Iterator[tuple[TableKey, pd.DataFrame]]:
    """The run-table split into its (group, condition, data) parts, in sorted order."""
    if frame.empty:
        return
    for key, part in frame.groupby(list(TABLE_KEY), sort=True):
        yield (str(key[0]), str(key[1]), str(key[2])), part


def _frame(results: Sequence[RunResult] | pd.DataFrame) -> pd.DataFrame:
    return results if isinstance(results, pd.DataFrame) else run_table(results)


def _one_key(frame: pd.DataFrame) -> pd.DataFrame:
    keys = {tuple(k) for k in frame[list(TABLE_KEY)].itertuples(index=False)}
    if len(keys) > 1:
        listed = "; ".join(key_label(k) for k in sorted(keys))  # type: ignore[arg-type]
        msg = f"runs of several groups/conditions/data modes cannot share one table: {listed}"
        raise RexmleError(msg)
    return frame


def leaderboard_table(
    results: Sequence[RunResult] | pd.DataFrame, *, tasks: Sequence[str] | None = None
) -> pd.DataFrame:
    """The published-form table of ONE (group, condition, data); values as display strings.

    Columns: task, category, metric, then ``<agent> value`` and ``<agent> rank`` per agent, then
    ``human`` (best human value) and ``human N`` (leaderboard rows). Rank cells are percentiles
    in percent with no decimals, or "--" for FAIL; both cells are empty where the agent never
    ran the task. The last two rows: ``Tasks run`` (per agent) and ``Overall mean percentile``
    (mean over the tasks the agent ran).

    Raises:
        RexmleError: the runs span several groups, conditions or data modes.
    """
    frame = _one_key(_frame(results))
    scored = frame[frame["scored"]]
    agents = sorted(scored["agent"].unique())
    task_ids = task_order(tasks if tasks is not None else list(frame["task"].unique()))
    specs = all_tasks()
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
            runs = scored[(scored["task"] == task_id) & (scored["agent"] == agent)]
            mark = NOT_ISOLATED_MARK if (runs["isolated"] == False).any() else ""  # noqa: E712
            valid = runs["headline_value"].dropna()
            if runs.empty:
                row[f"{agent} value"], row[f"{agent} rank"] = NOT_RUN, NOT_RUN
                continue
            percentile = float(runs["percentile"].mean())
            overall[agent].append(percentile)
            if valid.empty:
                row[f"{agent} value"], row[f"{agent} rank"] = FAIL + mark, "--"
            else:
                row[f"{agent} value"] = f"{valid.mean():.2f}{mark}"
                row[f"{agent} rank"] = f"{100 * percentile:.0f}%"
        row["human"] = f"{human_best(task_id):.2f}"
        row["human N"] = str(load_leaderboard(task_id).n_rows)
        rows.append(row)
    counts: dict[str, object] = {"task": "Tasks run", "category": "", "metric": ""}
    summary: dict[str, object] = {"task": "Overall mean percentile", "category": "", "metric": ""}
    for agent in agents:
        counts[f"{agent} value"], counts[f"{agent} rank"] = "", str(len(overall[agent]))
        summary[f"{agent} value"] = ""
        summary[f"{agent} rank"] = (
            f"{100 * np.mean(overall[agent]):.2f}%" if overall[agent] else "--"
        )
    counts["human"] = counts["human N"] = summary["human"] = summary["human N"] = ""
    rows += [counts, summary]
    return pd.DataFrame(rows)


def agents_of_board(board: pd.DataFrame) -> list[str]:
    """The agents of a published-form table (:func:`leaderboard_table`), in column order."""
    return [str(c)[: -len(" value")] for c in board.columns if str(c).endswith(" value")]


def agent_rows(board: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """A published-form table turned round: per task category, one row per agent.

    Columns: ``agent``, then per task of the category a cell ``<value> · <rank>`` (empty where
    the agent never ran it, ``FAIL`` where it failed), then ``tasks run`` and ``overall mean
    percentile`` (over every category, as in the published table). The last row is the best
    human value per task.
    """
    agents = agents_of_board(board)
    tasks = board[~board["task"].isin(SUMMARY_ROWS)]
    counts = board[board["task"] == SUMMARY_ROWS[0]]
    overall = board[board["task"] == SUMMARY_ROWS[1]]
    parts = []
    for category in CATEGORY_ORDER:
        rows_of = tasks[tasks["category"] == category]
        if rows_of.empty:
            continue
        rows = []
        for agent in agents:
            row: dict[str, object] = {"agent": agent}
            for cells in rows_of.to_dict("records"):
                value, rank = str(cells[f"{agent} value"]), str(cells[f"{agent} rank"])
                row[str(cells["task"])] = (
                    "" if not value else value if rank in ("", "--") else f"{value} · {rank}"
                )
            row["tasks run"] = str(counts[f"{agent} rank"].iloc[0]) if not counts.empty else ""
            row["overall mean percentile"] = (
                str(overall[f"{agent} rank"].iloc[0]) if not overall.empty else ""
            )
            rows.append(row)
        human: dict[str, object] = {"agent": "best human"}
        for cells in rows_of.to_dict("records"):
            human[str(cells["task"])] = str(cells["human"])
        human["tasks run"] = human["overall mean percentile"] = ""
        rows.append(human)
        parts.append((category, pd.DataFrame(rows)))
    return parts


def leaderboard_tables(
    results: Sequence[RunResult] | pd.DataFrame,
) -> list[tuple[TableKey, pd.DataFrame]]:
    """One published-form table per (group, condition, data) that has scored runs."""
    frame = _frame(results)
    return [
        (key, leaderboard_table(part)) for key, part in split_by_key(frame) if part["scored"].any()
    ]


def seed_statistics(
    results: Sequence[RunResult] | pd.DataFrame, *, n_bootstrap: int = 2000, seed: int = 0
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per (key, agent, task) and per (key, agent) statistics of the scored runs.

    Per task: seeds, valid seeds, percentile mean / sample std (ddof 1; NaN = n/a for one seed) /
    min / max, headline mean over valid seeds and its std (NaN for fewer than two), the headline
    mean over scored seeds with FAIL counted 0 (``headline_with_fail``), medals.
    Per agent: tasks, runs, valid rate, mean percentile (mean over tasks of the mean over seeds),
    SEM over seeds (:func:`rexmle.report.stats.sem_over_seeds`) and a 95 % hierarchical bootstrap
    interval (:func:`rexmle.report.stats.hierarchical_bootstrap`, ``n_bootstrap`` draws, seed
    ``seed``), medals, LLM tokens and cost summed over the runs that recorded them (NaN when
    none did), and the bootstrap method in words.
    """
    frame = _frame(results)
    scored = frame[frame["scored"]]
    if scored.empty:
        return pd.DataFrame(), pd.DataFrame()
    per_task = []
    per_agent = []
    method = BOOTSTRAP_METHOD.format(n=n_bootstrap, seed=seed)
    for (group, condition, data, agent), part in scored.groupby([*TABLE_KEY, "agent"], sort=True):
        by_task: dict[str, dict[int, float]] = {}
        for task, runs in sorted(part.groupby("task"), key=lambda item: task_order([item[0]])):
            percentiles = runs["percentile"].astype(float).tolist()
            values = runs["headline_value"].dropna().astype(float).tolist()
            by_task[str(task)] = dict(zip(runs["seed"].astype(int), percentiles, strict=True))
            per_task.append(
                {
                    "group": group,
                    "condition": condition,
                    "data": data,
                    "agent": agent,
                    "task": task,
                    "seeds": len(runs),
                    "valid": int(runs["valid"].sum()),
                    "percentile_mean": float(np.mean(percentiles)),
                    "percentile_std": sample_std(percentiles),
                    "percentile_min": float(np.min(percentiles)),
                    "percentile_max": float(np.max(percentiles)),
                    "headline_mean": float(np.mean(values)) if values else float("nan"),
                    "headline_std": sample_std(values),
                    "headline_with_fail": float(runs["headline_value"].fillna(0.0).mean()),
                    "medals": int(runs["medal"].notna().sum()),
                }
            )
        task_seed_values = [list(seeds.values()) for seeds in by_task.values()]
        low, high = hierarchical_bootstrap(task_seed_values, n_bootstrap=n_bootstrap, seed=seed)
        per_agent.append(
            {
                "group": group,
                "condition": condition,
                "data": data,
                "agent": agent,
                "tasks": len(by_task),
                "runs": len(part),
                "valid_rate": float(part["valid"].mean()),
                "mean_percentile": float(np.mean([np.mean(v) for v in task_seed_values])),
                "sem": sem_over_seeds(by_task),
                "ci95_low": low,
                "ci95_high": high,
                "medals": int(part["medal"].notna().sum()),
                "llm_tokens": float(part["llm_total_tokens"].sum(min_count=1)),
                "llm_cost_usd": float(part["llm_cost_usd"].sum(min_count=1)),
                "method": method,
            }
        )
    return pd.DataFrame(per_task), pd.DataFrame(per_agent)


def performance_overview(results: Sequence[RunResult] | pd.DataFrame) -> pd.DataFrame:
    """Mean headline value per task category (FAIL counts 0), per (key, agent).

    Definition: per task, the mean over scored seeds of the headline value with a failed seed
    counted 0; per category, the mean of those over the category's tasks the agent ran. Every
    headline metric is higher-is-better; a category holding a lower-is-better headline would be
    NaN (a FAIL cannot count 0 there).
    Columns: group, condition, data, agent, then one per category present, then ``tasks``.
    """
    frame = _frame(results)
    scored = frame[frame["scored"]]
    specs = all_tasks()
    rows = []
    for (group, condition, data, agent), part in scored.groupby([*TABLE_KEY, "agent"], sort=True):
        row: dict[str, object] = {
            "group": group,
            "condition": condition,
            "data": data,
            "agent": agent,
        }
        for category in CATEGORY_ORDER:
            tasks = part[part["category"] == category]
            if tasks.empty:
                continue
            if any(not specs[t].headline.higher_is_better for t in tasks["task"].unique()):
                row[category] = float("nan")
                continue
            per_task = tasks["headline_value"].fillna(0.0).groupby(tasks["task"]).mean()
            row[category] = float(per_task.mean())
        row["tasks"] = int(part["task"].nunique())
        rows.append(row)
    return pd.DataFrame(rows)


def leaderboard_sources(task_ids: Sequence[str]) -> pd.DataFrame:
    """Per task: the human leaderboard file, its SHA-256 (first 12 digits) and its N rows."""
    rows = []
    for task_id in task_order(task_ids):
        digest = hashlib.sha256(leaderboard_bytes(task_id)).hexdigest()[:12]
        rows.append(
            {
                "task": task_id,
                "N": load_leaderboard(task_id).n_rows,
                "source": leaderboard_source(task_id),
                "sha256": digest,
                "metrics": ", ".join(load_leaderboard(task_id).metrics),
            }
        )
    return pd.DataFrame(rows)


RUN_LIST_COLUMNS = [
    "group",
    "condition",
    "data",
    "agent",
    "task",
    "seed",
    "status",
    "reason",
    "path",
]


def failures_table(results: Sequence[RunResult] | pd.DataFrame) -> pd.DataFrame:
    """Every FAIL (a scored run without a valid graded submission): status, first reason, path."""
    frame = _frame(results)
    return frame[frame["failed"]][RUN_LIST_COLUMNS].reset_index(drop=True)


def unscored_table(results: Sequence[RunResult] | pd.DataFrame) -> pd.DataFrame:
    """Runs that count neither for nor against an agent: unfinished (``running``,
    ``cancelled``) and harness errors (``infra_error``), with their reason and path.
    """
    frame = _frame(results)
    return frame[~frame["scored"]][RUN_LIST_COLUMNS].reset_index(drop=True)
