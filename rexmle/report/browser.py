"""The run browser: a static, self-contained folder (``rexmle report RUNS --html OUT/``).

``OUT/index.html`` is the report page with links to the run pages
``OUT/runs/<group>/<task>/<agent>/seed-<k>.html``: summary, status timeline, the LLM usage and
trajectory when the gateway or the agent's adapter recorded them (``llm_usage.jsonl``,
``llm_trajectory.jsonl``, ``agent_output/*.jsonl``), validation requests, per-case scores,
overlays (embedded PNG), the agent's best code and its stdout/stderr (each capped at
``LOG_CAP_BYTES``, the tail kept, with a line filter). ``OUT/plots/`` holds every plot as an SVG
file for papers. Pages load nothing from the network: styles, scripts and images are inline.
"""

from __future__ import annotations

import base64
import html
import itertools
import json
import os
import urllib.parse
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import pandas as pd

from rexmle.errors import RexmleError
from rexmle.grading.report import read_grade_report
from rexmle.report.collect import RunResult
from rexmle.report.overlays import OVERLAY_DIR, read_overlays
from rexmle.report.render import (
    ReportContent,
    _cell,
    _html_table,
    banners,
    html_banners,
    page,
    plots_for,
    render_html,
)
from rexmle.report.runtable import run_table
from rexmle.report.tables import split_by_key

LOG_CAP_BYTES = 256 * 1024
CODE_CAP_BYTES = 64 * 1024
MAX_CASE_ROWS = 1000
MAX_JSONL_ROWS = 500
MAX_JSONL_COLUMNS = 24
TRAJECTORY_ENTRY_CHARS = 4000
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


def status_timeline(record: dict[str, object]) -> str:
    """An SVG bar of the run's phases (workspace, agent, grade) in proportion to their seconds."""
    timings = record.get("timings_s")
    timings = timings if isinstance(timings, dict) else {}
    phases = [
        (name, float(timings[name]))
        for name in ("workspace", "agent", "grade")
        if isinstance(timings.get(name), int | float) and float(timings[name]) >= 0
    ]
    started, finished = _timestamp(record.get("started_at")), _timestamp(record.get("finished_at"))
    text = f"started {record.get('started_at', '?')}"
    text += f", finished {record.get('finished_at')}" if finished else ", not finished"
    if started and finished:
        text += f" ({(finished - started).total_seconds():.0f} s wall clock)"
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
            f"<g><title>{name}: {seconds:.1f} s</title><rect x='{x:.1f}' y='4' width='{w:.1f}' "
            f"height='22' fill='{colours[name]}'/></g>"
        )
        if w > 60:
            parts.append(
                f"<text x='{x + 4:.1f}' y='19' font-size='12' fill='#fff'>{name} "
                f"{seconds:.1f} s</text>"
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
    return _html_table(pd.DataFrame(rows))


def _message_text(message: object) -> str:
    if isinstance(message, dict):
        role = str(message.get("role", "?"))
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content, default=str)
        return f"[{role}] {text}"
    return json.dumps(message, default=str)


def trajectory_html(path: Path) -> str:
    """The gateway's trajectory (``llm_trajectory.jsonl``): one collapsed entry per call with its
    last request messages and the response, each entry capped at TRAJECTORY_ENTRY_CHARS.
    """
    text, size = read_tail(path, LOG_CAP_BYTES)
    if not size:
        return ""
    entries = []
    lines = text.splitlines()[-MAX_JSONL_ROWS:]
    for number, line in enumerate(lines, start=1):
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            continue  # the first line of a tail may be cut
        if not isinstance(item, dict):
            continue
        request = item.get("request")
        request = request if isinstance(request, dict) else {}
        messages = request.get("messages")
        messages = messages if isinstance(messages, list) else []
        body = "\n\n".join(_message_text(m) for m in messages[-3:])
        response = item.get("response")
        body += "\n\n=> " + (
            response if isinstance(response, str) else json.dumps(response, default=str)
        )
        if item.get("error"):
            body += f"\n\nerror: {item['error']}"
        if item.get("note"):
            body = str(item["note"])
        head = " · ".join(str(item.get(k, "")) for k in ("time", "alias", "status") if item.get(k))
        entries.append(
            f"<details><summary>#{number} {html.escape(head or 'entry')}</summary>"
            f"<pre class='log'>{html.escape(body[:TRAJECTORY_ENTRY_CHARS])}</pre></details>"
        )
    shown = (
        f"last {LOG_CAP_BYTES // 1024} KiB of {size / 1024:.0f} KiB" if size > LOG_CAP_BYTES else ""
    )
    return f"<h3>Trajectory ({len(entries)} calls{', ' + shown if shown else ''})</h3>" + "".join(
        entries
    )


