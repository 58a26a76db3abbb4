"""The run browser: a static, self-contained folder (``rexmle report RUNS --html OUT/``).

``OUT/index.html`` is the report page with links to the run pages
``OUT/runs/<group>/<task>/<agent>/seed-<k>.html``: summary (with the geometry verdict of a
segmentation run), status timeline, the LLM transcript (:mod:`rexmle.report.transcript`),
validation requests, per-case scores, overlays (:mod:`rexmle.report.overlays`, one case at a
time with a choice of slices), the agent's code (what an llm agent's adapter collected, else
the Python files the agent wrote in its workspace; files the harness put there are not the
agent's), AIDE's journal as a tree of its solution attempts, and the agent's stdout/stderr
(each capped at ``LOG_CAP_BYTES``, the tail kept, with a line filter). Files a page shows
beside itself (overlay PNGs, AIDE's ``journal.json`` and ``tree_plot.html``, the agent's code)
are copied into ``seed-<k>.files/`` next to it. ``OUT/plots/`` holds every plot as an SVG file
for papers. Pages load nothing from the network: styles, scripts and images are local.
"""

from __future__ import annotations

import html
import itertools
import json
import os
import shutil
import urllib.parse
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import pandas as pd

from rexmle.errors import RexmleError
from rexmle.grading.report import read_grade_report
from rexmle.records.results import RunResult
from rexmle.records.runs import RunRecord
from rexmle.report.htmlpage import (
    cell_text,
    html_table,
    human_iso,
    human_number,
    human_seconds,
    page,
)
from rexmle.report.overlays import OVERLAY_DIR, Overlay, read_overlays
from rexmle.report.render import ReportContent, banners, html_banners, plots_for, render_html
from rexmle.report.runtable import run_table
from rexmle.report.tables import split_by_key
from rexmle.report.transcript import SCRIPT as TRANSCRIPT_SCRIPT
from rexmle.report.transcript import highlight, transcript_html

LOG_CAP_BYTES = 256 * 1024
CODE_CAP_BYTES = 64 * 1024
MAX_CASE_ROWS = 1000
MAX_JSONL_ROWS = 500
MAX_JSONL_COLUMNS = 24
MAX_CODE_FILES = 5
LINKED_FILE_CAP_BYTES = 16 * 1024 * 1024
"""Collected files up to this size are copied beside the run page and linked."""
ASSETS_CAP_BYTES = 64 * 1024 * 1024
"""The most bytes of linked files copied beside one run page (overlays not counted)."""
JOURNAL_CAP_BYTES = 64 * 1024 * 1024
HARNESS_FILES = ("validate.py",)
"""Files the harness writes into every workspace (:mod:`rexmle.runner.workspace`)."""
MAX_LISTED_FILES = 200
AGENT_OUTPUT = "agent_output"
"""What an llm agent's adapter collected (journal, best solution, logs), moved into the run folder."""
CODE_NAMES = ("best_solution.py", "best_code.py", "solution.py", "main.py", "train.py")
FILTER_SCRIPT = (
    "for(const box of document.querySelectorAll('input.filter')){"
    "const pre=document.getElementById(box.dataset.target);const lines=pre.textContent.split('\\n');"
    "box.addEventListener('input',()=>{const q=box.value.toLowerCase();"
    "pre.textContent=q?lines.filter(l=>l.toLowerCase().includes(q)).join('\\n'):lines.join('\\n');"
    "box.nextElementSibling.textContent=q?pre.textContent.split('\\n').filter(Boolean).length"
    "+' matching line(s)':'';});}"
)


def run_page_path(result: RunResult) -> str:
    """The run page's path relative to the browser folder (POSIX, unescaped)."""
    return f"runs/{result.group}/{result.task}/{result.agent}/seed-{result.seed}.html"


