"""HTML building blocks of every report page: the page shell with its inline style, tables that
sort and filter in the browser, banners, and numbers and times written for people.

Pages load nothing from the network: the style and the one table script are inline.

Number display (:func:`human_number`): integers and floats of magnitude at least 1000 get
thousands separators (``86,400``; floats are rounded to whole units); smaller floats keep four
significant digits (``0.8123``, ``12.35``); below 1e-3 they are written in scientific notation;
NaN is ``n/a``. Durations (:func:`human_seconds`) read ``45 s``, ``12 min 05 s``,
``3 h 20 min``. A number in a column whose name says it is a time stamp (``*_at``, ``time``,
``ctime``) is read as POSIX seconds and written as UTC ``YYYY-MM-DD HH:MM:SS``.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from datetime import UTC, datetime

import pandas as pd

STYLE = (
    "body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px}"
    "table{border-collapse:collapse;font-size:13px;margin-bottom:1em}td,th{padding:3px 8px;"
    "border-bottom:1px solid #ddd;text-align:right}th{background:#f3f3f3}"
    "table.sortable th{cursor:pointer;user-select:none}table.sortable th[data-dir=asc]::after"
    "{content:' \\25B2'}table.sortable th[data-dir=desc]::after{content:' \\25BC'}"
    "td.text,th.text{text-align:left}.scroll{overflow-x:auto;max-width:100%}"
    ".banner{padding:.6em 1em;margin:.6em 0;border-radius:4px;font-weight:600}"
    ".mini{background:#ffe08a;border:2px solid #b58900}"
    ".warn{background:#fde2e1;border:2px solid #c0392b}"
    ".note{background:#eef3fb;border:1px solid #9bb3d9;font-weight:normal}"
    "svg.plot{display:block;margin:1em 0;max-width:100%;height:auto}"
    "td.reason{text-align:left;max-width:60em}"
    "pre.log{max-height:40em;overflow:auto;background:#f7f7f7;padding:.5em;white-space:pre-wrap}"
    "figure.overlay{display:inline-block;margin:.5em;vertical-align:top}"
    "figure.overlay img{display:block;max-width:100%}"
    ".slices button{margin:0 .2em .3em 0}.slices button.on{background:#1f77b4;color:#fff}"
    "table.summary th{text-align:left}input.tablefilter{margin:.3em 0}"
    "table.fit{width:100%;table-layout:fixed}table.fit th,table.fit td{overflow-wrap:anywhere}"
    "table.fit th:first-child,table.fit td:first-child{width:11em}"
)
TABLE_SCRIPT = (
    "function rexmleKey(t){const s=t.replace(/[,%\\u2020]/g,'').trim();const n=parseFloat(s);"
    "return isNaN(n)||!/^[-+]?[0-9.]/.test(s)?[1,t.toLowerCase()]:[0,n];}"
    "for(const table of document.querySelectorAll('table.sortable')){"
    "const heads=table.tHead?table.tHead.rows[0].cells:[];"
    "Array.from(heads).forEach((th,col)=>th.addEventListener('click',()=>{"
    "const dir=th.dataset.dir==='asc'?'desc':'asc';for(const h of heads)delete h.dataset.dir;"
    "th.dataset.dir=dir;const body=table.tBodies[0];const rows=Array.from(body.rows);"
    "const pinned=rows.filter(r=>r.classList.contains('pinned'));"
    "const free=rows.filter(r=>!r.classList.contains('pinned'));"
    "free.sort((a,b)=>{const x=rexmleKey(a.cells[col].textContent),"
    "y=rexmleKey(b.cells[col].textContent);const c=x[0]-y[0]||(x[1]<y[1]?-1:x[1]>y[1]?1:0);"
    "return dir==='asc'?c:-c;});for(const r of [...free,...pinned])body.appendChild(r);}));}"
    "for(const box of document.querySelectorAll('input.tablefilter')){"
    "const table=document.getElementById(box.dataset.table);"
    "box.addEventListener('input',()=>{const q=box.value.toLowerCase();let n=0;"
    "for(const r of table.tBodies[0].rows){const hit=r.textContent.toLowerCase().includes(q);"
    "r.style.display=hit?'':'none';n+=hit;}"
    "box.nextElementSibling.textContent=q?n+' row(s)':'';});}"
)
TIME_STAMP_COLUMNS = ("started_at", "finished_at", "time", "ctime", "created_at", "updated_at")


def human_number(value: float | int) -> str:
    """``value`` for people (see the module docstring)."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if math.isnan(value):
        return "n/a"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    magnitude = abs(value)
    if magnitude >= 1000:
        return f"{value:,.0f}"
    if magnitude == 0 or magnitude >= 1e-3:
        text = f"{value:.4g}"
        return text if "e" not in text else f"{value:.4f}"
    return f"{value:.2e}"


