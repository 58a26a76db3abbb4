"""Plots as standalone SVG: hover tooltips (``<title>``) in a browser, vector files for papers.

No JavaScript and no network: every plot is one ``<svg>`` string sized from its labels, so
nothing is cut off. Colours come from :func:`agent_colours` (distinct for any number of agents).
"""

from __future__ import annotations

import colorsys
import html
import math
from collections.abc import Sequence

import pandas as pd

from rexmle.report.tables import task_order

# Kelly-like high-contrast colours first; beyond them, evenly spaced hues (never repeated).
_BASE_COLOURS = (
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#bcbd22", "#393b79", "#637939", "#843c39",
)  # fmt: skip
_CHAR_PX = 7.0
_FONT = "font-family='system-ui,sans-serif' font-size='12'"


def agent_colours(agents: Sequence[str]) -> dict[str, str]:
    """A distinct colour per agent, in the order given (no colour is used twice)."""
    colours: dict[str, str] = {}
    extra = max(0, len(agents) - len(_BASE_COLOURS))
    for i, agent in enumerate(agents):
        if i < len(_BASE_COLOURS):
            colours[agent] = _BASE_COLOURS[i]
            continue
        hue = (i - len(_BASE_COLOURS)) / max(1, extra)
        r, g, b = colorsys.hls_to_rgb(hue, 0.45, 0.65)
        colours[agent] = f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}"
    return colours


def _text_px(text: str) -> float:
    return _CHAR_PX * len(text) + 6


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _viridis(fraction: float) -> str:
    """A perceptual dark-blue → yellow ramp (fraction in [0, 1])."""
    stops = [(68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37)]
    f = min(1.0, max(0.0, fraction)) * (len(stops) - 1)
    i = min(int(f), len(stops) - 2)
    t = f - i
    r, g, b = (round(a + (c - a) * t) for a, c in zip(stops[i], stops[i + 1], strict=True))
    return f"#{r:02x}{g:02x}{b:02x}"


def percentile_heatmap(per_task: pd.DataFrame, title: str) -> str:
    """Tasks × agents, cell = mean percentile (%) over scored seeds; empty where not run.

    ``per_task`` is one key's part of :func:`rexmle.report.tables.seed_statistics`.
    """
    agents = sorted(per_task["agent"].unique())
    tasks = task_order(list(per_task["task"].unique()))
    cell_w, cell_h = max(56.0, max(_text_px(a) for a in agents)), 22.0
    left = max(_text_px(t) for t in tasks) + 10
    top, right = 44.0, 20.0
    footer = "cell: mean percentile (%) against the human leaderboard; grey: not run"
    width = max(left + cell_w * len(agents) + right, _text_px(title) + 10, _text_px(footer))
    height = top + cell_h * len(tasks) + 40
    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{width:.0f}' height='{height:.0f}' "
        f"viewBox='0 0 {width:.0f} {height:.0f}' role='img' class='plot'>",
        f"<title>{_esc(title)}</title>",
        f"<text x='4' y='16' {_FONT} font-weight='bold'>{_esc(title)}</text>",
    ]
    for j, agent in enumerate(agents):
        x = left + cell_w * (j + 0.5)
        parts.append(f"<text x='{x:.1f}' y='36' text-anchor='middle' {_FONT}>{_esc(agent)}</text>")
    lookup = {(r.task, r.agent): r for r in per_task.itertuples(index=False)}
    for i, task in enumerate(tasks):
        y = top + cell_h * i
        parts.append(
            f"<text x='{left - 6:.1f}' y='{y + 15:.1f}' text-anchor='end' {_FONT}>{_esc(task)}</text>"
        )
        for j, agent in enumerate(agents):
            x = left + cell_w * j
            row = lookup.get((task, agent))
            if row is None:
                parts.append(
                    f"<rect x='{x:.1f}' y='{y:.1f}' width='{cell_w:.1f}' height='{cell_h:.1f}' "
                    f"fill='#f4f4f4' stroke='#fff'><title>{_esc(agent)} did not run {_esc(task)}"
                    "</title></rect>"
                )
                continue
            pct = 100 * float(row.percentile_mean)
            std = float(row.percentile_std)
            tip = (
                f"{agent} on {task}: mean percentile {pct:.1f}% over {row.seeds} seed(s), "
                f"{row.valid} valid; std {'n/a' if math.isnan(std) else f'{100 * std:.1f}%'}"
            )
            ink = "#fff" if pct < 60 else "#000"
            parts.append(
                f"<g><title>{_esc(tip)}</title><rect x='{x:.1f}' y='{y:.1f}' "
                f"width='{cell_w:.1f}' height='{cell_h:.1f}' fill='{_viridis(pct / 100)}' "
                f"stroke='#fff'/><text x='{x + cell_w / 2:.1f}' y='{y + 15:.1f}' "
                f"text-anchor='middle' fill='{ink}' {_FONT}>{pct:.0f}</text></g>"
            )
    parts.append(f"<text x='4' y='{height - 12:.0f}' {_FONT} fill='#555'>{footer}</text></svg>")
    return "".join(parts)