def read_tail(path: Path, cap: int) -> tuple[str, int]:
    """The last ``cap`` bytes of a file as text, and the file's full size (0 when absent)."""
    if not path.is_file() or path.is_symlink():
        return "", 0
    size = path.stat().st_size
    with path.open("rb") as handle:
        handle.seek(max(0, size - cap))
        return handle.read().decode("utf-8", errors="replace"), size


def _log_block(title: str, path: Path, anchor: str) -> str:
    text, size = read_tail(path, LOG_CAP_BYTES)
    if not size:
        return f"<h2>{html.escape(title)}</h2><p><em>empty or absent</em></p>"
    note = (
        f"last {LOG_CAP_BYTES // 1024} KiB of {size / 1024:.0f} KiB shown"
        if size > LOG_CAP_BYTES
        else f"{size} bytes"
    )
    return (
        f"<h2>{html.escape(title)}</h2><p>{note}</p>"
        f"<input class='filter' data-target='{anchor}' placeholder='filter lines'><span></span>"
        f"<pre id='{anchor}' class='log'>{html.escape(text)}</pre>"
    )


def _timestamp(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def status_timeline(record: RunRecord | None) -> str:
    """An SVG bar of the run's phases (workspace, agent, grade) in proportion to their seconds."""
    timings = {} if record is None else record.timings_s
    phases = [
        (name, float(timings[name]))
        for name in ("workspace", "agent", "grade")
        if name in timings and timings[name] >= 0
    ]
    started_at = None if record is None else record.started_at
    finished_at = None if record is None else record.finished_at
    started, finished = _timestamp(started_at), _timestamp(finished_at)
    text = f"started {human_iso(started_at or '?')}"
    text += f", finished {human_iso(str(finished_at))}" if finished else ", not finished"
    if started and finished:
        text += f" ({human_seconds((finished - started).total_seconds())} wall clock)"
    total = sum(seconds for _, seconds in phases)
    if not phases or total <= 0:
        return f"<p>{html.escape(text)}; no phase timings recorded</p>"
    colours = {"workspace": "#9bb3d9", "agent": "#1f77b4", "grade": "#2ca02c"}
    width, x = 720.0, 0.0
    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{width:.0f}' height='46' "
        "class='plot timeline'><title>Run phases</title>"
    ]
    for name, seconds in phases:
        w = max(2.0, width * seconds / total)
        parts.append(
            f"<g><title>{name}: {human_seconds(seconds)}</title><rect x='{x:.1f}' y='4' width='{w:.1f}' "
            f"height='22' fill='{colours[name]}'/></g>"
        )
        if w > 60:
            parts.append(
                f"<text x='{x + 4:.1f}' y='19' font-size='12' fill='#fff'>{name} "
                f"{human_seconds(seconds)}</text>"
            )
        x += w
    parts.append(f"<text x='0' y='42' font-size='11' fill='#555'>{html.escape(text)}</text></svg>")
    return "".join(parts)


def _jsonl_table(path: Path) -> str:
    text, size = read_tail(path, LOG_CAP_BYTES)
    if not size:
        return ""
    rows = []
    for line in text.splitlines()[-MAX_JSONL_ROWS:]:
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(item, dict):
            rows.append(
                {
                    str(k)[:60]: (json.dumps(v)[:400] if isinstance(v, dict | list) else v)
                    for k, v in itertools.islice(item.items(), MAX_JSONL_COLUMNS)
                }
            )
    if not rows:
        return "<p><em>no readable lines</em></p>"
    return html_table(pd.DataFrame(rows))