def human_seconds(seconds: float) -> str:
    """A duration as ``45 s``, ``12 min 05 s`` or ``3 h 20 min`` (``n/a`` for NaN)."""
    if math.isnan(seconds):
        return "n/a"
    if seconds < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def human_time(posix_seconds: float) -> str:
    """POSIX seconds as UTC ``YYYY-MM-DD HH:MM:SS``."""
    return datetime.fromtimestamp(posix_seconds, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def human_iso(text: str) -> str:
    """An ISO 8601 time stamp as ``YYYY-MM-DD HH:MM:SS`` (with ``UTC`` for UTC, else its
    offset); other text is returned as it is.
    """
    try:
        stamp = datetime.fromisoformat(text)
    except ValueError:
        return text
    shown = stamp.strftime("%Y-%m-%d %H:%M:%S")
    offset = stamp.utcoffset()
    if offset is None:
        return shown
    return f"{shown} UTC" if not offset else f"{shown} {stamp.strftime('%z')}"


def cell_text(value: object, column: str = "") -> str:
    """One table cell as text: numbers by :func:`human_number` (time stamps by
    :func:`human_time` in the columns named ``TIME_STAMP_COLUMNS``), None and NA empty.
    """
    if value is None or value is pd.NA:
        return ""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int | float):
        number = float(value)
        if column in TIME_STAMP_COLUMNS and math.isfinite(number) and number > 1e8:
            return human_time(number)
        return human_number(value if isinstance(value, int) else number)
    if hasattr(value, "item") and not isinstance(value, str):  # numpy scalars
        return cell_text(value.item(), column)
    return str(value)


def _is_text_column(values: Sequence[object]) -> bool:
    return any(isinstance(v, str) and v and not _numeric_text(v) for v in values)


def _numeric_text(text: str) -> bool:
    try:
        float(text.replace(",", "").rstrip("%†").strip() or "x")
    except ValueError:
        return text.strip() in ("FAIL", "--", "n/a")
    return True


def html_table(
    frame: pd.DataFrame,
    *,
    table_id: str | None = None,
    links: Sequence[dict[str, str]] | None = None,
    pinned_rows: int = 0,
    filter_box: bool = False,
) -> str:
    """A table that sorts by a click on its header and, with ``filter_box``, filters its rows
    by a search box; ``links`` maps, per row, column names to the href of that cell;
    the last ``pinned_rows`` rows (summaries) stay at the bottom when sorting.
    """
    if frame.empty:
        return "<p><em>none</em></p>"
    columns = [str(c) for c in frame.columns]
    text_columns = {
        c for c, name in zip(frame.columns, columns, strict=True) if _is_text_column(list(frame[c]))
    } | {"reason"}
    head = "".join(
        f"<th class='text'>{html.escape(c)}</th>"
        if c in text_columns
        else f"<th>{html.escape(c)}</th>"
        for c in columns
    )
    body = []
    n_rows = len(frame)
    for number, row in enumerate(frame.itertuples(index=False)):
        cells = []
        row_links = links[number] if links is not None else {}
        for column, value in zip(columns, row, strict=True):
            text = html.escape(cell_text(value, column))
            if column in row_links and text:
                text = f"<a href='{html.escape(row_links[column])}'>{text}</a>"
            klass = "reason" if column == "reason" else "text" if column in text_columns else ""
            cells.append(f"<td class='{klass}'>{text}</td>" if klass else f"<td>{text}</td>")
        pinned = " class='pinned'" if number >= n_rows - pinned_rows else ""
        body.append(f"<tr{pinned}>" + "".join(cells) + "</tr>")
    ident = f" id='{html.escape(table_id)}'" if table_id else ""
    table = (
        f"<div class='scroll'><table class='sortable'{ident}><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )
    if filter_box and table_id:
        table = (
            f"<input class='tablefilter' data-table='{html.escape(table_id)}' "
            f"placeholder='filter rows'><span></span>" + table
        )
    return table


def page(title: str, body: str, *, script: str = "") -> str:
    """A complete self-contained HTML page: inline style, the table script, ``script``."""
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>"
        f"{body}<script>{TABLE_SCRIPT}{script}</script></body></html>\n"
    )
