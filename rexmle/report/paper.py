"""The paper comparison: runs of the paper's agents beside the published table.

The published leaderboard of the ReX-MLE paper (arXiv 2512.17838) is shipped as
``paper_results.csv`` beside this module: per task and agent the headline value and the percentile
rank, ``FAIL`` where the agent had no valid submission, and per agent the overall mean percentile
(AIDE 9.05 %, ML-Master 4.53 %, R&D-Agent 12.15 %). Those numbers were graded with the study's own
definitions, which differ from the official ones on 13 tasks (``docs/study-errata.md``).

For the runs of the paper's agents (``aide``, ``ml-master``, ``rdagent``) the comparison shows,
per (group, condition, data) and never pooled across them, per task and agent: our headline value
and percentile under ``official``, the same under ``study`` (the runs regraded,
:mod:`rexmle.runner.regrade`) when given, and the published cell; a last row per agent holds the
overall mean percentiles. Our cells follow the published form: the value is the mean over the
valid seeds, the percentile the mean over the scored seeds (a FAIL seed counts 0), FAIL when no
seed is valid. So the grader's share of a difference is the official-to-study change, and the
rest is the agent (and the data: mini runs are not comparable with the paper's numbers).
"""

from __future__ import annotations

import csv
import html
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

import numpy as np
import pandas as pd

from rexmle.records.results import RunResult
from rexmle.report.htmlpage import html_table
from rexmle.report.render import Appendix, _markdown_table
from rexmle.report.runtable import TABLE_KEY, run_table
from rexmle.report.tables import FAIL, TableKey, key_label, split_by_key, task_order
from rexmle.tasks.definitions import ERRATA_DOC, STUDY_SOURCE

PAPER_AGENTS: dict[str, str] = {"aide": "AIDE", "ml-master": "ML-Master", "rdagent": "R&D-Agent"}
"""The paper's agents: this package's agent name -> the paper's name."""
PAPER_SOURCE = "ReX-MLE paper, arXiv 2512.17838 (published leaderboard table)"
PUBLISHED_FILE = "paper_results.csv"
OVERALL = "overall"
NOT_REGRADED = "not regraded"


@dataclass(frozen=True)
class PublishedCell:
    """One agent's published result on one task (or its overall mean percentile)."""

    value: float | None
    """The headline value; None for FAIL (and for the overall row)."""
    rank_percent: float | None
    """The percentile rank in percent; None for FAIL."""


def published_results() -> dict[tuple[str, str], PublishedCell]:
    """The published table by (task, agent); task ``overall`` holds the mean percentiles."""
    text = resources.files("rexmle.report").joinpath(PUBLISHED_FILE).read_text(encoding="utf-8")
    cells = {}
    for row in csv.DictReader(text.splitlines()):
        value = None if row["value"] in ("", FAIL) else float(row["value"])
        rank = None if row["rank_percent"] == "" else float(row["rank_percent"])
        cells[(row["task"], row["agent"])] = PublishedCell(value=value, rank_percent=rank)
    return cells


def definitions_note(*, study: bool) -> str:
    """The sentence naming the definition sets of a comparison (for deviation sections too)."""
    ours = "official (the challenges' definitions)"
    if study:
        ours += f" and study (the grader of {STUDY_SOURCE}, re-implemented)"
    return (
        f"Definition sets: ours {ours}; the published cells were graded with the study's "
        f"definitions. Differences per task: {ERRATA_DOC}. Published figures: {PAPER_SOURCE}."
    )


def _cell(runs: pd.DataFrame) -> tuple[str, str, float | None]:
    """(value, percent, percentile) of one task and agent in the published form."""
    if runs.empty:
        return "", "", None
    percentile = float(runs["percentile"].mean())
    valid = runs["headline_value"].dropna()
    value = FAIL if valid.empty else f"{valid.mean():.2f}"
    return value, ("--" if valid.empty else f"{100 * percentile:.0f}%"), percentile


def _published(cell: PublishedCell | None) -> tuple[str, str]:
    if cell is None:
        return "", ""
    if cell.value is None:
        return FAIL, "--"
    return f"{cell.value:.2f}", f"{cell.rank_percent:.0f}%"