class Assets:
    """The folder beside a run page that holds the files the page shows (``seed-<k>.files``)."""

    def __init__(self, folder: Path, link: str) -> None:
        self.folder = folder
        self.link = link
        """The folder's href relative to the run page."""
        self.copied_bytes = 0

    def copy(self, source: Path, relative: str) -> str:
        """Copy ``source`` to ``relative`` under the folder; returns its href from the page."""
        target = self.folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target, follow_symlinks=False)
        return f"{self.link}/{urllib.parse.quote(relative)}"

    def linked(self, source: Path, relative: str, label: str) -> str:
        """``label`` (HTML) as a link to a copy of ``source``; the bare label when the source
        is a symbolic link or not a regular file, is larger than ``LINKED_FILE_CAP_BYTES``, or
        would take the page's files past ``ASSETS_CAP_BYTES``.
        """
        if source.is_symlink() or not source.is_file():
            return label
        size = source.stat().st_size
        if size > LINKED_FILE_CAP_BYTES or self.copied_bytes + size > ASSETS_CAP_BYTES:
            return label
        self.copied_bytes += size
        return f"<a href='{html.escape(self.copy(source, relative))}'>{label}</a>"


def _linked(assets: Assets | None, source: Path, relative: str, label: str) -> str:
    return label if assets is None else assets.linked(source, relative, label)


def _llm_section(result: RunResult) -> str:
    parts = ["<h2>LLM usage and transcript</h2>"]
    if result.llm:
        totals = pd.DataFrame([{k: v for k, v in result.llm.items() if not isinstance(v, dict)}])
        parts.append(html_table(totals))
    transcript = transcript_html(result.path)
    found = bool(transcript)
    parts.append(transcript)
    output = result.path / AGENT_OUTPUT
    if output.is_dir() and not output.is_symlink():
        for path in sorted(output.glob("*.jsonl"))[:10]:
            table = _jsonl_table(path)
            if table:
                found = True
                parts.append(f"<h3>{html.escape(str(path.relative_to(result.path)))}</h3>{table}")
    if not result.llm and not found:
        parts.append("<p><em>no LLM call recorded for this run</em></p>")
    return "".join(parts)


def _collected_files(result: RunResult, assets: Assets | None) -> str:
    output = result.path / AGENT_OUTPUT
    if not output.is_dir() or output.is_symlink():
        return ""
    walked = itertools.islice(output.rglob("*"), MAX_LISTED_FILES * 10)
    files = sorted(p for p in walked if p.is_file() and not p.is_symlink())
    items = []
    for path in files[:MAX_LISTED_FILES]:
        relative = str(path.relative_to(result.path))
        size = path.stat().st_size
        label = f"{html.escape(relative)} ({human_number(size)} bytes)"
        items.append(f"<li>{_linked(assets, path, relative, label)}</li>")
    if len(files) > MAX_LISTED_FILES:
        items.append(f"<li>… {len(files) - MAX_LISTED_FILES} more</li>")
    return f"<h3>Collected agent output</h3><ul>{''.join(items)}</ul>"


def agent_code(result: RunResult) -> list[tuple[str, str]]:
    """(path relative to the run folder, text) of the agent's own code, best first.

    An llm agent's adapter collects its best solution into ``agent_output/`` (a file named in
    ``CODE_NAMES`` there). Otherwise the agent's code is the Python files it wrote in its
    workspace (at most ``MAX_CODE_FILES``, the one named in ``CODE_NAMES`` or else the newest
    first); the files the harness puts into every workspace (``HARNESS_FILES``) and the data
    are not the agent's.
    """
    collected = _python_files(result.path / AGENT_OUTPUT)
    named = [p for p in collected if p.name in CODE_NAMES]
    chosen = named or _python_files(result.path / "workspace")
    chosen.sort(
        key=lambda p: (
            CODE_NAMES.index(p.name) if p.name in CODE_NAMES else len(CODE_NAMES),
            -p.stat().st_mtime,
        )
    )
    return [
        (str(p.relative_to(result.path)), read_tail(p, CODE_CAP_BYTES)[0])
        for p in chosen[:MAX_CODE_FILES]
    ]


def best_code(result: RunResult) -> tuple[str, str] | None:
    """The first of :func:`agent_code`, if any."""
    found = agent_code(result)
    return found[0] if found else None


