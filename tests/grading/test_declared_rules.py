"""Declared spacing rules of label volumes and metrics aggregated over another per-case key."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from rexmle.grading.grader import aggregate_metrics
from rexmle.io import write_image
from rexmle.tasks.checks import SubmissionWarning, check_declared_file
from rexmle.tasks.registry import Task, get_task
from rexmle.tasks.rows import CaseRow
from rexmle.tasks.spec import FileRule, MetricSpec


def _rule(**extra) -> FileRule:
    return FileRule(
        format="label-volume", suffixes=[".mha"], grid_from="{case_id}.mha", values=[0, 1], **extra
    )


def test_a_spacing_beyond_the_tolerance_is_an_error_or_a_warning_as_declared(tmp_path) -> None:
    grid = np.zeros((4, 3, 2), np.uint8)
    write_image(tmp_path / "c1.mha", grid, spacing_mm=(0.8, 0.8, 3.0))
    mask = tmp_path / "mask.mha"
    # 0.8 -> 0.8001 on x: 1e-4 mm off, within a 1e-3 tolerance but not within 5e-5
    write_image(mask, grid, spacing_mm=(0.8001, 0.8, 3.0))
    assert check_declared_file(mask, _rule(spacing_tolerance_mm=1e-3), tmp_path, "c1") == []
    (error,) = check_declared_file(
        mask, _rule(spacing_tolerance_mm=5e-5, spacing="error"), tmp_path, "c1"
    )
    assert not isinstance(error, SubmissionWarning)
    assert "spacing (0.8001, 0.8, 3.0) mm" in error
    assert "(0.8, 0.8, 3.0) mm" in error
    (warning,) = check_declared_file(mask, _rule(spacing_tolerance_mm=5e-5), tmp_path, "c1")
    assert isinstance(warning, SubmissionWarning)
    assert check_declared_file(mask, _rule(), tmp_path, "c1") == []  # not compared


def test_mean_and_median_of_another_per_case_key() -> None:
    spec = get_task("isles22").model_copy(
        update={
            "metrics": [
                MetricSpec(
                    key="d_50pc", direction="higher", headline=True, aggregate="median", of="d"
                ),
                MetricSpec(key="d_mean", direction="higher", ranked=False, of="d"),
            ]
        }
    )
    rows = [CaseRow(f"c{i}", {"d": d}) for i, d in enumerate((0.5, 0.25, 1.0, 0.25))]
    # sorted (0.25, 0.25, 0.5, 1.0): median = (0.25 + 0.5) / 2 = 0.375; mean = 2.0 / 4 = 0.5
    assert aggregate_metrics(Task(spec), rows) == {"d_50pc": 0.375, "d_mean": 0.5}


def test_of_is_refused_for_dataset_metrics() -> None:
    with pytest.raises(ValidationError, match="'of' applies to mean and median"):
        MetricSpec(key="x", direction="lower", aggregate="dataset", of="y")
