"""Write a report as Markdown, JSON and a self-contained HTML page with SVG plots.

Every number comes from the run-table (:func:`rexmle.report.runtable.run_table`) through the
functions of :mod:`rexmle.report.tables`; this module only lays them out.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from rexmle import __version__
from rexmle.grading.report import MINI_BANNER
from rexmle.records.results import RunResult
from rexmle.report.htmlpage import cell_text, html_table, page
from rexmle.report.plots import gap_to_human, mean_percentile_bars, percentile_heatmap
from rexmle.report.runtable import run_table
from rexmle.report.tables import (
    NOT_ISOLATED_MARK,
    WIDE_AGENTS,
    TableKey,
    agent_rows,
    agents_of_board,
    failures_table,
    human_best,
    key_label,
    leaderboard_sources,
    leaderboard_tables,
    performance_overview,
    seed_statistics,
    unscored_table,
)


@dataclass(frozen=True)
class Banner:
    """A warning shown at the top of every report format."""

    kind: str
    """``mini``, ``warn`` or ``note``."""
    text: str


def banners(frame: pd.DataFrame) -> list[Banner]:
    """The warnings a reader must see first: mini data, no isolation, unscored runs."""
    found: list[Banner] = []
    n_mini = int((frame["data"] == "mini").sum())
    if n_mini:
        found.append(Banner("mini", MINI_BANNER.format(n=n_mini)))
    n_open = int((frame["isolated"] == False).sum())  # noqa: E712
    if n_open:
        found.append(
            Banner(
                "warn",
                f"NOT ISOLATED: {n_open} run(s) used a sandbox that does not isolate files or "
                f"network (local); their cells are marked {NOT_ISOLATED_MARK}.",
            )
        )
    unfinished = frame[~frame["finished"]]
    if not unfinished.empty:
        found.append(
            Banner(
                "note",
                f"{len(unfinished)} run(s) have not finished (running or cancelled); they are "
                "not scored and run again on the next `rexmle run`.",
            )
        )
    infra = frame[frame["status"] == "infra_error"]
    if not infra.empty:
        found.append(
            Banner(
                "note",
                f"{len(infra)} run(s) ended with a harness error (infra_error); they are not "
                "scored for or against their agent (`rexmle run --retry-failed` reruns them).",
            )
        )
    return found


def _markdown_table(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "_none_\n"
    header = "| " + " | ".join(str(c) for c in frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    columns = [str(c) for c in frame.columns]
    body = [
        "| "
        + " | ".join(
            cell_text(v, c).replace("|", "\\|").replace("\n", " ")
            for c, v in zip(columns, row, strict=True)
        )
        + " |"
        for row in frame.itertuples(index=False)
    ]
    return "\n".join([header, rule, *body]) + "\n"


def _key_parts(table: pd.DataFrame, key: TableKey) -> pd.DataFrame:
    if table.empty:
        return table
    group, condition, data = key
    mask = (table["group"] == group) & (table["condition"] == condition) & (table["data"] == data)
    return table[mask].drop(columns=["group", "condition", "data"])


@dataclass(frozen=True)
class Appendix:
    """Sections another module adds to a report, already rendered (the paper comparison)."""

    markdown: str = ""
    html: str = ""


@dataclass(frozen=True)
class ReportContent:
    """Everything a report shows, computed once from the run-table."""

    frame: pd.DataFrame
    boards: list[tuple[TableKey, pd.DataFrame]]
    per_task: pd.DataFrame
    per_agent: pd.DataFrame
    overview: pd.DataFrame
    sources: pd.DataFrame
    failures: pd.DataFrame
    """FAIL runs (scored, no valid submission) with class, reason and path."""
    unscored: pd.DataFrame
    """Unfinished runs and harness errors: listed, never scored."""
    banners: list[Banner]
    taxonomy: pd.DataFrame
    """Per agent: runs per failure class (:func:`rexmle.analysis.analyze.summary_per_agent`)."""
    geometry: pd.DataFrame
    """Per segmentation run examined: the geometry verdict."""
    appendix: Appendix = Appendix()
    """Sections added after the per-(group, condition, data) parts."""


def report_content(results: Sequence[RunResult], *, data_dir: Path | None = None) -> ReportContent:
    """Compute every table of the report from the runs.

    The failure analysis (:mod:`rexmle.analysis`) adds each failed run's class; geometry
    diagnostics run only with ``data_dir`` (they need the private gold).
    """
    from rexmle.analysis.analyze import analysis_table, analyze_runs, summary_per_agent

    frame = run_table(results)
    per_task, per_agent = seed_statistics(frame)
    analyses = analyze_runs(results, data_dir=data_dir)
    labels = {str(r.path): a.failure.label for r, a in zip(results, analyses, strict=True)}
    failures = failures_table(frame)
    failures.insert(len(failures.columns) - 2, "class", [labels[p] for p in failures["path"]])
    analysis = analysis_table(analyses)
    geometry = analysis[analysis["geometry"] != ""] if not analysis.empty else analysis
    return ReportContent(
        frame=frame,
        boards=leaderboard_tables(frame),
        per_task=per_task,
        per_agent=per_agent,
        overview=performance_overview(frame),
        sources=leaderboard_sources(list(frame["task"].unique())),
        failures=failures,
        unscored=unscored_table(frame),
        banners=banners(frame),
        taxonomy=summary_per_agent(analyses),
        geometry=geometry.drop(columns=["evidence"]) if not geometry.empty else geometry,
    )


def _agents_view(per_agent: pd.DataFrame) -> pd.DataFrame:
    return per_agent.drop(columns=["method"]) if not per_agent.empty else per_agent


def _method(per_agent: pd.DataFrame) -> str:
    return str(per_agent["method"].iloc[0]) if not per_agent.empty else ""


def _key_sections(
    content: ReportContent, key: TableKey, board: pd.DataFrame
) -> list[tuple[str, pd.DataFrame | str]]:
    """(heading, table or sentence) of one (group, condition, data) part, in report order."""
    return [
        ("Leaderboard (headline value, percentile rank against the human leaderboard)", board),
        (
            "Agents (mean percentile over the tasks run)",
            _agents_view(_key_parts(content.per_agent, key)),
        ),
        ("Interval", f"{_method(content.per_agent)}."),
        (
            "Performance overview (mean headline value per category, FAIL = 0)",
            _key_parts(content.overview, key),
        ),
        ("Seeds per agent and task", _key_parts(content.per_task, key)),
    ]


def _common_sections(content: ReportContent) -> list[tuple[str, pd.DataFrame]]:
    """(heading, table) of the sections after the per-key parts, in report order."""
    return [
        ("Human leaderboards (source and number of rows N)", content.sources),
        ("Failed runs", content.failures),
        ("Not scored: unfinished runs and harness errors", content.unscored),
        ("Failure analysis: runs per class and agent", content.taxonomy),
        ("Geometry diagnostics of segmentation runs", content.geometry),
    ]


def render_markdown(results: Sequence[RunResult], *, content: ReportContent | None = None) -> str:
    """The report as Markdown: banners, then per (group, condition, data) the published table,
    agent statistics, the performance overview and seed statistics; leaderboard sources; failed
    runs with reasons and classes; the failure analysis.
    """
    content = content or report_content(results)
    parts = [
        "# ReX-MLE report\n",
        f"{len(content.frame)} runs; rexmle {__version__}; "
        f"{datetime.now(UTC).isoformat(timespec='seconds')}\n",
    ]
    parts += [f"> **{b.text}**\n" for b in content.banners]
    for key, board in content.boards:
        parts.append(f"## {key_label(key)}\n")
        for heading, item in _key_sections(content, key, board):
            parts.append(f"### {heading}\n")
            parts.append(_markdown_table(item) if isinstance(item, pd.DataFrame) else f"{item}\n")
    if content.appendix.markdown:
        parts.append(content.appendix.markdown)
    for heading, table in _common_sections(content):
        shown = table.drop(columns=["path"]) if "path" in table.columns else table
        parts += [f"## {heading}\n", _markdown_table(shown)]
    return "\n".join(parts)


def html_banners(found: Sequence[Banner]) -> str:
    """Banner paragraphs for an HTML page."""
    return "".join(f"<p class='banner {b.kind}'>{html.escape(b.text)}</p>" for b in found)


def plots_for(content: ReportContent, key: TableKey) -> list[tuple[str, str]]:
    """(file stem, SVG) of one key's plots: heatmap, mean percentile bars, gap to human."""
    per_task = _key_parts(content.per_task, key)
    per_agent = _key_parts(content.per_agent, key)
    if per_task.empty:
        return []
    label = key_label(key)
    human = {t: human_best(t) for t in per_task["task"].unique()}
    return [
        ("percentile-heatmap", percentile_heatmap(per_task, f"Percentile per task — {label}")),
        ("mean-percentile", mean_percentile_bars(per_agent, f"Mean percentile — {label}")),
        ("gap-to-human", gap_to_human(per_task, human, f"Gap to the best human — {label}")),
    ]