def _python_files(folder: Path) -> list[Path]:
    if not folder.is_dir() or folder.is_symlink():
        return []
    candidates: list[Path] = []
    for root, dirs, names in os.walk(folder, followlinks=False):
        top = Path(root) == folder
        dirs[:] = [d for d in dirs if not (top and d in ("data", "submission")) and d[:1] != "."]
        candidates += [
            Path(root) / name
            for name in names
            if name.endswith(".py") and not (top and name in HARNESS_FILES)
        ]
        if len(candidates) > 5000:
            break
    return [p for p in candidates if p.is_file() and not p.is_symlink()]


def _code_section(result: RunResult, assets: Assets | None) -> str:
    agent = None if result.record is None else result.record.config.agent
    kind = "" if agent is None else agent.kind
    parts = ["<h2>Agent's code</h2>"]
    command = None if agent is None else agent.command
    if command:
        shown = " ".join(str(c) for c in command) if isinstance(command, list) else str(command)
        parts.append(
            f"<p>{html.escape(kind or 'agent')} agent, command: <code>{html.escape(shown)}</code>"
            "</p>"
        )
    files = agent_code(result)
    if not files:
        why = (
            "the baseline is the harness's own solver for the task; it leaves no code"
            if kind in ("baseline", "dummy")
            else "the agent left no Python file in its workspace"
        )
        parts.append(f"<p><em>{why}</em></p>")
    for relative, text in files:
        link = _linked(assets, result.path / relative, relative, html.escape(relative))
        parts.append(f"<h3>{link}</h3><pre class='code'>{highlight(text)}</pre>")
    return "".join(parts)


def _journal_section(result: RunResult, assets: Assets | None) -> str:
    """AIDE's (or ML-Master's) journal as a tree of solution attempts, and its tree plot."""
    output = result.path / AGENT_OUTPUT
    journals, plots = _named_files(output, "journal.json"), _named_files(output, "tree_plot.html")
    if not journals and not plots:
        return ""
    parts = ["<h2>Agent's journal</h2>"]
    for plot in plots:
        relative = str(plot.relative_to(result.path))
        parts.append(
            f"<p>{_linked(assets, plot, relative, html.escape(relative))}: the agent's own tree "
            "view (its file as written; it may load scripts from the internet)</p>"
        )
    for path in journals:
        relative = str(path.relative_to(result.path))
        link = _linked(assets, path, relative, html.escape(relative))
        parts.append(f"<h3>{link}</h3>{journal_tree_html(path)}")
    return "".join(parts)


def _named_files(folder: Path, name: str) -> list[Path]:
    """Up to 5 regular files called ``name`` under ``folder`` (symbolic links left out)."""
    if not folder.is_dir() or folder.is_symlink():
        return []
    found = itertools.islice(folder.rglob(name), 20)
    return sorted(p for p in found if p.is_file() and not p.is_symlink())[:5]