def mean_percentile_bars(per_agent: pd.DataFrame, title: str) -> str:
    """Mean percentile per agent with its 95 % hierarchical bootstrap interval as a whisker."""
    agents = list(per_agent["agent"])
    colours = agent_colours(agents)
    bar_w = max(60.0, max(_text_px(a) for a in agents))
    left, top, plot_h = 50.0, 40.0, 200.0
    footer = "mean percentile (%), whisker: 95% hierarchical bootstrap interval (tasks, then seeds)"
    width = max(left + bar_w * len(agents) + 20, _text_px(title) + 10, _text_px(footer))
    height = top + plot_h + 50
    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{width:.0f}' height='{height:.0f}' "
        f"viewBox='0 0 {width:.0f} {height:.0f}' role='img' class='plot'>",
        f"<title>{_esc(title)}</title>",
        f"<text x='4' y='16' {_FONT} font-weight='bold'>{_esc(title)}</text>",
    ]
    for tick in (0, 25, 50, 75, 100):
        y = top + plot_h * (1 - tick / 100)
        parts.append(
            f"<line x1='{left}' x2='{width - 10:.0f}' y1='{y:.1f}' y2='{y:.1f}' stroke='#ddd'/>"
            f"<text x='{left - 4}' y='{y + 4:.1f}' text-anchor='end' {_FONT}>{tick}</text>"
        )

    def y_of(value: float) -> float:
        return top + plot_h * (1 - value)

    for j, row in enumerate(per_agent.itertuples(index=False)):
        x = left + bar_w * j + 8
        mean, low, high = float(row.mean_percentile), float(row.ci95_low), float(row.ci95_high)
        sem = float(row.sem)
        tip = (
            f"{row.agent}: mean percentile {100 * mean:.2f}% over {row.tasks} task(s), "
            f"{row.runs} run(s); 95% CI [{100 * low:.2f}, {100 * high:.2f}]%; SEM "
            f"{'n/a' if math.isnan(sem) else f'{100 * sem:.2f}%'}"
        )
        cx = x + (bar_w - 16) / 2
        parts.append(
            f"<g><title>{_esc(tip)}</title><rect x='{x:.1f}' y='{y_of(mean):.1f}' "
            f"width='{bar_w - 16:.1f}' height='{plot_h * mean:.1f}' fill='{colours[row.agent]}'/>"
            f"<line x1='{cx:.1f}' x2='{cx:.1f}' y1='{y_of(high):.1f}' y2='{y_of(low):.1f}' "
            f"stroke='#000'/><line x1='{cx - 6:.1f}' x2='{cx + 6:.1f}' y1='{y_of(high):.1f}' "
            f"y2='{y_of(high):.1f}' stroke='#000'/><line x1='{cx - 6:.1f}' x2='{cx + 6:.1f}' "
            f"y1='{y_of(low):.1f}' y2='{y_of(low):.1f}' stroke='#000'/></g>"
            f"<text x='{cx:.1f}' y='{top + plot_h + 16:.1f}' text-anchor='middle' {_FONT}>"
            f"{_esc(row.agent)}</text>"
        )
    parts.append(f"<text x='4' y='{height - 8:.0f}' {_FONT} fill='#555'>{footer}</text></svg>")
    return "".join(parts)


def gap_to_human(per_task: pd.DataFrame, human: dict[str, float], title: str) -> str:
    """Per task and agent: mean headline over scored seeds (FAIL = 0) / best human value."""
    agents = sorted(per_task["agent"].unique())
    colours = agent_colours(agents)
    tasks = task_order(list(per_task["task"].unique()))
    bar_h = 12.0
    group_h = bar_h * len(agents) + 8
    left = max(_text_px(t) for t in tasks) + 10
    top, plot_w = 60.0, 360.0
    legend_w = sum(_text_px(a) + 24 for a in agents)
    width = max(left + plot_w + 30, _text_px(title) + 10, legend_w + 10)
    height = top + group_h * len(tasks) + 30
    scale = plot_w / 1.2
    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{width:.0f}' height='{height:.0f}' "
        f"viewBox='0 0 {width:.0f} {height:.0f}' role='img' class='plot'>",
        f"<title>{_esc(title)}</title>",
        f"<text x='4' y='16' {_FONT} font-weight='bold'>{_esc(title)}</text>",
    ]
    x_legend = 4.0
    for agent in agents:
        parts.append(
            f"<rect x='{x_legend:.1f}' y='26' width='10' height='10' fill='{colours[agent]}'/>"
            f"<text x='{x_legend + 14:.1f}' y='35' {_FONT}>{_esc(agent)}</text>"
        )
        x_legend += _text_px(agent) + 24
    lookup = {(r.task, r.agent): r for r in per_task.itertuples(index=False)}
    for i, task in enumerate(tasks):
        y0 = top + group_h * i
        parts.append(
            f"<text x='{left - 6:.1f}' y='{y0 + group_h / 2 + 4:.1f}' text-anchor='end' "
            f"{_FONT}>{_esc(task)}</text>"
        )
        for j, agent in enumerate(agents):
            row = lookup.get((task, agent))
            if row is None or human.get(task, 0.0) == 0.0:
                continue
            value = 0.0 if math.isnan(row.headline_with_fail) else float(row.headline_with_fail)
            ratio = value / human[task]
            tip = f"{agent} on {task}: {value:.4g} / best human {human[task]:.4g} = {ratio:.3f}"
            parts.append(
                f"<rect x='{left:.1f}' y='{y0 + bar_h * j:.1f}' "
                f"width='{scale * min(max(ratio, 0.0), 1.2):.1f}' height='{bar_h - 1:.1f}' "
                f"fill='{colours[agent]}'><title>{_esc(tip)}</title></rect>"
            )
    x1 = left + scale
    parts.append(
        f"<line x1='{x1:.1f}' x2='{x1:.1f}' y1='{top - 4}' y2='{height - 26:.0f}' "
        "stroke='#000' stroke-dasharray='4 3'/>"
        f"<text x='{x1:.1f}' y='{height - 12:.0f}' text-anchor='middle' {_FONT}>best human = 1"
        "</text></svg>"
    )
    return "".join(parts)