def render_html(
    results: Sequence[RunResult],
    *,
    content: ReportContent | None = None,
    run_links: dict[str, str] | None = None,
) -> str:
    """A self-contained HTML page: banners, tables, inline SVG plots, failures with reasons.

    ``run_links`` maps a run's folder path to the relative link of its run page (run browser).
    """
    content = content or report_content(results)
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    sections = [
        "<h1>ReX-MLE report</h1>",
        f"<p>{len(content.frame)} runs · rexmle {__version__} · {stamp}</p>",
        html_banners(content.banners),
    ]
    for number, (key, board) in enumerate(content.boards):
        sections.append(f"<h2>{html.escape(key_label(key))}</h2>")
        for heading, item in _key_sections(content, key, board):
            if isinstance(item, pd.DataFrame) and heading.startswith("Leaderboard"):
                sections.append(_leaderboard_html(item, f"board-{number}"))
                continue
            sections.append(f"<h3>{html.escape(heading)}</h3>")
            if isinstance(item, pd.DataFrame):
                sections.append(html_table(item))
            else:
                sections.append(f"<p class='banner note'>{html.escape(item)}</p>")
            if heading.startswith("Performance overview"):
                sections += [svg for _, svg in plots_for(content, key)]
    sections.append(content.appendix.html)
    for heading, table in _common_sections(content):
        anchor = " id='failures'" if heading == "Failed runs" else ""
        sections.append(f"<h2{anchor}>{html.escape(heading)}</h2>")
        sections.append(_linked_runs_html(table, run_links or {}))
    if run_links:
        from rexmle.report.tables import RUN_LIST_COLUMNS

        sections.append(
            "<h2>All runs</h2>"
            + _linked_runs_html(content.frame[RUN_LIST_COLUMNS], run_links, table_id="runs")
        )
    return page("ReX-MLE report", "\n".join(sections))