def journal_tree_html(path: Path) -> str:
    """An AIDE journal (``{"nodes": [...], "node2parent": {child: parent}}``) as nested lists:
    per node its step, metric, whether it is buggy, the first line of its plan and, folded, its
    code, analysis and execution time.
    """
    if path.stat().st_size > JOURNAL_CAP_BYTES:
        return f"<p><em>larger than {human_number(JOURNAL_CAP_BYTES)} bytes; not shown</em></p>"
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        return f"<p><em>unreadable: {html.escape(str(error))}</em></p>"
    nodes = loaded.get("nodes") if isinstance(loaded, dict) else None
    if not isinstance(nodes, list) or not nodes:
        return "<p><em>no nodes</em></p>"
    parents = loaded.get("node2parent") if isinstance(loaded.get("node2parent"), dict) else {}
    by_id = {str(n.get("id")): n for n in nodes if isinstance(n, dict)}
    children: dict[str, list[str]] = {}
    for ident in by_id:
        children.setdefault(str(parents.get(ident, "")), []).append(ident)
    for kids in children.values():
        kids.sort(
            key=lambda i: by_id[i].get("step", 0) if isinstance(by_id[i].get("step"), int) else 0
        )

    def item(ident: str, depth: int) -> str:
        node = by_id[ident]
        metric = node.get("metric")
        value = metric.get("value") if isinstance(metric, dict) else None
        buggy = bool(node.get("is_buggy"))
        score = (
            "buggy"
            if buggy
            else f"metric {cell_text(value)}"
            if isinstance(value, int | float)
            else "no metric"
        )
        plan = str(node.get("plan") or "").strip().splitlines()
        exec_time = node.get("exec_time")
        details = []
        if isinstance(exec_time, int | float):
            details.append(f"<p>ran {human_seconds(float(exec_time))}</p>")
        if node.get("analysis"):
            details.append(f"<p>{html.escape(str(node['analysis'])[:4000])}</p>")
        if node.get("code"):
            details.append(
                f"<pre class='code'>{highlight(str(node['code'])[:CODE_CAP_BYTES])}</pre>"
            )
        kids = (
            "<ul>" + "".join(item(k, depth + 1) for k in children.get(ident, [])) + "</ul>"
            if ident in children and depth < 50
            else ""
        )
        klass = "bug" if buggy else "good"
        return (
            f"<li class='node {klass}'><details><summary>step {html.escape(str(node.get('step', '?')))}"
            f" · {html.escape(score)} · {html.escape(plan[0][:200] if plan else '')}</summary>"
            f"{''.join(details)}</details>{kids}</li>"
        )

    roots = [i for i in by_id if str(parents.get(i, "")) not in by_id]
    roots.sort(
        key=lambda i: by_id[i].get("step", 0) if isinstance(by_id[i].get("step"), int) else 0
    )
    return (
        "<style>li.node.bug>details>summary{color:#c0392b}li.node.good>details>summary"
        "{color:#1e7b34}</style>"
        f"<p>{len(by_id)} node(s); each line: step, metric, first line of the plan</p>"
        "<ul class='journal'>" + "".join(item(r, 0) for r in roots) + "</ul>"
    )


def _overlay_caption(overlay: Overlay) -> str:
    """``best case X (dice = 0.91)``; ``first case X`` when the cases carry no score."""
    text = f"{overlay.rank} case {overlay.case_id}"
    if overlay.score_key and overlay.score is not None:
        text += f" ({overlay.score_key} = {cell_text(overlay.score)})"
    return text


def _overlay_section(result: RunResult, assets: Assets | None) -> str:
    overlays = read_overlays(result.path)
    error = result.path / OVERLAY_DIR / "error.txt"
    parts = [
        "<h2>Overlays</h2><p>Left: gold outline <b style='color:#28c85a'>green</b> and "
        "prediction <b style='color:#e63c32'>red</b> on the input image (<b style='color:"
        "#c8a800'>yellow</b> where they coincide); middle: the gold alone; right: the "
        "prediction alone.</p>"
    ]
    if error.is_file():
        parts.append(f"<p class='banner warn'>{html.escape(read_tail(error, 2000)[0])}</p>")
    if not overlays:
        parts.append(
            "<p><em>no overlays (valid segmentation and detection runs have them)</em></p>"
        )
        return "".join(parts)
    cases: dict[tuple[str, str], list[Overlay]] = {}
    for overlay in overlays:
        cases.setdefault((overlay.rank, overlay.case_id), []).append(overlay)
    for number, views in enumerate(cases.values()):
        first = views[0]
        buttons = []
        images = []
        for index, overlay in enumerate(views):
            source = result.path / OVERLAY_DIR / Path(overlay.file).name
            href = (
                assets.copy(source, f"overlays/{Path(overlay.file).name}")
                if assets is not None
                else source.resolve().as_uri()
            )
            label = overlay.view + (f" ({overlay.note})" if overlay.note else "")
            hidden = "" if index == 0 else " hidden"
            images.append(
                f"<img data-view='{index}' alt='{html.escape(_overlay_caption(overlay))}, "
                f"{html.escape(label)}' src='{html.escape(href)}'{hidden}>"
            )
            on = " class='on'" if index == 0 else ""
            buttons.append(
                f"<button type='button' data-view='{index}'{on}>{html.escape(label)}</button>"
            )
        image_words = f" · {first.image}" if first.image else ""
        selector = (
            f"<div class='slices' data-figure='ov-{number}'>{''.join(buttons)}</div>"
            if len(views) > 1
            else f"<div class='slices'>{html.escape(first.view)}"
            f"{html.escape(' · ' + first.note if first.note else '')}</div>"
        )
        parts.append(
            f"<figure class='overlay' id='ov-{number}'><figcaption>"
            f"<b>{html.escape(_overlay_caption(first))}</b>{html.escape(image_words)}"
            f"</figcaption>{selector}{''.join(images)}</figure>"
        )
    return "".join(parts)


