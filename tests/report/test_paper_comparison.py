"""The paper comparison: the published table shipped as data, runs regraded with the study's
definitions, one table per condition, and the report option that chooses the definition set.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rexmle.grading import grade_submission
from rexmle.grading.grader import write_report
from rexmle.report import collect_runs
from rexmle.report.paper import PAPER_AGENTS, definitions_note, paper_comparisons, published_results
from rexmle.runner.regrade import regrade_runs, regraded_path
from rexmle.tasks.registry import all_tasks
from tests.run_records import write_run_json

TASK = "puma-track1-task2"


def test_published_table_holds_every_task_and_its_overall_means() -> None:
    cells = published_results()
    assert {task for task, _ in cells} == {*all_tasks(), "overall"}
    assert {agent for _, agent in cells} == set(PAPER_AGENTS)
    assert cells[("puma-track1-task1", "aide")].value is None  # FAIL
    assert cells[("topcow-track1-task2", "rdagent")].value == 0.70
    assert cells[("topcow-track1-task2", "rdagent")].rank_percent == 56
    # the overall row is the mean over the 20 tasks of the unrounded ranks, FAIL counted 0; the
    # cells are rounded to whole percents, so their mean is within 0.5 of it (AIDE and R&D-Agent
    # exactly: 181 / 20 and 243 / 20; ML-Master 86 / 20 = 4.30 against 4.53)
    for agent, published in (("aide", 9.05), ("ml-master", 4.53), ("rdagent", 12.15)):
        assert cells[("overall", agent)].rank_percent == published
        ranks = [cells[(t, agent)].rank_percent or 0.0 for t in all_tasks()]
        assert sum(ranks) / len(ranks) == pytest.approx(published, abs=0.5)


def _run(runs: Path, agent: str, condition: str, submission: Path, data_dir: Path) -> None:
    folder = runs / "paper" / TASK / agent / "seed-0"
    shutil.copytree(submission, folder / "submission")
    record = {
        "status": "completed",
        "config": {"mini": True},
        "condition": condition,
        "selection": "study" if agent == "aide" else "best-valid",
    }
    write_run_json(folder, record)
    grade = grade_submission(TASK, folder / "submission", data_dir=data_dir, workers=1)
    write_report(grade, folder / "grade.json")


@pytest.fixture
def runs(prepared_mini, tmp_path) -> tuple[Path, Path]:
    """Aide (the gold) and rdagent (the empty sample) under condition a; aide again under b."""
    dirs = prepared_mini(TASK)
    data_dir = dirs.root.parent
    sample = tmp_path / "sample"
    shutil.copytree(dirs.public / "predictions", sample / "predictions")
    shutil.copy(dirs.public / "sample_submission.csv", sample / "submission.csv")
    runs = tmp_path / "runs"
    _run(runs / "a", "aide", "a", dirs.gold, data_dir)
    _run(runs / "a", "rdagent", "a", sample, data_dir)
    _run(runs / "b", "aide", "b", dirs.gold, data_dir)
    return runs, data_dir


def _rows(table) -> dict[str, dict[str, str]]:
    return {row["agent"]: row for row in table.to_dict("records") if row["task"] == TASK}


def test_comparison_shows_official_study_and_published_per_condition(runs) -> None:
    runs_dir, data_dir = runs
    results = collect_runs(runs_dir)
    study = regrade_runs(results, "study", data_dir)
    tables = paper_comparisons(results, study)
    assert [key[1] for key, _ in tables] == ["a", "b"]  # never pooled across conditions
    rows = _rows(tables[0][1])
    assert rows["AIDE"]["official"] == "1.00"
    assert rows["AIDE"]["official rank"] == "100%"
    # which submission was graded is shown beside the value (run.json ``selection``)
    assert rows["AIDE"]["selection"] == "study"
    assert rows["R&D-Agent"]["selection"] == "best-valid"
    # the study's class table leaves the gold without TILs: about 0.5, last on the leaderboard
    assert rows["AIDE"]["study"] == "0.48"
    assert rows["AIDE"]["study rank"] == "0%"
    assert (rows["AIDE"]["published"], rows["AIDE"]["published rank"]) == ("0.02", "0%")
    assert rows["R&D-Agent"]["official"] == rows["R&D-Agent"]["study"] == "0.00"
    assert rows["R&D-Agent"]["published"] == "0.06"
    overall = {
        r["agent"]: r for r in tables[0][1].to_dict("records") if r["task"].startswith("Overall")
    }
    assert overall["AIDE"]["official rank"] == "100.00%"
    assert overall["AIDE"]["published rank"] == "9.05%"
    assert len(_rows(tables[1][1])) == 1
    # the study grade is a file of the run, and says which set it used
    record = json.loads(regraded_path(results[0], "study").read_text(encoding="utf-8"))
    assert record["definitions"] == "study"


def test_without_regrading_the_study_column_says_so(runs) -> None:
    runs_dir, _ = runs
    (_key, table), *_ = paper_comparisons(collect_runs(runs_dir))
    assert set(table["study"]) == {"not regraded"}
    assert "study" not in definitions_note(study=False).split("ours")[1].split(";")[0]


def _report(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rexmle.cli", "report", *args],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip


def test_report_option_chooses_the_definition_set(runs, tmp_path) -> None:
    runs_dir, data_dir = runs
    both = tmp_path / "both.md"
    done = _report(str(runs_dir), "--definitions", "both", "--data-dir", str(data_dir),
                   "--markdown", str(both))  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = both.read_text(encoding="utf-8")
    assert "## Paper comparison" in text
    assert "docs/study-errata.md" in text
    assert f"| {TASK} | AIDE | study | f1 | 1.00 | 100% | 0.48 | 0% | 0.02 | 0% |" in text
    # the leaderboard of the report stays official under "both"; "study" regrades it
    assert f"| {TASK} | detection | f1 | 1.00 |" in text
    study = tmp_path / "study.md"
    done = _report(str(runs_dir), "--definitions", "study", "--data-dir", str(data_dir),
                   "--markdown", str(study))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"| {TASK} | detection | f1 | 0.48 |" in study.read_text(encoding="utf-8")


def test_report_refuses_to_regrade_without_the_private_data(runs, tmp_path) -> None:
    runs_dir, _ = runs
    done = _report(str(runs_dir), "--definitions", "study", "--data-dir", str(tmp_path / "none"))
    assert done.returncode == 2
    assert f"{TASK} is not prepared" in done.stderr
    assert "rexmle prepare" in done.stderr
    bad = _report(str(runs_dir), "--definitions", "paper")
    assert bad.returncode == 2
    assert "official, study or both" in bad.stderr
