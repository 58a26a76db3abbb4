"""DENTEX: mini fixture -> prepare -> validate/grade; metrics against pycocotools and by hand."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import random
import shutil
from pathlib import Path

import numpy as np
import pytest

from rexmle.challenges.dentex import metrics, prepare
from rexmle.errors import DataError
from rexmle.grading.grader import grade_submission, validate_submission
from rexmle.tasks.jobs import PrepareJob
from rexmle.tasks.registry import get_task, load_task

TASK = "dentex"
# COCO stats[0, 1, 2, 8] per level, and their means over the three levels
KEYS = tuple(
    f"{stat}_{level}"
    for level in ("mean", "quadrant", "enumeration", "diagnosis")
    for stat in ("ap", "ap50", "ap75", "ar")
)


@pytest.fixture(scope="module")
def prepared(prepared_mini) -> Path:
    """The data dir holding the mini task, prepared once per session."""
    return prepared_mini(TASK).root.parent


def _task_dir(data_dir: Path) -> Path:
    return data_dir / TASK


def _copy_gold(data_dir: Path, target: Path) -> Path:
    shutil.copytree(_task_dir(data_dir) / "private" / "gold", target)
    return target


def _gold_detections(folder: Path) -> dict[str, list[dict[str, object]]]:
    return {
        p.stem: json.loads(p.read_text(encoding="utf-8"))
        for p in sorted((folder / "predictions").glob("*.json"))
    }


def _write_detections(folder: Path, detections: dict[str, list[dict[str, object]]]) -> None:
    for stem, items in detections.items():
        (folder / "predictions" / f"{stem}.json").write_text(json.dumps(items), encoding="utf-8")


def _job(raw: Path, out: Path) -> PrepareJob:
    return PrepareJob(
        raw=raw, public=out / "public", private=out / "private", task=get_task(TASK), mini=True
    )


def _grade(data_dir: Path, folder: Path):
    return grade_submission(TASK, folder, data_dir=data_dir, workers=1)


# ---- preparation ------------------------------------------------------------------------------


def test_split_follows_json_file_order_and_random_42(prepared: Path) -> None:
    raw = prepared / TASK / "raw" / prepare.DISEASE_DIR / prepare.DISEASE_JSON
    order = [image["id"] for image in json.loads(raw.read_text(encoding="utf-8"))["images"]]
    assert order != sorted(order)  # the fixture lists ids out of order on purpose
    ids = list(order)
    random.Random(42).shuffle(ids)  # 20 ids -> int(0.8 * 20) = 16 train, 4 test
    split = json.loads((prepared / TASK / "private" / "split.json").read_text(encoding="utf-8"))
    assert split["train"] == [f"train_{i - 1}" for i in ids[:16]]
    assert split["test"] == [f"train_{i - 1}" for i in ids[16:]]


def test_public_and_private_layout(prepared: Path) -> None:
    public = prepared / TASK / "public"
    private = prepared / TASK / "private"
    split = json.loads((private / "split.json").read_text(encoding="utf-8"))
    train_doc = json.loads((public / "train" / prepare.DISEASE_JSON).read_text(encoding="utf-8"))
    assert sorted(p.stem for p in (public / "train" / "images").glob("*.png")) == sorted(
        split["train"]
    )
    assert sorted(p.stem for p in (public / "test" / "images").glob("*.png")) == sorted(
        split["test"]
    )
    train_ids = {image["id"] for image in train_doc["images"]}
    assert all(a["image_id"] in train_ids for a in train_doc["annotations"])
    assert [c["id"] for c in train_doc["categories_3"]] == [0, 1, 2, 3]
    gt = json.loads((private / "gt_coco.json").read_text(encoding="utf-8"))
    assert sorted(Path(i["file_name"]).stem for i in gt["images"]) == sorted(split["test"])
    assert not (public / "gt_coco.json").exists()
    raw_xrays = prepared / TASK / "raw" / prepare.DISEASE_DIR / "xrays"
    name = split["test"][0] + ".png"
    assert (public / "test" / "images" / name).read_bytes() == (raw_xrays / name).read_bytes()


def test_prepare_fails_without_the_disease_json(prepared: Path, tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    shutil.copytree(prepared / TASK / "raw", raw)
    (raw / prepare.DISEASE_DIR / prepare.DISEASE_JSON).unlink()
    with pytest.raises(DataError, match=r"train_quadrant_enumeration_disease\.json"):
        prepare.prepare(_job(raw, tmp_path))


def test_prepare_rejects_a_degenerate_box(prepared: Path, tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    shutil.copytree(prepared / TASK / "raw", raw)
    path = raw / prepare.DISEASE_DIR / prepare.DISEASE_JSON
    document = json.loads(path.read_text(encoding="utf-8"))
    document["annotations"][0]["bbox"][2] = 0
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(DataError, match="w > 0"):
        prepare.prepare(_job(raw, tmp_path))


# ---- grading ----------------------------------------------------------------------------------


def test_gold_scores_one_on_every_key(prepared: Path) -> None:
    report = _grade(prepared, _task_dir(prepared) / "private" / "gold")
    assert report.valid, report.reasons
    assert set(report.metrics) == set(KEYS)
    assert all(v == 1.0 for v in report.metrics.values()), report.metrics
    assert report.ranking.percentile == 1.0


def test_no_detection_anywhere_scores_zero_not_a_crash(prepared: Path, tmp_path: Path) -> None:
    # pycocotools' loadRes fails on an empty detection list; the sample's empty arrays score 0
    public = _task_dir(prepared) / "public"
    folder = tmp_path / "sample"
    shutil.copytree(public / "predictions", folder / "predictions")
    shutil.copyfile(public / "sample_submission.csv", folder / "submission.csv")
    report = _grade(prepared, folder)
    assert report.valid, report.reasons
    assert report.metrics == dict.fromkeys(KEYS, 0.0)


def test_shift_by_a_tenth_of_the_width_hand_computed(prepared: Path, tmp_path: Path) -> None:
    folder = _copy_gold(prepared, tmp_path / "shift10")
    detections = _gold_detections(folder)
    for items in detections.values():
        for d in items:
            x, y, w, h = d["bbox"]
            d["bbox"] = [x + 0.1 * w, y, w, h]
    _write_detections(folder, detections)
    # IoU = 0.9 w h / 1.1 w h = 0.818: a match at t = 0.50 ... 0.80 (7 of 10 thresholds), none at
    # 0.85, 0.90, 0.95. All scores are 1.0, so precision is 1 wherever recall is reached:
    # AP = AR = 7 / 10 = 0.7 on every level; AP50 = AP75 = 1.
    report = _grade(prepared, folder)
    for level in ("quadrant", "enumeration", "diagnosis", "mean"):
        assert report.metrics[f"ap_{level}"] == pytest.approx(0.7, abs=1e-12)
        assert report.metrics[f"ar_{level}"] == pytest.approx(0.7, abs=1e-12)
        assert report.metrics[f"ap50_{level}"] == pytest.approx(1.0, abs=1e-12)
        assert report.metrics[f"ap75_{level}"] == pytest.approx(1.0, abs=1e-12)
    assert 0.0 < report.ranking.percentile < 1.0


def test_shift_by_half_the_width_loses_every_match(prepared: Path, tmp_path: Path) -> None:
    folder = _copy_gold(prepared, tmp_path / "shift50")
    detections = _gold_detections(folder)
    for items in detections.values():
        for d in items:
            x, y, w, h = d["bbox"]
            d["bbox"] = [x + 0.5 * w, y, w, h]
    _write_detections(folder, detections)
    # IoU = 0.5 w h / 1.5 w h = 1/3 < 0.5 with the own box; neighbouring teeth overlap less.
    report = _grade(prepared, folder)
    assert report.metrics["ap_mean"] < 1.0
    assert report.metrics["ap50_mean"] == 0.0


def test_one_wrong_diagnosis_lowers_only_the_diagnosis_level(
    prepared: Path, tmp_path: Path
) -> None:
    folder = _copy_gold(prepared, tmp_path / "diag")
    detections = _gold_detections(folder)
    first = next(items for items in detections.values() if items)
    first[0]["category_id_3"] = (int(first[0]["category_id_3"]) + 1) % 4
    _write_detections(folder, detections)
    report = _grade(prepared, folder)
    assert report.metrics["ap_diagnosis"] < 1.0
    assert report.metrics["ar_diagnosis"] < 1.0
    assert report.metrics["ap_quadrant"] == 1.0
    assert report.metrics["ap_enumeration"] == 1.0
    assert report.metrics["ap_mean"] < 1.0


def test_baseline_is_deterministic(prepared: Path, tmp_path: Path) -> None:
    public = _task_dir(prepared) / "public"
    first, second = tmp_path / "a", tmp_path / "b"
    for folder in (first, second):
        folder.mkdir()
        load_task(TASK).solve_baseline(public, folder, seed=0)
    assert (first / "submission.csv").read_bytes() == (second / "submission.csv").read_bytes()
    assert _gold_detections(first) == _gold_detections(second)


# ---- metrics against pycocotools --------------------------------------------------------------


def _pycocotools_stats(gt: dict, level_key: str, detections: list[dict]) -> list[float]:
    pytest.importorskip("pycocotools")
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    gt_level = copy.deepcopy(gt)
    for annotation in gt_level["annotations"]:
        annotation["category_id"] = annotation[level_key]
    gt_level["categories"] = gt_level["categories_" + level_key[-1]]
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = gt_level
        coco_gt.createIndex()
        coco_dt = coco_gt.loadRes(
            [
                {
                    "image_id": d["image_id"],
                    "category_id": d[level_key],
                    "bbox": d["bbox"],
                    "score": d["score"],
                }
                for d in detections
            ]
        )
        evaluator = COCOeval(coco_gt, coco_dt, iouType="bbox")
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
    return [float(v) for v in evaluator.stats]


def _random_detections(gt: dict, rng: np.random.Generator) -> dict[int, list[dict]]:
    """Jittered GT boxes with random labels and scores (ties included), plus clutter."""
    out: dict[int, list[dict]] = {image["id"]: [] for image in gt["images"]}
    for a in gt["annotations"]:
        x, y, w, h = a["bbox"]
        for _ in range(2):
            out[a["image_id"]].append(
                {
                    "bbox": [
                        x + rng.normal(0, 1.5),
                        y + rng.normal(0, 2),
                        w,
                        h * rng.uniform(0.8, 1.2),
                    ],
                    "category_id_1": int(rng.integers(0, 4)),
                    "category_id_2": int(rng.integers(0, 8)),
                    "category_id_3": int(rng.integers(0, 4)),
                    "score": float(rng.choice([0.5, 0.25, rng.uniform()])),
                }
            )
    for image in gt["images"]:
        for _ in range(5):
            out[image["id"]].append(
                {
                    "bbox": [float(rng.uniform(0, 150)), float(rng.uniform(0, 60)), 11.0, 30.0],
                    "category_id_1": int(rng.integers(0, 4)),
                    "category_id_2": int(rng.integers(0, 8)),
                    "category_id_3": int(rng.integers(0, 4)),
                    "score": 0.5,
                }
            )
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dentex_scores_equal_pycocotools_per_level(prepared: Path, seed: int) -> None:
    gt = json.loads((prepared / TASK / "private" / "gt_coco.json").read_text(encoding="utf-8"))
    _, images, truth = metrics.load_truth(prepared / TASK / "private" / "gt_coco.json")
    detections = _random_detections(gt, np.random.default_rng(seed))
    ours = metrics.dentex_scores(truth, [detections[image["id"]] for image in images])
    flat = [{**d, "image_id": image_id} for image_id, items in detections.items() for d in items]
    expected_means = {"ap": [], "ap50": [], "ap75": [], "ar": []}
    for level, key in metrics.LEVELS:
        stats = _pycocotools_stats(gt, key, flat)
        for stat, index in metrics.STATS:
            assert ours[f"{stat}_{level}"] == pytest.approx(stats[index], abs=1e-12), (stat, level)
            expected_means[stat].append(stats[index])
    for stat, values in expected_means.items():
        assert ours[f"{stat}_mean"] == pytest.approx(sum(values) / 3, abs=1e-12)


def test_tied_scores_are_matched_in_array_order() -> None:
    # Two images, one GT box each (quadrant 0). Image 1 has a correct and a wrong detection with
    # the same score. Correct first: ranked TP, FP, TP -> precision 1 up to recall 0.5, then 2/3
    # -> AP50 = (51 * 1 + 50 * 2/3) / 101 = 0.83498. Wrong first: FP, TP, TP ->
    # AP50 = 101 * (2/3) / 101 = 0.66667 (precision is made monotone from the right).
    box = {"bbox": [10.0, 10.0, 20.0, 20.0], "area": 400.0, "iscrowd": 0}
    truth = [[{**box, "category_id_1": 0, "category_id_2": 0, "category_id_3": 0}]] * 2
    good = {"bbox": [10.0, 10.0, 20.0, 20.0], "score": 0.5}
    bad = {"bbox": [60.0, 60.0, 20.0, 20.0], "score": 0.5}
    labels = {"category_id_1": 0, "category_id_2": 0, "category_id_3": 0}
    second = [{"bbox": [10.0, 10.0, 20.0, 20.0], "score": 0.4, **labels}]
    good_first = metrics.dentex_scores(truth, [[{**good, **labels}, {**bad, **labels}], second])
    bad_first = metrics.dentex_scores(truth, [[{**bad, **labels}, {**good, **labels}], second])
    assert good_first["ap50_quadrant"] == pytest.approx((51 + 50 * 2 / 3) / 101, abs=1e-12)
    assert bad_first["ap50_quadrant"] == pytest.approx(2 / 3, abs=1e-12)


# ---- validity rules ----------------------------------------------------------------------------


def _invalid(data_dir: Path, folder: Path) -> list[str]:
    result = validate_submission(TASK, folder, data_dir=data_dir, workers=1)
    assert not result.valid
    return result.reasons


def _mutated(data_dir: Path, tmp_path: Path, change) -> tuple[Path, str]:
    folder = _copy_gold(data_dir, tmp_path / "sub")
    detections = _gold_detections(folder)
    case_id = next(stem for stem, items in detections.items() if items)
    change(detections[case_id])
    _write_detections(folder, detections)
    return folder, case_id


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d[0].update(category_id_2=8), "category_id_2 = 8 is not one of"),
        (lambda d: d[0].update(bbox=[1.0, 2.0, 0.0, 5.0]), "width 0.0"),
        (lambda d: d[0].update(bbox=[1.0, 2.0, 3.0]), "4 JSON numbers"),
        (lambda d: d[0].update(bbox=["1", 2.0, 3.0, 4.0]), "4 JSON numbers"),
        (lambda d: d[0].pop("score"), "missing key(s) ['score']"),
        (lambda d: d[0].update(score=1.5), "score 1.5"),
        (lambda d: d[0].update(category_id_1=True), "category_id_1 = True"),
        (lambda d: d[0].update(category_id_3=1.0), "category_id_3 = 1.0"),
        (lambda d: d[0].update(image_id="train_9999"), "differs from the row's id"),
        (lambda d: d.append("box"), "must be a JSON object"),
    ],
)
def test_detection_rules_name_case_and_problem(
    prepared: Path, tmp_path: Path, change, expected: str
) -> None:
    folder, case_id = _mutated(prepared, tmp_path, change)
    reasons = _invalid(prepared, folder)
    assert any(case_id in r and expected in r for r in reasons), reasons


def test_nan_top_level_object_and_broken_json_are_invalid(prepared: Path, tmp_path: Path) -> None:
    folder = _copy_gold(prepared, tmp_path / "sub")
    stems = sorted(_gold_detections(folder))
    files = [folder / "predictions" / f"{s}.json" for s in stems]
    files[0].write_text('[{"bbox": [1, 2, NaN, 4]}]', encoding="utf-8")
    files[1].write_text('{"annotations": []}', encoding="utf-8")
    files[2].write_text("[{", encoding="utf-8")
    files[3].write_bytes(b"\xff\xfe[]")
    reasons = _invalid(prepared, folder)
    assert any(stems[0] in r and "NaN is not a JSON number" in r for r in reasons), reasons
    assert any(stems[1] in r and "top-level must be a JSON array" in r for r in reasons), reasons
    assert any(stems[2] in r and "not valid JSON" in r for r in reasons), reasons
    assert any(stems[3] in r and "not UTF-8" in r for r in reasons), reasons


def test_integers_beyond_the_float_range_are_invalid_not_a_crash(
    prepared: Path, tmp_path: Path
) -> None:
    folder = _copy_gold(prepared, tmp_path / "sub")
    stems = sorted(_gold_detections(folder))
    first, second = (folder / "predictions" / f"{s}.json" for s in stems[:2])
    huge = "1" + "0" * 400
    detections = json.loads(first.read_text(encoding="utf-8"))
    text = json.dumps(detections[:1]).replace('"score": 1.0', f'"score": {huge}')
    first.write_text(text, encoding="utf-8")
    detections = json.loads(second.read_text(encoding="utf-8"))
    bbox = detections[0]["bbox"]
    text = json.dumps(detections[:1]).replace(json.dumps(bbox), f"[1, 2, {huge}, 4]")
    second.write_text(text, encoding="utf-8")
    reasons = _invalid(prepared, folder)
    assert any(stems[0] in r and "score" in r for r in reasons), reasons
    assert any(stems[1] in r and "non-finite" in r for r in reasons), reasons


def test_too_many_detections_are_invalid(prepared: Path, tmp_path: Path) -> None:
    folder, case_id = _mutated(prepared, tmp_path, lambda d: d.extend([d[0]] * 10_000))
    reasons = _invalid(prepared, folder)
    assert any(case_id in r and "at most 10000" in r for r in reasons), reasons


@pytest.mark.slow
def test_gold_of_the_real_data_scores_one() -> None:
    from rexmle.tasks.folders import read_prepared, task_dirs

    dirs = task_dirs(TASK)
    manifest = read_prepared(dirs)
    if manifest is None or manifest.get("mini"):
        pytest.skip("the real DENTEX data is not prepared in the configured data dir")
    report = grade_submission(TASK, dirs.gold, workers=2)
    assert len(report.cases) == 141
    assert report.metrics == dict.fromkeys(KEYS, 1.0)


# --- the study's definitions (docs/study-errata.md, dentex) ------------------------------------


def test_study_never_scores_category_zero() -> None:
    from study_cases import aggregate

    from rexmle.challenges.dentex.metrics import ImageBoxes
    from rexmle.tasks.rows import CaseRow

    def annotation(bbox, category):
        ids = {f"category_id_{k}": category for k in (1, 2, 3)}
        return {"bbox": bbox, "area": bbox[2] * bbox[3], "iscrowd": 0, **ids}

    truth = [annotation([10, 10, 50, 50], 0), annotation([200, 200, 40, 60], 1)]
    # one exact detection of the category-1 box; the category-0 box is missed
    detections = [{**annotation([200, 200, 40, 60], 1), "score": 0.9}]
    for d in detections:
        d.pop("area"), d.pop("iscrowd")
    rows = [CaseRow("img", {}, detail=ImageBoxes(truth=truth, detections=detections))]
    official = aggregate("dentex", "official", rows)
    study = aggregate("dentex", "study", rows)
    # official, every level: category 0 AP 0 and AR 0, category 1 AP 1 and AR 1 -> 0.5;
    # study: category 0 left out -> 1.0
    for stat in ("ap", "ap50", "ap75", "ar"):
        for level in ("mean", "quadrant", "enumeration", "diagnosis"):
            assert official[f"{stat}_{level}"] == pytest.approx(0.5), (stat, level)
            assert study[f"{stat}_{level}"] == pytest.approx(1.0), (stat, level)