SLICE_SCRIPT = (
    "for(const bar of document.querySelectorAll('.slices[data-figure]')){"
    "const fig=document.getElementById(bar.dataset.figure);"
    "for(const b of bar.querySelectorAll('button'))b.addEventListener('click',()=>{"
    "for(const o of bar.querySelectorAll('button'))o.classList.toggle('on',o===b);"
    "for(const i of fig.querySelectorAll('img'))i.hidden=i.dataset.view!==b.dataset.view;});}"
)


def _cases_section(result: RunResult) -> str:
    path = result.path / "grade.json"
    if not path.is_file():
        return "<h2>Per-case scores</h2><p><em>not graded</em></p>"
    try:
        cases = read_grade_report(path).cases
    except RexmleError:
        return "<h2>Per-case scores</h2><p><em>grade.json unreadable</em></p>"
    if not cases:
        return "<h2>Per-case scores</h2><p><em>none (invalid or no submission)</em></p>"
    shown = pd.DataFrame(cases[:MAX_CASE_ROWS])
    more = f" (first {MAX_CASE_ROWS} of {len(cases)})" if len(cases) > MAX_CASE_ROWS else ""
    return f"<h2>Per-case scores{more}</h2>" + html_table(shown, table_id="cases", filter_box=True)


def render_run_page(
    result: RunResult,
    failure: str,
    index_link: str,
    *,
    geometry: str = "",
    assets: Assets | None = None,
) -> str:
    """One run's page (see the module docstring); ``geometry`` is the run's geometry verdict
    in words (empty when not examined); files are copied into ``assets`` when given.
    """
    record = result.record
    summary = {
        "status": result.status,
        "failure class": failure,
        "reason": result.reason,
        "headline": f"{result.headline_key} = {cell_text(result.headline_value)}"
        if result.headline_value is not None
        else "FAIL"
        if result.scored
        else "not scored",
        "percentile": f"{100 * result.percentile:.1f}%" if result.valid else "0",
        "medal": result.medal or "",
        "geometry": geometry,
        "data": result.data,
        "sandbox": f"{result.sandbox_kind} ({'isolated' if result.isolated else 'NOT isolated'})"
        if result.isolated is not None
        else result.sandbox_kind,
        "network": result.network,
        "time limit": "" if result.time_limit_s is None else human_seconds(result.time_limit_s),
        "agent ran": "" if result.agent_seconds is None else human_seconds(result.agent_seconds),
        "exit code": "" if result.exit_code is None else str(result.exit_code),
        "validation requests": str(result.validation_requests),
        "run id": "" if record is None else record.run_id,
        "group / condition": f"{result.group} / {result.condition or '-'}",
        **{k: _summary_value(v) for k, v in result.extra.items()},
    }
    flagged = geometry and not geometry.startswith(("ok", "skipped"))
    rows = "".join(
        f"<tr><th>{html.escape(k)}</th><td class='reason'>{html.escape(str(v))}</td></tr>"
        for k, v in summary.items()
        if v != "" or k in ("status", "reason")
    )
    frame = run_table([result])
    title = f"{result.task} / {result.agent} / seed {result.seed}"
    flag_banner = f"<p class='banner warn'>GEOMETRY: {html.escape(geometry)}</p>" if flagged else ""
    body = [
        f"<p><a href='{html.escape(index_link)}'>← all runs</a></p>",
        f"<h1>{html.escape(title)}</h1>",
        html_banners(banners(frame)),
        flag_banner,
        f"<table class='summary'>{rows}</table>",
        "<h2>Status timeline</h2>",
        status_timeline(record),
        _overlay_section(result, assets),
        _cases_section(result),
        _llm_section(result),
        _code_section(result, assets),
        _journal_section(result, assets),
        _collected_files(result, assets),
        f"<h2>Validation requests</h2><p>{result.validation_requests} request(s) to the "
        "validation server (format checks only, never a score)</p>",
        _log_block("Agent stdout", result.path / "agent.stdout.log", "stdout"),
        _log_block("Agent stderr", result.path / "agent.stderr.log", "stderr"),
        _log_block("Grader log", result.path / "grade.log", "gradelog"),
    ]
    from rexmle.report.transcript import STYLE as TRANSCRIPT_STYLE

    return page(
        f"ReX-MLE run: {title}",
        TRANSCRIPT_STYLE + "\n".join(body),
        script=FILTER_SCRIPT + SLICE_SCRIPT + TRANSCRIPT_SCRIPT,
    )


