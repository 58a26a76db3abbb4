"""Write a report as Markdown, JSON and a self-contained HTML page with plots (PNG, base64)."""

from __future__ import annotations

import base64
import html
import io
import json
from collections.abc import Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from rexmle import __version__
from rexmle.report.collect import RunResult
from rexmle.report.tables import leaderboard_table, seed_statistics, task_order


def _markdown_table(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "_no runs_\n"
    header = "| " + " | ".join(str(c) for c in frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    body = [
        "| " + " | ".join(_cell(v) for v in row) + " |" for row in frame.itertuples(index=False)
    ]
    return "\n".join([header, rule, *body]) + "\n"


def _cell(value: object) -> str:
    if isinstance(value, float):
        return "" if np.isnan(value) else f"{value:.4g}"
    return str(value)


def render_markdown(results: Sequence[RunResult]) -> str:
    """The report as Markdown: leaderboard table, per-agent and per-task seed statistics."""
    board = leaderboard_table(results)
    per_task, per_agent = seed_statistics(results)
    failures = [r for r in results if not r.valid]
    parts = [
        "# ReX-MLE report\n",
        f"{len(results)} runs; rexmle {__version__}; "
        f"{datetime.now(UTC).isoformat(timespec='seconds')}\n",
        "## Leaderboard (headline metric, percentile rank against the human leaderboard)\n",
        _markdown_table(board),
        "## Agents (mean percentile over tasks, 95 % bootstrap CI over tasks)\n",
        _markdown_table(per_agent),
        "## Seeds per agent and task\n",
        _markdown_table(per_task),
    ]
    if failures:
        parts.append("## Failed runs\n")
        rows = [
            {
                "agent": r.agent,
                "task": r.task,
                "seed": r.seed,
                "status": r.status,
                "reason": (r.reasons[0] if r.reasons else "")[:160],
            }
            for r in failures
        ]
        parts.append(_markdown_table(pd.DataFrame(rows)))
    return "\n".join(parts)


def _png(figure: object) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")  # type: ignore[attr-defined]
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _plots(results: Sequence[RunResult]) -> list[tuple[str, str]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    agents = sorted({r.agent for r in results})
    tasks = task_order([r.task for r in results])
    if not agents or not tasks:
        return []
    grid = np.zeros((len(tasks), len(agents)))
    for i, task in enumerate(tasks):
        for j, agent in enumerate(agents):
            runs = [r.percentile for r in results if r.task == task and r.agent == agent]
            grid[i, j] = 100 * float(np.mean(runs)) if runs else np.nan
    figures = []
    fig, ax = plt.subplots(figsize=(1.6 + 1.3 * len(agents), 0.35 * len(tasks) + 1.5))
    image = ax.imshow(grid, cmap="viridis", vmin=0, vmax=100, aspect="auto")
    ax.set_xticks(range(len(agents)), agents, rotation=30, ha="right")
    ax.set_yticks(range(len(tasks)), tasks)
    for i in range(len(tasks)):
        for j in range(len(agents)):
            if not np.isnan(grid[i, j]):
                colour = "white" if grid[i, j] < 50 else "black"
                ax.text(
                    j, i, f"{grid[i, j]:.0f}", ha="center", va="center", color=colour, fontsize=8
                )
    fig.colorbar(image, ax=ax, label="percentile (%)")
    ax.set_title("Percentile rank against the human leaderboard")
    figures.append(("Percentile per task and agent", _png(fig)))
    plt.close(fig)

    figures.append(
        ("Headline value relative to the best human value", _gap_plot(results, tasks, agents))
    )

    _, per_agent = seed_statistics(results)
    fig, ax = plt.subplots(figsize=(1.5 + 1.2 * len(agents), 3.2))
    means = 100 * per_agent["mean_percentile"].to_numpy()
    low = means - 100 * per_agent["ci95_low"].to_numpy()
    high = 100 * per_agent["ci95_high"].to_numpy() - means
    ax.bar(per_agent["agent"], means, yerr=[low, high], capsize=4, color="#4c72b0")
    ax.set_ylabel("mean percentile (%)")
    ax.set_ylim(0, 100)
    ax.set_title("Mean percentile over tasks (95 % bootstrap CI)")
    figures.append(("Mean percentile per agent", _png(fig)))
    plt.close(fig)
    return figures


def _gap_plot(results: Sequence[RunResult], tasks: list[str], agents: list[str]) -> str:
    """Grouped bars: mean headline value over valid seeds / best human value, per task."""
    import matplotlib.pyplot as plt

    from rexmle.challenges.registry import all_tasks
    from rexmle.report.tables import human_best

    specs = all_tasks()
    fig, ax = plt.subplots(figsize=(7.5, 0.32 * len(tasks) * max(1, len(agents)) / 1.5 + 1.5))
    height = 0.8 / len(agents)
    for j, agent in enumerate(agents):
        ratios = []
        for task in tasks:
            values = [
                r.headline_value
                for r in results
                if r.task == task and r.agent == agent and r.headline_value is not None
            ]
            best = human_best(task)
            if not values or best == 0:
                ratios.append(0.0)
            elif specs[task].headline.higher_is_better:
                ratios.append(float(np.mean(values)) / best)
            else:
                ratios.append(best / max(float(np.mean(values)), 1e-12))
        positions = np.arange(len(tasks)) + j * height
        ax.barh(positions, ratios, height=height, label=agent)
    ax.axvline(1.0, color="black", linestyle="--", linewidth=1, label="best human")
    ax.set_yticks(np.arange(len(tasks)) + 0.4 - height / 2, tasks)
    ax.invert_yaxis()
    ax.set_xlabel("headline value / best human value (FAIL = 0)")
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title("Gap to the best human team")
    encoded = _png(fig)
    plt.close(fig)
    return encoded


def render_html(results: Sequence[RunResult]) -> str:
    """A self-contained HTML page: tables and embedded plots."""
    board = leaderboard_table(results)
    per_task, per_agent = seed_statistics(results)
    sections = [
        "<h2>Leaderboard</h2>",
        board.to_html(index=False, escape=True, border=0, classes="table"),
        "<h2>Agents</h2>",
        per_agent.to_html(index=False, escape=True, border=0, float_format="%.4f"),
    ]
    for title, png in _plots(results):
        sections.append(f"<h2>{html.escape(title)}</h2>")
        sections.append(f'<img alt="{html.escape(title)}" src="data:image/png;base64,{png}">')
    sections += [
        "<h2>Seeds per agent and task</h2>",
        per_task.to_html(index=False, escape=True, border=0, float_format="%.4f"),
    ]
    style = (
        "body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px}"
        "table{border-collapse:collapse;font-size:13px}td,th{padding:3px 8px;"
        "border-bottom:1px solid #ddd;text-align:right}th{background:#f3f3f3}"
    )
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>ReX-MLE report</title>"
        f"<style>{style}</style></head><body><h1>ReX-MLE report</h1>"
        f"<p>{len(results)} runs · rexmle {__version__} · {stamp}</p>"
        + "\n".join(sections)
        + "</body></html>\n"
    )


def write_report(
    results: Sequence[RunResult],
    *,
    markdown: Path | None = None,
    html_path: Path | None = None,
    json_path: Path | None = None,
) -> None:
    """Write the requested report files (parents created)."""
    for path, text in (
        (markdown, lambda: render_markdown(results)),
        (html_path, lambda: render_html(results)),
        (json_path, lambda: _json(results)),
    ):
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text(), encoding="utf-8")


def _json(results: Sequence[RunResult]) -> str:
    per_task, per_agent = seed_statistics(results)
    payload = {
        "rexmle_version": __version__,
        "runs": [{**asdict(r), "path": str(r.path)} for r in results],
        "per_task": json.loads(per_task.to_json(orient="records")),
        "per_agent": json.loads(per_agent.to_json(orient="records")),
        "leaderboard": json.loads(leaderboard_table(results).to_json(orient="records")),
    }
    return json.dumps(payload, indent=2) + "\n"
