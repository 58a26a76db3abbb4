"""read_grade_report: the one reader of grade.json, and the headline value derived from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from rexmle.errors import RexmleError
from rexmle.grading.report import read_grade_report
from tests.grade_reports import grade_report_json


def test_a_written_report_reads_back_with_the_declared_headline(tmp_path: Path) -> None:
    path = tmp_path / "grade.json"
    metrics = {"avd_ml": 3.5, "dice": 0.71, "f1": 0.4}
    path.write_text(grade_report_json("isles22", valid=True, metrics=metrics, percentile=0.25))
    report = read_grade_report(path)
    assert report.task == "isles22"
    assert report.valid
    assert report.ranking.percentile == 0.25
    # isles22.yaml marks dice as the headline metric
    assert (report.headline_key, report.headline_value) == ("dice", 0.71)


def test_an_invalid_report_has_no_headline_value(tmp_path: Path) -> None:
    path = tmp_path / "grade.json"
    path.write_text(grade_report_json("isles22", valid=False, reasons=["row 2: missing"]))
    report = read_grade_report(path)
    assert report.reasons == ["row 2: missing"]
    assert report.headline_key == "dice"
    assert report.headline_value is None


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"task": "isles22", "valid": tr', "Invalid JSON"),
        ("[1, 2]", "Input should be an object"),
        ('{"task": "isles22", "valid": true, "reasons": []}', "metrics: Field required"),
        (
            grade_report_json("isles22", valid=True).replace('"seconds":0.0', '"seconds":"soon"'),
            "seconds: Input should be a valid number",
        ),
    ],
)
def test_a_broken_file_is_named_with_what_is_wrong(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "grade.json"
    path.write_text(text)
    with pytest.raises(RexmleError, match="is not a grade report") as caught:
        read_grade_report(path)
    assert str(path) in str(caught.value)
    assert said in str(caught.value)


def test_a_missing_or_undecodable_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RexmleError, match="cannot read the grade report"):
        read_grade_report(tmp_path / "absent.json")
    (tmp_path / "latin.json").write_bytes(b'{"task": "\xe9"}')
    with pytest.raises(RexmleError, match="cannot read the grade report"):
        read_grade_report(tmp_path / "latin.json")
