"""Named definition sets: the study's rounding and medal rule, the grade record, the CLI option."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rexmle.errors import SpecError
from rexmle.grading import grade_submission, read_grade_report
from rexmle.grading.grader import ranking_rounding
from rexmle.ranking import Leaderboard
from rexmle.tasks.definitions import DEFINITION_SETS, parse_definitions
from rexmle.tasks.registry import STUDY_FUNCTION_NAMES, all_tasks, load_task, resolve_function

STUDY_TASKS = {
    "dentex",
    "panther-task1",
    "panther-task2",
    "puma-track1-task2",
    "puma-track2-task2",
    "seg_a",
    "topbrain-track1",
    "topbrain-track2",
    "topcow-track1-task1",
    "topcow-track1-task2",
    "topcow-track2-task1",
    "topcow-track2-task2",
    "usenhance",
}
"""The 13 tasks whose study definitions differ from the official ones (docs/study-errata.md)."""


def _board() -> Leaderboard:
    # rows among themselves: A (1, 1, 2) -> 4/3, B (2, 2, 1) -> 5/3, C (3, 3, 3) -> 3
    values = {"m1": [0.9, 0.8, 0.7], "m2": [0.9, 0.8, 0.7], "m3": [5.0, 4.0, 6.0]}
    return Leaderboard(
        "t",
        ("A", "B", "C"),
        {m: np.array(v) for m, v in values.items()},
        {"m1": "higher", "m2": "higher", "m3": "lower"},
    )


def test_exactly_the_thirteen_differing_tasks_declare_study_functions() -> None:
    declared = {t for t in all_tasks() if load_task(t).has_study_definitions()}
    assert declared == STUDY_TASKS


@pytest.mark.parametrize("task_id", sorted(STUDY_TASKS))
def test_every_study_function_resolves(task_id: str) -> None:
    study = load_task(task_id).spec.functions.study  # type: ignore[union-attr]
    named = [getattr(study, n) for n in STUDY_FUNCTION_NAMES if getattr(study, n) is not None]
    assert named
    assert all(callable(resolve_function(load_task(task_id).spec.family, d)) for d in named)


def test_unknown_definition_set_is_refused_with_the_known_ones() -> None:
    assert parse_definitions("study") == "study"
    with pytest.raises(SpecError, match="known sets: official, study"):
        parse_definitions("paper")
    assert DEFINITION_SETS == ("official", "study")


def test_study_medals_compare_with_two_decimal_thresholds() -> None:
    board = _board()
    # the submission ties row A: positions (1, 1, 2), mean 4/3
    values = {"m1": 0.9, "m2": 0.9, "m3": 5}
    official = board.rank(values)
    study = board.rank(values, rounding=ranking_rounding("study"))
    assert official.mean_position == 4 / 3
    assert official.thresholds.gold == 4 / 3
    assert official.medal == "gold"
    # study: threshold round(4/3, 2) = 1.33 < round(4/3, 5) = 1.33333 -> silver (5/3 -> 1.67)
    assert study.thresholds.gold == 1.33
    assert study.thresholds.silver == 1.67
    assert study.mean_position == 1.33333
    assert study.medal == "silver"
    # percentile 1 - (4/3 - 1) / 3 = 8/9, rounded to 5 decimals
    assert official.percentile == 1 - (4 / 3 - 1) / 3
    assert study.percentile == 0.88889
    assert ranking_rounding("official") is None


def test_study_positions_compare_unrounded_values() -> None:
    board = _board()
    # 0.9000004 rounds to 0.9 at 5 decimals but is strictly better than row A
    study = board.rank({"m1": 0.9000004, "m2": 0.9, "m3": 5}, rounding=ranking_rounding("study"))
    assert study.positions["m1"] == 1.0
    worse = board.rank({"m1": 0.8999996, "m2": 0.9, "m3": 5}, rounding=ranking_rounding("study"))
    assert worse.positions["m1"] == 2.0


def test_the_grade_record_names_the_study_set_and_rounds_to_five_decimals(
    prepared_mini, tmp_path
) -> None:
    dirs = prepared_mini("usenhance")
    data_dir = dirs.root.parent
    official = grade_submission("usenhance", dirs.gold, data_dir=data_dir, workers=1)
    study = grade_submission(
        "usenhance", dirs.gold, data_dir=data_dir, workers=1, definitions="study"
    )
    assert official.definitions == "official"
    assert "definitions" not in official.model_dump()  # official reports keep their exact form
    assert study.model_dump()["definitions"] == "study"
    assert all(v == round(v, 5) for v in study.metrics.values())
    path = tmp_path / "grade.json"
    path.write_text(study.model_dump_json(), encoding="utf-8")
    assert read_grade_report(path).definitions == "study"


def _rexmle(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rexmle.cli", *args],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def test_cli_grades_with_the_study_definitions(prepared_mini, tmp_path) -> None:
    dirs = prepared_mini("puma-track1-task2")
    out = tmp_path / "grade.json"
    base = ("grade", "puma-track1-task2", str(dirs.gold), "--data-dir", str(dirs.root.parent))
    done = _rexmle(*base, "--workers", "1", "--definitions", "study", "--json", str(out))
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["definitions"] == "study"
    assert report["metrics"]["f1"] < 0.6
    assert "definitions: study" in done.stdout
    bad = _rexmle(*base, "--definitions", "paper")
    assert bad.returncode == 2
    assert "known sets: official, study" in bad.stderr


AGREEING_TASKS = sorted(set(all_tasks()) - STUDY_TASKS)


def test_seven_tasks_agree() -> None:
    assert AGREEING_TASKS == [
        "isles22",
        "ldct-iqa",
        "neurips-cellseg",
        "puma-track1-task1",
        "puma-track2-task1",
        "topcow-track1-task3",
        "topcow-track2-task3",
    ]


@pytest.mark.parametrize("task_id", AGREEING_TASKS)
def test_agreeing_tasks_grade_the_same_under_both_sets(task_id, prepared_mini, tmp_path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "golden"))
    from golden_cases import build_submission

    dirs = prepared_mini(task_id)
    for variant in ("gold", "sample", "mixed", "shifted"):
        submission = build_submission(task_id, variant, dirs, tmp_path / variant)
        official, study = (
            grade_submission(
                task_id, submission, data_dir=dirs.root.parent, workers=1, definitions=d
            )
            for d in ("official", "study")
        )
        assert study.cases == official.cases, variant
        assert study.metrics == {k: round(v, 5) for k, v in official.metrics.items()}, variant
        assert study.ranking.positions == official.ranking.positions, variant