def comparison_table(official: pd.DataFrame, study: pd.DataFrame | None) -> pd.DataFrame:
    """The comparison of ONE (group, condition, data) part (run-tables of the paper's agents).

    Columns: task, agent, selection (which submission was graded), metric, ``official``,
    ``official rank``, ``study``, ``study rank``, ``published``, ``published rank``; one row per
    task and agent run, in the published task order, then one ``Overall mean percentile`` row
    per agent (over the tasks it ran; the published overall is over all 20 tasks).
    """
    published = published_results()
    scored = official[official["scored"]]
    study_scored = None if study is None else study[study["scored"]]
    agents = [a for a in PAPER_AGENTS if a in set(scored["agent"])]
    rows: list[dict[str, object]] = []
    overall: dict[str, dict[str, list[float]]] = {a: {"official": [], "study": []} for a in agents}
    for task_id in task_order(list(scored["task"].unique())):
        for agent in agents:
            mine = scored[(scored["task"] == task_id) & (scored["agent"] == agent)]
            if mine.empty:
                continue
            value, rank, percentile = _cell(mine)
            row: dict[str, object] = {
                "task": task_id,
                "agent": PAPER_AGENTS[agent],
                "selection": ",".join(sorted(set(mine["selection"].dropna()))),
                "metric": str(mine["headline_key"].iloc[0]),
                "official": value,
                "official rank": rank,
            }
            overall[agent]["official"].append(percentile or 0.0)
            if study_scored is None:
                row["study"], row["study rank"] = NOT_REGRADED, ""
            else:
                theirs = study_scored[
                    (study_scored["task"] == task_id) & (study_scored["agent"] == agent)
                ]
                row["study"], row["study rank"], study_percentile = _cell(theirs)
                overall[agent]["study"].append(study_percentile or 0.0)
            row["published"], row["published rank"] = _published(published.get((task_id, agent)))
            rows.append(row)
    for agent in agents:
        total = published.get((OVERALL, agent))
        row = {
            "task": "Overall mean percentile",
            "agent": PAPER_AGENTS[agent],
            "selection": "",
            "metric": "",
        }
        for name in ("official", "study"):
            found = overall[agent][name]
            row[name] = ""
            row[f"{name} rank"] = f"{100 * np.mean(found):.2f}%" if found else ""
        if study_scored is None:
            row["study"] = NOT_REGRADED
        row["published"] = ""
        row["published rank"] = "" if total is None else f"{total.rank_percent:.2f}%"
        rows.append(row)
    return pd.DataFrame(rows)


def paper_comparisons(
    official: Sequence[RunResult], study: Sequence[RunResult] | None = None
) -> list[tuple[TableKey, pd.DataFrame]]:
    """One comparison per (group, condition, data) holding scored runs of the paper's agents.

    ``study`` holds the same runs regraded with the study's definitions (None: not regraded).
    """
    frame = run_table(official)
    frame = frame[frame["agent"].isin(list(PAPER_AGENTS))]
    study_frame = None if study is None else run_table(study)
    tables = []
    for key, part in split_by_key(frame):
        if not part["scored"].any():
            continue
        study_part = None
        if study_frame is not None:
            mask = np.logical_and.reduce(
                [study_frame[column] == value for column, value in zip(TABLE_KEY, key, strict=True)]
            )
            study_part = study_frame[mask & study_frame["agent"].isin(list(PAPER_AGENTS))]
        tables.append((key, comparison_table(part, study_part)))
    return tables


def comparison_sections(
    tables: Sequence[tuple[TableKey, pd.DataFrame]], *, study: bool
) -> list[tuple[str, pd.DataFrame | str]]:
    """(heading, table or sentence) of the paper comparison, for any renderer."""
    if not tables:
        return []
    sections: list[tuple[str, pd.DataFrame | str]] = [
        ("Paper comparison (the paper's agents beside the published table)", ""),
        ("Definitions", definitions_note(study=study)),
    ]
    for key, table in tables:
        sections.append((f"Paper comparison: {key_label(key)}", table))
    return sections


def comparison_markdown(tables: Sequence[tuple[TableKey, pd.DataFrame]], *, study: bool) -> str:
    """The paper comparison as Markdown (empty when no run of the paper's agents is scored)."""
    parts = []
    for number, (heading, item) in enumerate(comparison_sections(tables, study=study)):
        parts.append(f"{'##' if number == 0 else '###'} {heading}\n")
        if isinstance(item, pd.DataFrame):
            parts.append(_markdown_table(item))
        elif item:
            parts.append(f"{item}\n")
    return "\n".join(parts)


def comparison_html(tables: Sequence[tuple[TableKey, pd.DataFrame]], *, study: bool) -> str:
    """The paper comparison as HTML (headings, the note and tables; empty when none)."""
    parts = []
    for number, (heading, item) in enumerate(comparison_sections(tables, study=study)):
        level = 2 if number == 0 else 3
        parts.append(f"<h{level}>{html.escape(heading)}</h{level}>")
        if isinstance(item, pd.DataFrame):
            parts.append(html_table(item))
        elif item:
            parts.append(f"<p>{html.escape(item)}</p>")
    return "".join(parts)


def comparison_appendix(
    tables: Sequence[tuple[TableKey, pd.DataFrame]], *, study: bool
) -> Appendix:
    """The paper comparison as report sections (Markdown and HTML)."""
    return Appendix(
        markdown=comparison_markdown(tables, study=study),
        html=comparison_html(tables, study=study),
    )
