"""Report tables for the terminal: readable at 100-120 columns.

Cells wrap instead of being cut (``overflow="fold"``), numbers are written as on the HTML pages
(:func:`rexmle.report.htmlpage.cell_text`), and a leaderboard with more than
:data:`rexmle.report.tables.WIDE_AGENTS` agents is printed with agents as rows, one table per
task category (:func:`rexmle.report.tables.agent_rows`).
"""

from __future__ import annotations

import pandas as pd
from rich.table import Table

from rexmle.report.htmlpage import cell_text
from rexmle.report.tables import WIDE_AGENTS, agent_rows, agents_of_board


def frame_table(frame: pd.DataFrame, title: str, *, keep_first: bool = False) -> Table:
    """A Rich table of ``frame`` whose cells and headers wrap to fit the terminal;
    ``keep_first``: the first column (the agent) is never wrapped.
    """
    table = Table(title=title, expand=False)
    columns = [str(c) for c in frame.columns]
    for number, column in enumerate(columns):
        table.add_column(column, overflow="fold", no_wrap=keep_first and number == 0)
    for row in frame.itertuples(index=False):
        table.add_row(*[cell_text(v, c) for c, v in zip(columns, row, strict=True)])
    return table


def leaderboard_console_tables(board: pd.DataFrame, title: str) -> list[Table]:
    """The published-form table as it is for a few agents; agents as rows, one table per
    category, above :data:`rexmle.report.tables.WIDE_AGENTS` agents.
    """
    if len(agents_of_board(board)) <= WIDE_AGENTS:
        return [frame_table(board, title)]
    return [
        frame_table(table, f"{title} · {category}", keep_first=True)
        for category, table in agent_rows(board)
    ]
