"""`--json` on list and info, and full-width tables when the output is piped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from rexmle.tasks.registry import all_tasks
from tests.run_records import write_run_json


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
    said = " ".join(done.stderr.split())
    assert "MINI DATA: this grade is of the synthetic mini suite" in said
    assert "run(s)" not in said  # one grade, no run
    assert "REAL human leaderboards" in said


def _ten_agent_board():
    import pandas as pd

    from rexmle.report.tables import leaderboard_table

    tasks = ["isles22", "seg_a", "topcow-track1-task1", "panther-task1", "dentex", "ldct-iqa"]
    rows = []
    for a in range(10):
        for number, task in enumerate(tasks):
            rows.append(
                {"group": "paper", "condition": "", "data": "full", "task": task,
                 "agent": f"agent-with-a-long-name-{a}", "seed": 0, "scored": True,
                 "isolated": True, "headline_value": 0.05 * a + 0.01 * number,
                 "percentile": a / 10}
            )  # fmt: skip
    return leaderboard_table(pd.DataFrame(rows))


def test_a_ten_agent_leaderboard_reads_at_120_columns() -> None:
    from rich.console import Console

    from rexmle.report.console import leaderboard_console_tables

    board = _ten_agent_board()
    terminal = Console(width=120, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    tables = leaderboard_console_tables(board, "paper")
    assert len(tables) == 3  # one per category present: agents as rows
    for table in tables:
        terminal.print(table)
        lines = terminal.export_text().splitlines()
        for a in range(10):  # in every table every agent whole, on its own row
            assert any(f"agent-with-a-long-name-{a} " in line for line in lines)
    terminal.print(*tables)
    text = terminal.export_text()
    assert max(len(line) for line in text.splitlines()) <= 120
    assert "…" not in text  # nothing cut
    assert "overall mean" in text
    assert "90.00%" in text  # the best agent's overall mean percentile


def test_analyze_takes_the_data_dir_from_the_environment(prepared_mini, tmp_path) -> None:
    import shutil

    from rexmle.grading import grade_submission
    from rexmle.grading.grader import write_report

    dirs = prepared_mini("isles22")
    folder = tmp_path / "runs" / "paper" / "isles22" / "oracle" / "seed-0"
    folder.mkdir(parents=True)
    write_run_json(folder, {"status": "completed", "config": {"mini": True}})
    shutil.copytree(dirs.gold, folder / "submission")
    report = grade_submission("isles22", folder / "submission", data_dir=dirs.root.parent,
                              workers=1)  # fmt: skip
    write_report(report, folder / "grade.json")
    out = tmp_path / "analysis.json"
    done = subprocess.run(
        [sys.executable, "-m", "rexmle.cli", "analyze", str(tmp_path / "runs"), "--json", str(out)],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "REXMLE_DATA_DIR": str(dirs.root.parent)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    geometry = json.loads(out.read_text())["runs"][0]["geometry"]
    assert geometry["kind"] == "ok", geometry
    assert geometry["cases_examined"] >= 1
