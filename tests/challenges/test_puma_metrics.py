"""PUMA scoring against hand computations, and the nuclei JSON rules (spec puma.md)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import tifffile

from rexmle.challenges.puma.classes import nuclei_classes, track_classes
from rexmle.challenges.puma.metrics import (
    aggregate_nuclei,
    aggregate_tissue,
    score_nuclei_case,
    score_tissue_case,
)
from rexmle.challenges.puma.submission import MAX_ITEMS, read_nuclei_file
from rexmle.errors import SpecError
from rexmle.tasks.jobs import ScoreCase
from rexmle.tasks.registry import get_task
from rexmle.tasks.spec import TaskSpec
from rexmle.tasks.submission import SubmissionCase

TRACK1 = nuclei_classes(1)
TRACK2 = nuclei_classes(2)
TISSUE = get_task("puma-track1-task1")
NUCLEI1 = get_task("puma-track1-task2")
NUCLEI2 = get_task("puma-track2-task2")


def _case(case_id: str, pred: Path, gold: Path, task: TaskSpec) -> ScoreCase:
    """A scoring case of ``task``: the submitted and gold files of its one path column."""
    assert task.submission is not None
    (column,) = task.submission.path_columns
    return ScoreCase(
        case_id=case_id,
        submitted=SubmissionCase(case_id=case_id, row={}, paths={column: pred}),
        gold=SubmissionCase(case_id=case_id, row={}, paths={column: gold}),
        public=pred.parent,
        private=gold.parent,
        params=dict(task.params),
    )


def test_track_class_names() -> None:
    assert TRACK1 == ("tumor", "TILs", "other")
    assert len(TRACK2) == 10
    assert TRACK2[1:3] == ("lymphocytes", "plasma_cells")


def test_the_declared_track_names_the_classes_and_the_per_class_keys() -> None:
    assert track_classes(NUCLEI1.params) == TRACK1
    assert track_classes(NUCLEI2.params) == TRACK2
    for task, classes in ((NUCLEI1, TRACK1), (NUCLEI2, TRACK2)):
        unranked = [m.key for m in task.metrics if not m.ranked]
        assert unranked == [f"f1_{name}" for name in classes], task.id


@pytest.mark.parametrize("params", [{}, {"track": 3}, {"track": "1"}, {"track": True}])
def test_a_missing_or_unknown_track_is_a_spec_error(params) -> None:
    with pytest.raises(SpecError, match=r"params\.track as 1 or 2"):
        track_classes(params)


def _tiff(path: Path, rows: list[list[int]]) -> Path:
    tifffile.imwrite(path, np.asarray(rows, dtype=np.uint8))
    return path


def test_tissue_micro_dice_pools_pixels_over_cases(tmp_path) -> None:
    gold_a = _tiff(tmp_path / "ga.tif", [[1, 1, 3], [0, 0, 3]])
    pred_a = _tiff(tmp_path / "pa.tif", [[1, 0, 3], [0, 3, 3]])
    gold_b = _tiff(tmp_path / "gb.tif", [[1, 1, 1], [2, 2, 0]])
    pred_b = _tiff(tmp_path / "pb.tif", [[1, 1, 1], [0, 0, 0]])
    rows = [
        score_tissue_case(_case("a", pred_a, gold_a, TISSUE)),
        score_tissue_case(_case("b", pred_b, gold_b, TISSUE)),
    ]
    first = rows[0].values
    assert first["intersection_stroma"] == 1.0
    assert first["total_stroma"] == 3.0
    metrics = aggregate_tissue(rows, TISSUE)
    eps = 1e-5
    # stroma (1): I = 1 + 3 = 4, S = (2 + 1) + (3 + 3) = 9 -> (8 + eps) / (9 + eps)
    # vessel (2): I = 0 (GT has 2 pixels, never predicted) -> 0
    # tumour (3): I = 2, S = 2 + 3 = 5 -> (4 + eps) / (5 + eps)
    # epidermis (4), necrosis (5): absent everywhere, I = 0 -> 0
    stroma, tumour = (8 + eps) / (9 + eps), (4 + eps) / (5 + eps)
    assert metrics["dice_stroma"] == pytest.approx(stroma, abs=1e-12)
    assert metrics["dice_blood_vessel"] == 0.0
    assert metrics["dice_tumor"] == pytest.approx(tumour, abs=1e-12)
    assert metrics["dice_epidermis"] == 0.0
    assert metrics["dice_necrosis"] == 0.0
    assert metrics["dice"] == pytest.approx((stroma + tumour) / 5, abs=1e-12)


def _json(path: Path, content: object) -> Path:
    path.write_text(json.dumps(content), encoding="utf-8")
    return path


def _square(x: float, y: float, name: str, score: float | None = None) -> dict:
    """A 2 x 2 square whose vertex mean is (x, y)."""
    item = {
        "name": name,
        "path_points": [[x - 1, y - 1], [x + 1, y - 1], [x + 1, y + 1], [x - 1, y + 1]],
    }
    if score is not None:
        item["score"] = score
    return item


def test_nuclei_macro_f1_by_hand(tmp_path) -> None:
    gold_a = _json(
        tmp_path / "ga.json",
        {"polygons": [_square(10, 10, "tumor"), _square(50, 50, "tumor"), _square(90, 90, "TILs")]},
    )
    pred_a = _json(
        tmp_path / "pa.json",
        {
            "nuclei": [
                {"class": "tumor", "centroid": [20, 10]},  # 10 px from GT 1: match
                {"class": "tumor", "centroid": [65, 50]},  # exactly 15 px from GT 2: no match
                {"class": "other", "centroid": [90, 90]},  # right place, wrong class
            ]
        },
    )
    gold_b = _json(tmp_path / "gb.json", {"polygons": [_square(30, 30, "TILs")]})
    pred_b = _json(tmp_path / "pb.json", {"polygons": [_square(31, 31, "TILs", 0.4)]})
    rows = [
        score_nuclei_case(_case("a", pred_a, gold_a, NUCLEI1)),
        score_nuclei_case(_case("b", pred_b, gold_b, NUCLEI1)),
    ]
    first = rows[0].values
    assert first["n_matched"] == 1.0
    assert first["tp_tumor"] == 1.0
    assert first["fp_tumor"] == 1.0
    assert first["fn_tumor"] == 1.0
    metrics = aggregate_nuclei(rows, NUCLEI1)
    # case a: tumor P = 1/2, R = 1/2 -> F1 1/2; TILs: TP 0 -> 0; other: FP only -> 0
    # case b: TILs matched (distance sqrt 2) -> 1
    # n = 2 cases: F1_tumor = 1/2 / 2 = 1/4, F1_TILs = (0 + 1) / 2 = 1/2, F1_other = 0 / 2 = 0
    # f1 = (1/4 + 1/2 + 0) / 3 = 1/4
    assert metrics["f1_tumor"] == pytest.approx(0.25)
    assert metrics["f1_TILs"] == pytest.approx(0.5)
    assert metrics["f1_other"] == 0.0
    assert metrics["f1"] == pytest.approx(0.25)


def test_highest_score_wins_then_the_nearest(tmp_path) -> None:
    gold = _json(
        tmp_path / "g.json", {"polygons": [_square(10, 10, "tumor"), _square(30, 10, "tumor")]}
    )
    pred = _json(
        tmp_path / "p.json",
        {
            "nuclei": [
                {"class": "tumor", "centroid": [11, 10], "confidence": 0.2},
                {"class": "tumor", "centroid": [21, 10], "confidence": 0.9},
            ]
        },
    )
    row = score_nuclei_case(_case("c", pred, gold, NUCLEI1)).values
    # GT 1 at x=10 takes the confident prediction at x=21 (11 px away); GT 2 at x=30 then has
    # no candidate (x=11 is 19 px away): TP 1, FP 1, FN 1
    assert (row["tp_tumor"], row["fp_tumor"], row["fn_tumor"]) == (1.0, 1.0, 1.0)


def test_no_predictions_at_all_scores_zero(tmp_path) -> None:
    gold = _json(tmp_path / "g.json", {"polygons": [_square(10, 10, "tumor")]})
    pred = _json(tmp_path / "p.json", {"polygons": []})
    metrics = aggregate_nuclei([score_nuclei_case(_case("c", pred, gold, NUCLEI1))], NUCLEI1)
    assert metrics["f1"] == 0.0


def _reasons(tmp_path: Path, content: object | str, classes=TRACK1) -> list[str]:
    path = tmp_path / "case.json"
    text = content if isinstance(content, str) else json.dumps(content)
    path.write_text(text, encoding="utf-8")
    nuclei, reasons = read_nuclei_file(path, classes)
    assert (nuclei is None) == bool(reasons)
    return reasons


def test_valid_forms_and_ignored_keys(tmp_path) -> None:
    grand_challenge = {
        "type": "Multiple polygons",
        "version": {"major": 1, "minor": 0},
        "polygons": [
            {
                "name": "tumor",
                "path_points": [[0, 0, 0.5], [3, 0, 0.5], [3, 3, 0.5]],
                "probability": 0.3,
            }
        ],
    }
    assert _reasons(tmp_path, grand_challenge) == []
    nuclei, _ = read_nuclei_file(tmp_path / "case.json", TRACK1)
    assert nuclei is not None
    np.testing.assert_allclose(nuclei.xy, [[2.0, 1.0]])  # mean of (0,0), (3,0), (3,3)
    assert nuclei.scores.tolist() == [1.0]  # 'probability' is ignored, score defaults to 1
    assert _reasons(tmp_path, {"nuclei": []}) == []


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("{not json", "malformed JSON"),
        ('{"nuclei": [{"class": "tumor", "centroid": [NaN, 1]}]}', "NaN"),
        ([], "must be a JSON object"),
        ({"polygons": [], "nuclei": []}, "found both"),
        ({"detections": []}, "found neither"),
        ({"nuclei": {}}, "must be a list"),
        ({"nuclei": [{"class": "TIL", "centroid": [1, 2]}]}, "'class' 'TIL' is not one of"),
        ({"nuclei": [{"class": "nuclei_tumor", "centroid": [1, 2]}]}, "'nuclei_tumor'"),
        ({"nuclei": [{"class": "tumor"}]}, "'centroid' is missing"),
        ({"nuclei": [{"class": "tumor", "centroid": [1, 2, 3]}]}, "list of 2 numbers"),
        ({"nuclei": [{"class": "tumor", "centroid": [1, True]}]}, "not a finite number"),
        ('{"nuclei": [{"class": "tumor", "centroid": [1e400, 1]}]}', "not a finite number"),
        ({"nuclei": [{"class": "tumor", "centroid": [1, 2], "confidence": 1.5}]}, "[0, 1]"),
        ({"polygons": [{"name": "tumor", "path_points": [[0, 0], [1, 1]]}]}, "at least 3"),
        ({"polygons": [{"path_points": [[0, 0], [1, 1], [1, 0]]}]}, "'name' None"),
        ({"polygons": [{"name": "tumor", "path_points": [[0, 0], [1], [1, 0]]}]}, "2 or 3"),
        (
            {
                "polygons": [
                    {"name": "tumor", "path_points": [[0, 0], [1, 1], [1, 0]], "score": "1"}
                ]
            },
            "score",
        ),
        ({"polygons": ["tumor"]}, "expected an object"),
    ],
)
def test_invalid_nuclei_files(tmp_path, content, needle) -> None:
    reasons = _reasons(tmp_path, content)
    assert len(reasons) >= 1
    assert "case.json" in reasons[0]
    assert needle in reasons[0]


def test_item_limit_and_reason_count(tmp_path) -> None:
    many = {"nuclei": [{"class": "tumor", "centroid": [1, 2]}] * (MAX_ITEMS + 1)}
    (reason,) = _reasons(tmp_path, many)
    assert f"at most {MAX_ITEMS}" in reason
    bad = {"nuclei": [{"class": "x", "centroid": [1, 2]}] * 9}
    reasons = _reasons(tmp_path, bad)
    assert len(reasons) == 6
    assert "4 more invalid item(s)" in reasons[-1]
    assert "nuclei[0]" in reasons[0]


def test_track2_names_are_not_track1_names(tmp_path) -> None:
    content = {"nuclei": [{"class": "lymphocytes", "centroid": [1, 2]}]}
    assert _reasons(tmp_path, content, TRACK2) == []
    assert _reasons(tmp_path, content, TRACK1)


def test_bulk_parsing_gives_exactly_the_polygon_centroid(tmp_path) -> None:
    from rexmle.metrics.points import polygon_centroid

    rng = np.random.default_rng(3)
    polygons = []
    for _ in range(300):
        n = int(rng.integers(3, 9))
        points = np.round(rng.uniform(0, 1024, (n, 2)), 3).tolist()
        if rng.random() < 0.3:
            points = [[*p, 0.5] for p in points]
        polygons.append({"name": str(rng.choice(TRACK2)), "path_points": points})
    path = _json(tmp_path / "many.json", {"polygons": polygons})
    nuclei, reasons = read_nuclei_file(path, TRACK2)
    assert reasons == []
    assert nuclei is not None
    expected = np.array([polygon_centroid(p["path_points"]) for p in polygons])
    np.testing.assert_array_equal(nuclei.xy, expected)  # bit for bit
    assert nuclei.classes == [p["name"] for p in polygons]
    np.testing.assert_array_equal(nuclei.scores, np.ones(300))


# --- the study's definitions (docs/study-errata.md, puma-track1-task2, puma-track2-task2) -------


def _corner_square(x: float, y: float, name: str) -> dict:
    return {"name": name, "path_points": [[x, y], [x + 4, y], [x + 4, y + 4], [x, y + 4]]}


def _nuclei_case(tmp_path: Path, polygons: list[dict], sources: list[tuple[str, str]]) -> Path:
    """Gold = prediction = ``polygons``; ``private/nuclei_sources`` = (raw class, geometry)."""
    from rexmle.challenges.puma.prepare import NUCLEI_SOURCES

    document = json.dumps({"polygons": polygons})
    (tmp_path / "gold.json").write_text(document)
    (tmp_path / "pred.json").write_text(document)
    folder = tmp_path / NUCLEI_SOURCES
    folder.mkdir()
    entries = [{"raw_class": raw, "geometry": geometry} for raw, geometry in sources]
    (folder / "c1.json").write_text(json.dumps({"polygons": entries}))
    return tmp_path


def test_study_track1_class_table_misses_the_singular_names() -> None:
    from rexmle.challenges.puma.study import study_class

    assert study_class("nuclei_tumor", 1) == "tumor"
    assert study_class("nuclei_endothelium", 1) == "other"
    assert study_class("nuclei_epithelium", 1) == "other"
    # plural keys in the study's table: the release's singular names stay raw
    assert study_class("nuclei_lymphocyte", 1) == "nuclei_lymphocyte"
    assert study_class("nuclei_plasma_cell", 1) == "nuclei_plasma_cell"
    assert study_class("nuclei_histiocyte", 1) == "nuclei_histiocyte"
    assert study_class("nuclei_lymphocyte", 2) == "lymphocytes"


def test_study_track1_perfect_prediction_loses_the_tils(tmp_path) -> None:
    from study_cases import aggregate, score_case

    folder = _nuclei_case(
        tmp_path,
        [
            _corner_square(10, 10, "tumor"),
            _corner_square(100, 100, "TILs"),
            _corner_square(200, 10, "other"),
        ],
        [
            ("nuclei_tumor", "Polygon"),
            ("nuclei_lymphocyte", "Polygon"),
            ("nuclei_stroma", "Polygon"),
        ],
    )
    pred, gold = folder / "pred.json", folder / "gold.json"
    task = "puma-track1-task2"
    official = aggregate(task, "official", [score_case(task, "official", pred, gold)])
    study = aggregate(task, "study", [score_case(task, "study", pred, gold)])
    assert official["f1"] == 1.0
    # study gold: tumor, "nuclei_lymphocyte", "nuclei_stroma" (unmapped). tumor TP -> 1; the
    # predicted TILs and other are false positives -> 0 and 0; mean over the 3 classes = 1/3
    assert study["f1_tumor"] == 1.0
    assert study["f1_TILs"] == 0.0
    assert study["f1_other"] == 0.0
    assert study["f1"] == pytest.approx(1 / 3)


def test_study_track2_drops_multipolygon_nuclei_from_the_gold(tmp_path) -> None:
    from study_cases import score_case

    folder = _nuclei_case(
        tmp_path,
        [
            _corner_square(10, 10, "tumor"),
            _corner_square(100, 100, "tumor"),
            _corner_square(140, 100, "tumor"),
        ],
        [
            ("nuclei_tumor", "Polygon"),
            ("nuclei_tumor", "MultiPolygon"),
            ("nuclei_tumor", "MultiPolygon"),
        ],
    )
    row = score_case("puma-track2-task2", "study", folder / "pred.json", folder / "gold.json")
    # the two parts of the MultiPolygon are not in the study's gold: predicting them is 2 FP
    assert (row.number("tp_tumor"), row.number("fp_tumor"), row.number("fn_tumor")) == (1, 2, 0)
    official = score_case(
        "puma-track2-task2", "official", folder / "pred.json", folder / "gold.json"
    )
    assert (official.number("tp_tumor"), official.number("fp_tumor")) == (3, 0)


def test_study_track2_averages_a_class_over_the_cases_where_it_occurs() -> None:
    from study_cases import aggregate

    from rexmle.tasks.rows import CaseRow

    def row(case_id: str, **counts: tuple[int, int, int]) -> CaseRow:
        values = {}
        for name in TRACK2:
            tp, fp, fn = counts.get(name, (0, 0, 0))
            values.update({f"tp_{name}": tp, f"fp_{name}": fp, f"fn_{name}": fn})
        return CaseRow(case_id, values)

    # tumor occurs in case a only (F1 1); lymphocytes in both (F1 1 and 2·1/(2·1+1) = 2/3)
    rows = [row("a", tumor=(2, 0, 0), lymphocytes=(1, 0, 0)), row("b", lymphocytes=(1, 1, 0))]
    task = "puma-track2-task2"
    official = aggregate(task, "official", rows)
    study = aggregate(task, "study", rows)
    # official: each class summed over cases / 2 cases, mean over the 2 classes seen
    assert official["f1_tumor"] == pytest.approx(0.5)
    assert official["f1_lymphocytes"] == pytest.approx((1 + 2 / 3) / 2)
    assert official["f1"] == pytest.approx((0.5 + 5 / 6) / 2)
    # study: tumor over its 1 case, lymphocytes over 2; the mean over all 10 classes
    assert study["f1_tumor"] == 1.0
    assert study["f1_lymphocytes"] == pytest.approx(5 / 6)
    assert study["f1"] == pytest.approx((1 + 5 / 6) / 10)


def _gold_grades(prepared_mini, task_id: str) -> dict:
    """The mini gold of ``task_id`` graded under both definition sets."""
    from rexmle.grading import grade_submission

    dirs = prepared_mini(task_id)
    return {
        d: grade_submission(task_id, dirs.gold, data_dir=dirs.root.parent, workers=1, definitions=d)
        for d in ("official", "study")
    }


def test_mini_gold_scores_one_officially_and_about_half_under_the_study(prepared_mini) -> None:
    grades = _gold_grades(prepared_mini, "puma-track1-task2")
    assert grades["official"].metrics["f1"] == 1.0
    assert grades["study"].metrics["f1"] == pytest.approx(0.50, abs=0.05)
    assert grades["study"].metrics["f1_TILs"] == 0.0
    assert grades["official"].ranking.medal == "gold"
    assert grades["study"].ranking.percentile == 0.0


def test_mini_gold_of_track2_is_never_lower_under_the_study(prepared_mini) -> None:
    grades = _gold_grades(prepared_mini, "puma-track2-task2")
    assert grades["official"].metrics["f1"] == pytest.approx(0.9)
    assert grades["study"].metrics["f1"] > grades["official"].metrics["f1"]
