"""Aggregation follows the YAML's declaration and refuses a scorer that does not match it."""

from __future__ import annotations

import numpy as np
import pytest

from rexmle.challenges.ldct_iqa import metrics as ldct_metrics
from rexmle.challenges.usenhance import metrics as usenhance_metrics
from rexmle.errors import HarnessError
from rexmle.grading import grade_submission
from rexmle.tasks.rows import CaseRow


def test_declared_means_equal_numpy_means_of_the_case_rows(prepared_mini) -> None:
    dirs = prepared_mini("usenhance")
    report = grade_submission("usenhance", dirs.gold, data_dir=dirs.root.parent, workers=1)
    for key in ("lncc", "psnr", "ssim"):
        assert report.metrics[key] == float(np.mean([case[key] for case in report.cases]))


def test_an_undeclared_key_from_aggregate_is_a_harness_error(prepared_mini, monkeypatch) -> None:
    dirs = prepared_mini("ldct-iqa")
    original = ldct_metrics.aggregate

    def with_extra(rows, spec):
        return {**original(rows, spec), "rmse": 0.1}

    monkeypatch.setattr(ldct_metrics, "aggregate", with_extra)
    with pytest.raises(HarnessError, match=r"aggregate returned \['rmse'\].*does not declare"):
        grade_submission("ldct-iqa", dirs.gold, data_dir=dirs.root.parent, workers=1)


def test_a_mean_over_a_missing_case_value_is_a_harness_error(prepared_mini, monkeypatch) -> None:
    dirs = prepared_mini("usenhance")
    original = usenhance_metrics.score_case

    def without_ssim(case):
        row = original(case)
        return CaseRow(row.case_id, {k: v for k, v in row.values.items() if k != "ssim"})

    monkeypatch.setattr(usenhance_metrics, "score_case", without_ssim)
    with pytest.raises(HarnessError, match=r"ssim is the mean of the cases' 'ssim'"):
        grade_submission("usenhance", dirs.gold, data_dir=dirs.root.parent, workers=1)
