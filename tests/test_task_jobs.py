"""The baseline's job: the declared columns, the test ids of the sample, the submission CSV."""

from __future__ import annotations

import pytest

from rexmle.tasks.files import write_csv
from rexmle.tasks.jobs import BaselineJob
from rexmle.tasks.registry import get_task


def test_baseline_job_reads_the_sample_ids_and_writes_the_declared_header(tmp_path) -> None:
    spec = get_task("isles22")
    public, submission = tmp_path / "public", tmp_path / "submission"
    header = ("case_id", "predicted_mask_path")
    write_csv(public / "sample_submission.csv", header, [("b", "x"), ("a", "y")])
    job = BaselineJob(public=public, submission=submission, task=spec)
    assert job.columns == header
    assert job.test_ids() == ["b", "a"]  # file order, not sorted
    job.write_submission_csv([("b", "p/b.nii.gz")])
    text = (submission / "submission.csv").read_text(encoding="utf-8")
    assert text.splitlines() == ["case_id,predicted_mask_path", "b,p/b.nii.gz"]


def test_a_task_without_declared_columns_is_refused(tmp_path) -> None:
    spec = get_task("isles22").model_copy(update={"submission": None})
    job = BaselineJob(public=tmp_path, submission=tmp_path, task=spec)
    with pytest.raises(ValueError, match="no submission columns are declared"):
        _ = job.columns
