"""LDCT-IQA on the mini fixture: official sets, correlations by hand, validity of scores and ids."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from rexmle.grading import grade_submission, validate_submission

TASK = "ldct-iqa"
# test.json of the fixture: 0000 .. 0005 -> these reference scores (one tie)
REFERENCE = {"0000": 0.6, "0001": 1.4, "0002": 2.2, "0003": 2.2, "0004": 3.0, "0005": 3.8}


@pytest.fixture(scope="module")
def dirs(prepared_mini):
    return prepared_mini(TASK)


def _submit(tmp_path: Path, rows: list[tuple[str, str]]) -> Path:
    folder = tmp_path / "sub"
    folder.mkdir(exist_ok=True)
    with open(folder / "submission.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(("image_id", "quality_score"))
        writer.writerows(rows)
    return folder


def _grade(dirs, folder):
    return grade_submission(TASK, folder, data_dir=dirs.root.parent, workers=1)


def test_public_layout_keeps_string_ids_and_hides_test_scores(dirs) -> None:
    assert (dirs.public / "train" / "images" / "0000.tif").is_file()
    assert (dirs.public / "test" / "images" / "0005.tiff").is_file()
    assert "0000,0.0" in (dirs.public / "sample_submission.csv").read_text()
    assert not list(dirs.public.rglob("*.json"))


def test_gold_and_negated_gold_score_three(dirs, tmp_path) -> None:
    gold = _grade(dirs, dirs.gold)
    assert gold.metrics["score"] == pytest.approx(3.0)
    assert gold.ranking.percentile == 1.0
    negated = _submit(tmp_path, [(i, repr(-v)) for i, v in REFERENCE.items()])
    # absolute values: a perfectly anti-correlated prediction scores like the gold
    assert _grade(dirs, negated).metrics["score"] == pytest.approx(3.0)


def test_constant_prediction_is_valid_and_scores_zero(dirs, tmp_path) -> None:
    folder = _submit(tmp_path, [(i, "2.0") for i in REFERENCE])
    report = _grade(dirs, folder)
    assert report.valid
    assert report.metrics == {"score": 0.0, "plcc": 0.0, "srocc": 0.0, "krocc": 0.0}
    assert report.ranking.percentile == 0.0


def test_swapped_pair_matches_a_hand_computation(dirs, tmp_path) -> None:
    x = [1, 2, 3, 4, 6, 5]  # the last two swapped
    folder = _submit(tmp_path, [(i, str(v)) for i, v in zip(REFERENCE, x, strict=True)])
    m = _grade(dirs, folder).metrics
    # x - mean = [-2.5,-1.5,-.5,.5,2.5,1.5] (sum sq 17.5); y - mean = [-1.6,-.8,0,0,.8,1.6] (6.4)
    # Pearson = 9.6 / sqrt(17.5 * 6.4)
    assert m["plcc"] == pytest.approx(9.6 / math.sqrt(17.5 * 6.4))
    # ranks y = [1,2,3.5,3.5,5,6]: sum dx*dy = 16, sum dy^2 = 17 -> rho = 16 / sqrt(17.5 * 17)
    assert m["srocc"] == pytest.approx(16 / math.sqrt(17.5 * 17))
    # 15 pairs, 1 tied in y, 13 concordant, 1 discordant: tau_b = 12 / sqrt(15 * 14)
    assert m["krocc"] == pytest.approx(12 / math.sqrt(15 * 14))
    assert m["score"] == pytest.approx(m["plcc"] + m["srocc"] + m["krocc"])


@pytest.mark.parametrize("bad", ["nan", "inf", "", "good", "1,5", "1_5", " 2.0", "0x1", "1e999"])
def test_non_finite_or_non_numeric_scores_are_invalid(dirs, tmp_path, bad) -> None:
    rows = [(i, "1.0") for i in REFERENCE]
    rows[2] = ("0002", bad)
    folder = _submit(tmp_path, rows)
    result = validate_submission(TASK, folder, data_dir=dirs.root.parent)
    assert not result.valid
    assert any("0002" in r for r in result.reasons)


def test_missing_id_and_lost_leading_zeros(dirs, tmp_path) -> None:
    rows = [(i, "1.0") for i in REFERENCE if i != "0000"] + [("0", "1.0")]
    result = validate_submission(TASK, _submit(tmp_path, rows), data_dir=dirs.root.parent)
    assert not result.valid
    text = "\n".join(result.reasons)
    assert "'0' is not a test id" in text
    assert "leading zeros" in text
    assert "'0000'" in text
    assert "missing" in text


def test_leading_zero_hint_when_the_full_id_comes_later(dirs, tmp_path) -> None:
    # '1' is written before '0001' would have been; the hint is decided after all rows
    rows = [("1", "1.0")] + [(i, "1.0") for i in REFERENCE if i != "0001"]
    result = validate_submission(TASK, _submit(tmp_path, rows), data_dir=dirs.root.parent)
    assert any("'1' is not a test id" in r and "'0001'" in r for r in result.reasons)