def _llm_section(result: RunResult) -> str:
    parts = ["<h2>LLM usage and trajectory</h2>"]
    if result.llm:
        totals = pd.DataFrame([{k: v for k, v in result.llm.items() if not isinstance(v, dict)}])
        parts.append(_html_table(totals))
    found = False
    logs = [result.path / "llm_usage.jsonl"]
    output = result.path / AGENT_OUTPUT
    if output.is_dir() and not output.is_symlink():
        logs += sorted(output.glob("*.jsonl"))[:10]
    for path in logs:
        name = str(path.relative_to(result.path))
        table = _jsonl_table(path)
        if table:
            found = True
            parts.append(f"<h3>{html.escape(name)}</h3>{table}")
    trajectory = trajectory_html(result.path / "llm_trajectory.jsonl")
    if trajectory:
        found = True
        parts.append(trajectory)
    if not result.llm and not found:
        parts.append("<p><em>no LLM usage recorded for this run</em></p>")
    if output.is_dir() and not output.is_symlink():
        walked = itertools.islice(output.rglob("*"), MAX_LISTED_FILES * 10)
        files = sorted(p for p in walked if p.is_file() and not p.is_symlink())
        listing = "".join(
            f"<li>{html.escape(str(p.relative_to(result.path)))} ({p.stat().st_size} bytes)</li>"
            for p in files[:MAX_LISTED_FILES]
        )
        more = (
            f"<li>… {len(files) - MAX_LISTED_FILES} more</li>"
            if len(files) > MAX_LISTED_FILES
            else ""
        )
        parts.append(f"<h3>Collected agent output</h3><ul>{listing}{more}</ul>")
    return "".join(parts)


def best_code(result: RunResult) -> tuple[str, str] | None:
    """(path relative to the run folder, text) of the agent's best code, if any.

    Looked for in ``agent_output/`` (what an llm agent's adapter collected), then the workspace:
    a file named in ``CODE_NAMES`` first, else the newest ``.py`` file.
    """
    for folder in (result.path / AGENT_OUTPUT, result.path / "workspace"):
        found = _code_in(folder)
        if found is not None:
            text, _ = read_tail(found, CODE_CAP_BYTES)
            return str(found.relative_to(result.path)), text
    return None


def _code_in(workspace: Path) -> Path | None:
    if not workspace.is_dir() or workspace.is_symlink():
        return None
    candidates: list[Path] = []
    for root, dirs, names in os.walk(workspace, followlinks=False):
        dirs[:] = [d for d in dirs if d not in ("data", "submission", ".git") and d[:1] != "."]
        candidates += [Path(root) / name for name in names if name.endswith(".py")]
        if len(candidates) > 5000:
            break
    scripts = [p for p in candidates if p.is_file() and not p.is_symlink()]
    if not scripts:
        return None
    named = [p for p in scripts if p.name in CODE_NAMES]
    return (
        min(named, key=lambda p: CODE_NAMES.index(p.name))
        if named
        else max(scripts, key=lambda p: p.stat().st_mtime)
    )


