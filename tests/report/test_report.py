"""Reports: the published form (row order, FAIL cells, overall row), seed statistics, files."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from rexmle.grading import grade_submission
from rexmle.grading.grader import write_report
from rexmle.records.results import RunResult
from rexmle.report import collect_runs, leaderboard_table, seed_statistics
from tests.run_records import write_run_json

# Published ranks (spec/paper-results.md) in the paper's row order; None = FAIL.
PAPER_ORDER = [
    "isles22", "neurips-cellseg", "panther-task1", "panther-task2", "puma-track1-task1",
    "puma-track2-task1", "seg_a", "topbrain-track1", "topbrain-track2", "topcow-track1-task1",
    "topcow-track2-task1", "dentex", "puma-track1-task2", "puma-track2-task2",
    "topcow-track1-task2", "topcow-track2-task2", "topcow-track1-task3", "topcow-track2-task3",
    "ldct-iqa", "usenhance",
]  # fmt: skip
AIDE = [0, 0, 16, 10, None, 0, 0, 2, 10, 0, 0, 0, 0, None, 38, 14, 33, 25, 33, 0]
RD_AGENT = [0, 0, 8, 58, 0, 0, 0, 2, 0, 2, 3, 0, 0, 0, 56, 14, 50, 0, 50, None]


def _result(task: str, agent: str, percent: int | None, seed: int = 0) -> RunResult:
    valid = percent is not None
    return RunResult(
        group="paper",
        task=task,
        agent=agent,
        seed=seed,
        status="completed" if valid else "invalid_submission",
        valid=valid,
        headline_key="x",
        headline_value=0.5 if valid else None,
        percentile=(percent or 0) / 100,
        medal=None,
        above_median=False,
        metrics={},
        reasons=[] if valid else ["no submission"],
        path=Path("."),
    )


def test_published_form_row_order_fail_cells_and_overall_row() -> None:
    results = [_result(t, "AIDE", p) for t, p in zip(PAPER_ORDER, AIDE, strict=True)]
    results += [_result(t, "R&D-Agent", p) for t, p in zip(PAPER_ORDER, RD_AGENT, strict=True)]
    table = leaderboard_table(results)
    assert list(table["task"])[:-2] == PAPER_ORDER
    assert table.loc[4, "AIDE value"] == "FAIL"
    assert table.loc[4, "AIDE rank"] == "--"
    assert table.loc[19, "R&D-Agent value"] == "FAIL"
    overall = table.iloc[-1]
    # AIDE: (16 + 10 + 2 + 10 + 38 + 14 + 33 + 25 + 33) / 20 = 181 / 20 = 9.05 %
    assert overall["AIDE rank"] == "9.05%"
    # R&D-Agent: (8 + 58 + 2 + 2 + 3 + 56 + 14 + 50 + 50) / 20 = 243 / 20 = 12.15 %
    assert overall["R&D-Agent rank"] == "12.15%"
    assert table.loc[0, "human"] == "0.79"  # ISLES'22 best dice 0.7869
    assert list(table["category"])[:-2].count("segmentation") == 11
    assert table.iloc[-2]["AIDE rank"] == "20"  # tasks run
    assert table.loc[0, "human N"] == str(10)  # rows of isles22.leaderboard.csv


def test_seed_statistics_and_bootstrap_interval() -> None:
    results = [
        _result("isles22", "a", 20, seed=0),
        _result("isles22", "a", 40, seed=1),
        _result("isles22", "a", None, seed=2),
        _result("dentex", "a", 60, seed=0),
    ]
    per_task, per_agent = seed_statistics(results, n_bootstrap=500, seed=1)
    isles = per_task[per_task["task"] == "isles22"].iloc[0]
    # percentiles 0.2, 0.4, 0 (failed seed): mean 0.2, sample std = sqrt(((0)^2+.2^2+.2^2)/2) = 0.2
    assert isles["percentile_mean"] == pytest.approx(0.2)
    assert isles["percentile_std"] == pytest.approx(0.2)
    assert (isles["seeds"], isles["valid"]) == (3, 2)
    agent = per_agent.iloc[0]
    # mean over tasks: (0.2 + 0.6) / 2 = 0.4; the bootstrap interval lies within [0.2, 0.6]
    assert agent["mean_percentile"] == pytest.approx(0.4)
    assert 0.0 <= agent["ci95_low"] <= 0.4 <= agent["ci95_high"] <= 0.6
    again = seed_statistics(results, n_bootstrap=500, seed=1)[1]
    assert again.equals(per_agent)


def _fake_run(runs: Path, agent: str, seed: int, report, status: str) -> None:
    folder = runs / "g" / "isles22" / agent / f"seed-{seed}"
    folder.mkdir(parents=True)
    # as the executor writes it: the config names the data asked for (here the mini prepare)
    write_run_json(folder, {"status": status, "config": {"mini": True}})
    if report is not None:
        write_report(report, folder / "grade.json")


def test_collect_and_cli_report_from_real_grades(prepared_mini, tmp_path) -> None:
    dirs = prepared_mini("isles22")
    data_dir = dirs.root.parent
    gold = grade_submission("isles22", dirs.gold, data_dir=data_dir, workers=1)
    sample = tmp_path / "sample"
    shutil.copytree(dirs.public / "predictions", sample / "predictions")
    shutil.copy(dirs.public / "sample_submission.csv", sample / "submission.csv")
    low = grade_submission("isles22", sample, data_dir=data_dir, workers=1)
    invalid = grade_submission("isles22", tmp_path / "absent", data_dir=data_dir, workers=1)
    runs = tmp_path / "runs"
    _fake_run(runs, "oracle", 0, gold, "completed")
    _fake_run(runs, "zeros", 0, low, "completed")
    _fake_run(runs, "zeros", 1, invalid, "invalid_submission")
    _fake_run(runs, "crash", 0, None, "agent_error")
    results = collect_runs(runs)
    assert [(r.agent, r.seed, r.valid) for r in results] == [
        ("crash", 0, False),
        ("oracle", 0, True),
        ("zeros", 0, True),
        ("zeros", 1, False),
    ]
    assert results[1].percentile == 1.0
    assert results[1].headline_value == 1.0
    html_path, md_path = tmp_path / "r.html", tmp_path / "r.md"
    done = subprocess.run(
        [sys.executable, "-m", "rexmle.cli", "report", str(runs), "--html", str(html_path),
         "--markdown", str(md_path), "--json", str(tmp_path / "r.json"),
         "--table", str(tmp_path / "runs.csv")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    page = html_path.read_text()
    assert page.count("<svg") == 3
    text = md_path.read_text()
    assert "| isles22 | segmentation | dice |" in text
    assert "FAIL" in text
    assert "Failed runs" in text
    assert json.loads((tmp_path / "r.json").read_text())["per_agent"][1]["mean_percentile"] == 1.0
    table = pd.read_csv(tmp_path / "runs.csv")
    assert len(table) == 4
    assert list(table["agent"]) == ["crash", "oracle", "zeros", "zeros"]
    assert table.loc[1, "percentile"] == 1.0
    assert table.loc[0, "status"] == "agent_error"
    assert "MINI data (synthetic)" in done.stdout
