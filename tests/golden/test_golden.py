"""Grades on legitimate and perturbed input stay exactly as frozen in ``tests/golden/*.json``.

Equality is exact (every float to the last bit): grading runs in one worker, so every sum is taken
in the same order, and JSON floats round-trip exactly. When a grade is meant to change, rerun
``tests/golden/make_golden.py`` and say why in the commit message.
"""

from __future__ import annotations

import json

import pytest
from golden_cases import VARIANTS, golden_path, grade_variant

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
        assert grade_variant(task_id, variant, dirs, work) == frozen[variant], variant


def test_perturbations_move_the_grades() -> None:
    """The frozen set is informative: each perturbation changes something for some task."""
    reports = {t: json.loads(golden_path(t).read_text(encoding="utf-8")) for t in TASKS}
    assert all(r["gold"]["valid"] and not r["missing-row"]["valid"] for r in reports.values())
    assert all(r["missing-row"]["reasons"] for r in reports.values())
    for variant in ("mixed", "shifted", "sample"):
        changed = [t for t, r in reports.items() if r[variant]["metrics"] != r["gold"]["metrics"]]
        assert len(changed) >= len(TASKS) // 2, (variant, changed)