def _overlay_section(result: RunResult) -> str:
    overlays = read_overlays(result.path)
    error = result.path / OVERLAY_DIR / "error.txt"
    parts = ["<h2>Overlays (gold outline green, left; prediction red, right)</h2>"]
    if error.is_file():
        parts.append(f"<p class='banner warn'>{html.escape(read_tail(error, 2000)[0])}</p>")
    if not overlays:
        parts.append("<p><em>no overlays (only valid segmentation runs have them)</em></p>")
        return "".join(parts)
    for overlay in overlays:
        data = (result.path / OVERLAY_DIR / Path(overlay.file).name).read_bytes()
        score = "n/a" if overlay.score is None else f"{overlay.score:.4g}"
        caption = (
            f"{overlay.rank} case {overlay.case_id} ({overlay.score_key} = {score}), {overlay.view}"
        )
        parts.append(
            f"<figure class='overlay'><img alt='{html.escape(caption)}' "
            f"src='data:image/png;base64,{base64.b64encode(data).decode('ascii')}'>"
            f"<figcaption>{html.escape(caption)}</figcaption></figure>"
        )
    return "".join(parts)


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
    return f"<h2>Per-case scores{more}</h2>" + _html_table(shown)


def render_run_page(result: RunResult, failure: str, index_link: str) -> str:
    """One run's page (see the module docstring)."""
    record_path = result.path / "run.json"
    record = json.loads(record_path.read_text(encoding="utf-8")) if record_path.is_file() else {}
    summary = {
        "status": result.status,
        "failure class": failure,
        "reason": result.reason,
        "headline": f"{result.headline_key} = {_cell(result.headline_value)}"
        if result.headline_value is not None
        else "FAIL"
        if result.scored
        else "not scored",
        "percentile": f"{100 * result.percentile:.1f}%" if result.valid else "0",
        "medal": result.medal or "",
        "data": result.data,
        "sandbox": f"{result.sandbox_kind} ({'isolated' if result.isolated else 'NOT isolated'})"
        if result.isolated is not None
        else result.sandbox_kind,
        "network": result.network,
        "time limit (s)": _cell(result.time_limit_s),
        "agent (s)": _cell(result.agent_seconds),
        "exit code": "" if result.exit_code is None else str(result.exit_code),
        "validation requests": str(result.validation_requests),
        "run id": str(record.get("run_id", "")),
        "group / condition": f"{result.group} / {result.condition or '-'}",
        **{k: json.dumps(v)[:300] for k, v in result.extra.items()},
    }
    rows = "".join(
        f"<tr><th>{html.escape(k)}</th><td class='reason'>{html.escape(str(v))}</td></tr>"
        for k, v in summary.items()
    )
    frame = run_table([result])
    title = f"{result.task} / {result.agent} / seed {result.seed}"
    code = best_code(result)
    code_html = (
        "<h2>Agent's code</h2><p><em>no Python file in the workspace</em></p>"
        if code is None
        else f"<h2>Agent's code: {html.escape(code[0])}</h2><pre class='log'>"
        f"{html.escape(code[1])}</pre>"
    )
    body = [
        f"<p><a href='{html.escape(index_link)}'>← all runs</a></p>",
        f"<h1>{html.escape(title)}</h1>",
        html_banners(banners(frame)),
        f"<table class='summary'>{rows}</table>",
        "<h2>Status timeline</h2>",
        status_timeline(record),
        _llm_section(result),
        f"<h2>Validation requests</h2><p>{result.validation_requests} request(s) to the "
        "validation server (format checks only, never a score)</p>",
        _cases_section(result),
        _overlay_section(result),
        code_html,
        _log_block("Agent stdout", result.path / "agent.stdout.log", "stdout"),
        _log_block("Agent stderr", result.path / "agent.stderr.log", "stderr"),
        _log_block("Grader log", result.path / "grade.log", "gradelog"),
    ]
    return page(f"ReX-MLE run: {title}", "\n".join(body), script=FILTER_SCRIPT)


def _href(relative: str) -> str:
    return urllib.parse.quote(relative, safe="/")


def write_browser(
    results: Sequence[RunResult], content: ReportContent, out_dir: Path
) -> list[Path]:
    """Write index.html, one page per run and the SVG plots into ``out_dir``; returns them."""
    out_dir.mkdir(parents=True, exist_ok=True)
    from rexmle.analysis.taxonomy import classify

    failures = {str(r.path): classify(r).label for r in results}
    links = {str(r.path): _href(run_page_path(r)) for r in results}
    written: list[Path] = []
    for result in results:
        relative = run_page_path(result)
        target = out_dir / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        depth = relative.count("/")
        index_link = "../" * depth + "index.html"
        target.write_text(
            render_run_page(result, failures[str(result.path)], index_link), encoding="utf-8"
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
