"""`--json` on list and info, and full-width tables when the output is piped."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from rexmle.tasks.registry import all_tasks


def _rexmle(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rexmle.cli", *args],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_list_json_names_every_task(tmp_path) -> None:
    done = _rexmle("list", "--json", "--data-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert [r["id"] for r in rows] == list(all_tasks())
    isles = next(r for r in rows if r["id"] == "isles22")
    assert (isles["headline"], isles["prepared"], isles["type"]) == ("dice", "-", "segmentation")


def test_info_json_counts_the_leaderboard_rows(tmp_path) -> None:
    done = _rexmle("info", "topcow-track1-task2", "--json", "--data-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    source = "rexmle/challenges/topcow/topcow-track1-task2.leaderboard.csv"
    text = (Path(__file__).resolve().parents[2] / source).read_text()
    rows = [line for line in text.splitlines()[1:] if line.strip()]
    assert payload["leaderboard"]["n_rows"] == len(rows)
    assert payload["leaderboard"]["source"] == source
    assert payload["id"] == "topcow-track1-task2"
    assert payload["prepared"] == "-"
    unknown = _rexmle("info", "no-such-task", "--json")
    assert unknown.returncode == 2
    assert "no-such-task" in unknown.stderr


def test_piped_tables_are_not_cut_to_80_columns(tmp_path) -> None:
    done = _rexmle("list", "--data-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    header = next(line for line in lines if "implemented" in line)
    assert "prepared" in header
    assert "modality" in header
    assert max(len(line) for line in lines) > 80
    for spec in all_tasks().values():
        row = next(line for line in lines if f" {spec.id} " in line)
        assert spec.modality in row  # the whole cell, on the task's own line


def test_grading_on_mini_data_says_so(prepared_mini) -> None:
    dirs = prepared_mini("isles22")
    done = _rexmle("grade", "isles22", str(dirs.gold), "--data-dir", str(dirs.root.parent),
                   "--workers", "1")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "MINI DATA" in done.stderr
    assert "REAL human leaderboards" in done.stderr
