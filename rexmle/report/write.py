"""Write the report files a user asked for: Markdown, JSON, one HTML page or the run browser."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from rexmle.records.results import RunResult
from rexmle.report.browser import write_browser
from rexmle.report.render import (
    Appendix,
    render_html,
    render_json,
    render_markdown,
    report_content,
)


def is_browser_target(path: Path) -> bool:
    """``--html`` names a folder (the run browser) when it exists as one or has no .html name."""
    return path.is_dir() or path.suffix.lower() not in (".html", ".htm")


def write_report(
    results: Sequence[RunResult],
    *,
    markdown: Path | None = None,
    html_path: Path | None = None,
    json_path: Path | None = None,
    data_dir: Path | None = None,
    appendix: Appendix | None = None,
) -> list[Path]:
    """Write the requested report files (parents created); returns the files written.

    ``html_path`` naming a folder writes the run browser there (index.html and one page per
    run, :mod:`rexmle.report.browser`); a ``.html`` name writes the single report page.
    ``appendix`` adds already rendered sections to the Markdown and HTML reports.
    """
    content = report_content(results, data_dir=data_dir)
    if appendix is not None:
        content = dataclasses.replace(content, appendix=appendix)
    written: list[Path] = []
    for path, render in (
        (markdown, render_markdown),
        (json_path, render_json),
    ):
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(render(results, content=content), encoding="utf-8")
            written.append(path)
    if html_path is not None:
        if is_browser_target(html_path):
            written += write_browser(results, content, html_path)
        else:
            html_path.parent.mkdir(parents=True, exist_ok=True)
            html_path.write_text(render_html(results, content=content), encoding="utf-8")
            written.append(html_path)
    return written