def _summary_value(value: object) -> str:
    """A run.json value of the summary table in words: a mapping as ``key: value`` pairs."""
    if isinstance(value, dict):
        return ", ".join(f"{k}: {cell_text(v, str(k))}" for k, v in value.items())[:300]
    return cell_text(value)[:300]


def _href(relative: str) -> str:
    return urllib.parse.quote(relative, safe="/")


def _geometry_words(content: ReportContent) -> dict[tuple[str, ...], str]:
    """Per run key (group, condition, data, agent, task, seed): its geometry verdict in words."""
    found: dict[tuple[str, ...], str] = {}
    table = content.geometry
    if table.empty:
        return found
    for row in table.to_dict("records"):
        key = tuple(str(row[k]) for k in ("group", "condition", "data", "agent", "task", "seed"))
        detail = str(row.get("geometry_detail") or "")
        found[key] = str(row["geometry"]) + (f" — {detail}" if detail else "")
    return found


def write_browser(
    results: Sequence[RunResult], content: ReportContent, out_dir: Path
) -> list[Path]:
    """Write index.html, one page per run (with its files) and the SVG plots into ``out_dir``;
    returns the pages and plots written.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    from rexmle.analysis.taxonomy import classify

    failures = {str(r.path): classify(r).label for r in results}
    links = {str(r.path): _href(run_page_path(r)) for r in results}
    geometry = _geometry_words(content)
    written: list[Path] = []
    for result in results:
        relative = run_page_path(result)
        target = out_dir / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        depth = relative.count("/")
        index_link = "../" * depth + "index.html"
        folder = target.with_name(target.stem + ".files")
        shutil.rmtree(folder, ignore_errors=True)
        assets = Assets(folder, urllib.parse.quote(folder.name))
        run_key = (
            result.group,
            result.condition,
            result.data,
            result.agent,
            result.task,
            str(result.seed),
        )
        target.write_text(
            render_run_page(
                result,
                failures[str(result.path)],
                index_link,
                geometry=geometry.get(run_key, ""),
                assets=assets,
            ),
            encoding="utf-8",
        )
        written.append(target)
    plots_dir = out_dir / "plots"
    plots_dir.mkdir(exist_ok=True)
    for key, _ in split_by_key(content.frame):
        slug = "-".join(part for part in key if part).replace("/", "_")
        for stem, svg in plots_for(content, key):
            path = plots_dir / f"{slug}-{stem}.svg"
            path.write_text(svg, encoding="utf-8")
            written.append(path)
    index = out_dir / "index.html"
    index.write_text(render_html(results, content=content, run_links=links), encoding="utf-8")
    return [index, *written]
