"""What ``rexmle report --html DIR/`` says it wrote: its run pages and its plots, counted apart."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.run_records import write_run_json


def _failed_run(runs: Path, task: str, agent: str) -> None:
    folder = runs / "study" / task / agent / "seed-0"
    folder.mkdir(parents=True)
    config = {"mini": True, "time_limit_s": 600.0, "agent": {"id": agent, "kind": "command"}}
    write_run_json(
        folder, {"status": "agent_error", "error": "exited with code 1", "config": config}
    )


def test_the_summary_line_counts_run_pages_and_plots_as_they_are_on_disk(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    _failed_run(runs, "isles22", "first")
    _failed_run(runs, "seg_a", "second")
    _failed_run(runs, "seg_a", "third")
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "rexmle.cli", "report", str(runs), "--html", f"{site}/"],
        capture_output=True, text=True, timeout=300, check=False,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "120", "REXMLE_DATA_DIR": str(tmp_path / "d")},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    pages = sorted((site / "runs").rglob("*.html"))
    plots = sorted(p for p in (site / "plots").rglob("*") if p.is_file())
    assert len(pages) == 3
    assert f"wrote {len(pages)} run pages and {len(plots)} plots under {site}" in done.stdout
