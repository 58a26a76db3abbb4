"""Grades on legitimate and perturbed input stay exactly as frozen in ``tests/golden/*.json``.

Equality is exact for everything but floats, and floats agree to a relative 1e-12 (see
``golden_cases.differences`` for why the last bit may differ between processors): grading runs
in one worker, so every sum is taken in the same order, and JSON floats round-trip exactly. When
a grade is meant to change, rerun ``tests/golden/make_golden.py`` and say why in the commit
message.
"""

from __future__ import annotations

import json

import pytest
from golden_cases import VARIANTS, differences, golden_path, grade_variant

from rexmle.tasks.registry import all_tasks

TASKS = sorted(all_tasks())


def test_every_task_and_variant_is_frozen() -> None:
    for task_id in TASKS:
        frozen = json.loads(golden_path(task_id).read_text(encoding="utf-8"))
        assert sorted(frozen) == sorted(VARIANTS), task_id


@pytest.mark.parametrize("task_id", TASKS)
def test_grades_equal_the_frozen_reports(task_id, prepared_mini, tmp_path) -> None:
    dirs = prepared_mini(task_id)
    frozen = json.loads(golden_path(task_id).read_text(encoding="utf-8"))
    for variant in VARIANTS:
        work = tmp_path / variant
        work.mkdir()
        found = differences(grade_variant(task_id, variant, dirs, work), frozen[variant])
        assert not found, (variant, found[:10])


def test_perturbations_move_the_grades() -> None:
    """The frozen set is informative: each perturbation changes something for some task."""
    reports = {t: json.loads(golden_path(t).read_text(encoding="utf-8")) for t in TASKS}
    assert all(r["gold"]["valid"] and not r["missing-row"]["valid"] for r in reports.values())
    assert all(r["missing-row"]["reasons"] for r in reports.values())
    for variant in ("mixed", "shifted", "sample"):
        changed = [t for t, r in reports.items() if r[variant]["metrics"] != r["gold"]["metrics"]]
        assert len(changed) >= len(TASKS) // 2, (variant, changed)


def test_the_comparison_sees_every_real_change_and_no_rounding_residue() -> None:
    report = {"valid": True, "metrics": {"dice": 0.75, "n": 3}, "cases": [{"id": "01", "d": 1.0}]}
    same = json.loads(json.dumps(report))
    assert differences(same, report) == []
    same["metrics"]["dice"] = 0.75 * (1 + 4e-16)  # a couple of units in the last place
    assert differences(same, report) == []
    for path, value in (("dice", 0.75 + 1e-9), ("n", 4)):
        changed = json.loads(json.dumps(report))
        changed["metrics"][path] = value
        assert differences(changed, report) == [
            f".metrics.{path}: {value!r} != {report['metrics'][path]!r}"
        ]
    changed = json.loads(json.dumps(report))
    changed["cases"][0]["id"] = "1"
    assert differences(changed, report) == [".cases[0].id: '1' != '01'"]
    changed = json.loads(json.dumps(report))
    changed["valid"] = 1
    assert differences(changed, report)
    assert differences({**report, "extra": 1}, report)
    assert differences({**report, "cases": []}, report)
