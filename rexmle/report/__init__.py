"""Reports over many runs: collected results, the published-form leaderboard table, seed
statistics, Markdown and an HTML page with plots."""

from rexmle.report.collect import RunResult, collect_runs
from rexmle.report.render import write_report
from rexmle.report.tables import leaderboard_table, seed_statistics

__all__ = ["RunResult", "collect_runs", "leaderboard_table", "seed_statistics", "write_report"]