def _leaderboard_html(board: pd.DataFrame, table_id: str) -> str:
    """The published-form table (tasks as rows) while it has at most ``WIDE_AGENTS`` agents;
    above that, agents as rows (:func:`rexmle.report.tables.agent_rows`), one table per task
    category, so that the page never scrolls sideways.
    """
    agents = agents_of_board(board)
    heading = "<h3>Leaderboard (headline value, percentile rank against the human leaderboard)</h3>"
    if len(agents) <= WIDE_AGENTS:
        return heading + html_table(board, table_id=table_id, pinned_rows=2)
    parts = [
        "<h3>Leaderboard: one row per agent (value and percentile rank per task; "
        "click a column to sort)</h3>"
    ]
    for number, (category, table) in enumerate(agent_rows(board)):
        parts.append(f"<h4>{html.escape(category)}</h4>")
        parts.append(
            html_table(table, table_id=f"{table_id}-{number}", pinned_rows=1, filter_box=True)
            .replace("class='scroll'", "class='fit'")
            .replace("class='sortable'", "class='sortable fit'")
        )
    return "".join(parts)


def _linked_runs_html(
    table: pd.DataFrame, links: dict[str, str], *, table_id: str | None = None
) -> str:
    """A sortable table (its ``path`` column hidden) whose seed cells link to the run pages."""
    if "path" not in table.columns:
        return html_table(table, table_id=table_id, filter_box=table_id is not None)
    shown = table.drop(columns=["path"])
    cell_links = [
        {"seed": links[str(path)]} if str(path) in links else {} for path in table["path"]
    ]
    return html_table(shown, table_id=table_id, links=cell_links, filter_box=table_id is not None)


def render_json(results: Sequence[RunResult], *, content: ReportContent | None = None) -> str:
    """Runs (the run-table as records) and every table, as JSON."""
    content = content or report_content(results)

    def records(frame: pd.DataFrame) -> object:
        return json.loads(frame.to_json(orient="records")) if not frame.empty else []

    payload = {
        "rexmle_version": __version__,
        "banners": [{"kind": b.kind, "text": b.text} for b in content.banners],
        "runs": records(content.frame),
        "per_task": records(content.per_task),
        "per_agent": records(content.per_agent),
        "overview": records(content.overview),
        "leaderboards": [
            {"group": k[0], "condition": k[1], "data": k[2], "table": records(board)}
            for k, board in content.boards
        ],
        "sources": records(content.sources),
        "failures": records(content.failures),
        "unscored": records(content.unscored),
        "failure_classes": records(content.taxonomy),
        "geometry": records(content.geometry),
    }
    return json.dumps(payload, indent=2) + "\n"
