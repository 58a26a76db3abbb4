"""Reports over many runs: the run-table (one row per run), the published-form tables per group,
condition and data mode, seed statistics, Markdown, JSON and HTML with plots.
"""

from rexmle.records.results import RunResult
from rexmle.report.collect import collect_runs
from rexmle.report.runtable import run_table, write_run_table
from rexmle.report.tables import leaderboard_table, leaderboard_tables, seed_statistics
from rexmle.report.write import write_report

__all__ = [
    "RunResult",
    "collect_runs",
    "leaderboard_table",
    "leaderboard_tables",
    "run_table",
    "seed_statistics",
    "write_report",
    "write_run_table",
]
