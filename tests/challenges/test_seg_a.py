"""SEG.A on the mini fixture: split, gold, hand-computed distances and aggregates, mask rules."""

from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from scipy import ndimage
from sklearn.model_selection import train_test_split

from rexmle.challenges.seg_a import fixture
from rexmle.challenges.seg_a.prepare import discover_cases, prepare
from rexmle.errors import DataError
from rexmle.grading import grade_submission, validate_submission
from rexmle.io import read_image, write_image
from rexmle.tasks.jobs import PrepareJob
from rexmle.tasks.registry import get_task

TASK = "seg_a"
HEADER = ("image_id", "predicted_mask_path")


@pytest.fixture(scope="module")
def dirs(prepared_mini):
    return prepared_mini(TASK)


@pytest.fixture(scope="module")
def test_ids(dirs) -> list[str]:
    return json.loads((dirs.private / "split.json").read_text())["test"]


def _grade(dirs, folder: Path):
    return grade_submission(TASK, folder, data_dir=dirs.root.parent, workers=1)


def _copy_gold(dirs, target: Path) -> Path:
    shutil.copytree(dirs.gold, target)
    return target


def _write_csv(folder: Path, rows, header=HEADER) -> None:
    with open(folder / "submission.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)


def _mask_path(folder: Path, case_id: str) -> Path:
    return folder / "predictions" / f"{case_id}.seg.nrrd"


def _invalid_reasons(dirs, folder: Path) -> list[str]:
    result = validate_submission(TASK, folder, data_dir=dirs.root.parent, workers=1)
    assert not result.valid
    report = _grade(dirs, folder)
    assert not report.valid
    assert report.ranking.percentile == 0.0
    return result.reasons


def test_split_follows_sklearn_on_string_sorted_ids(dirs, test_ids) -> None:
    split = json.loads((dirs.private / "split.json").read_text())
    ids = sorted(split["train"] + split["test"])
    # string order puts D10 before D2
    assert ids[:3] == ["D1", "D10", "D2"]
    train, test = train_test_split(ids, test_size=0.2, random_state=42, shuffle=True)
    assert split["train"] == train
    assert split["test"] == test
    assert len(train) == 7
    assert len(test) == 2
    for case_id in split["train"]:
        assert (dirs.public / "train" / "images" / f"{case_id}.nrrd").is_file()
        assert (dirs.public / "train" / "labels" / f"{case_id}.seg.nrrd").is_file()
    assert sorted(p.name for p in (dirs.public / "test" / "images").iterdir()) == sorted(
        f"{i}.nrrd" for i in test_ids
    )
    assert not (dirs.public / "test" / "labels").exists()


def test_gold_is_a_byte_copy_of_the_raw_mask(dirs, test_ids) -> None:
    raw = discover_cases(dirs.raw)
    for case_id in test_ids:
        assert _mask_path(dirs.gold, case_id).read_bytes() == raw[case_id].mask.read_bytes()


def test_sample_submission_gets_the_empty_values(dirs, tmp_path) -> None:
    folder = tmp_path / "sample"
    shutil.copytree(dirs.public / "predictions", folder / "predictions")
    shutil.copy(dirs.public / "sample_submission.csv", folder / "submission.csv")
    report = _grade(dirs, folder)
    # empty prediction: DSC 0, HD = diagonal = ||(20*0.8, 16*0.8, 12*2.5)||
    #   = sqrt(16^2 + 12.8^2 + 30^2) = sqrt(256 + 163.84 + 900) = sqrt(1319.84)
    diagonal = math.sqrt(1319.84)
    for case in report.cases:
        assert case["dsc"] == 0.0
        assert case["hd"] == pytest.approx(diagonal)
    assert report.metrics["dsc_50pc"] == 0.0
    assert report.metrics["hd_50pc"] == pytest.approx(diagonal)


def test_one_slice_shift_in_z_gives_hd_of_one_slice(dirs, test_ids, tmp_path) -> None:
    folder = _copy_gold(dirs, tmp_path / "shift")
    case_id = test_ids[0]
    gold = read_image(_mask_path(folder, case_id))
    truth = np.asarray(gold.array) == 1
    assert not truth[..., 0].any()
    assert not truth[..., -2:].any()
    shifted = np.roll(truth, 1, axis=2)
    write_image(_mask_path(folder, case_id), shifted.astype(np.uint8), like=gold.geometry)
    report = _grade(dirs, folder)
    case = next(c for c in report.cases if c["case_id"] == case_id)
    # every surface voxel has its shifted copy 2.5 mm away (one z slice); the centre of the
    # lowest GT cap has nothing closer -> HD = 2.5 mm exactly
    assert case["hd"] == pytest.approx(2.5)
    n = int(truth.sum())
    overlap = int((truth & shifted).sum())
    assert case["dsc"] == pytest.approx(2 * overlap / (2 * n))
    other = next(c for c in report.cases if c["case_id"] != case_id)
    assert other["dsc"] == 1.0
    assert other["hd"] == 0.0
    # median of two cases = mean of both: hd (2.5 + 0) / 2; the population standard deviation
    # of (2.5, 0) is sqrt(((2.5 - 1.25)^2 + (0 - 1.25)^2) / 2) = 1.25
    assert report.metrics["hd_50pc"] == pytest.approx(1.25)
    assert report.metrics["hd_mean"] == pytest.approx(1.25)
    assert report.metrics["hd_std"] == pytest.approx(1.25)
    # dsc (d, 1): median = mean = (d + 1) / 2, std = (1 - d) / 2
    d = case["dsc"]
    assert report.metrics["dsc_50pc"] == report.metrics["dsc_mean"] == pytest.approx((d + 1) / 2)
    assert report.metrics["dsc_std"] == pytest.approx((1 - d) / 2)
    assert report.ranking.percentile < 1.0


def test_hd_is_symmetric_under_segmentation_is_penalised(dirs, test_ids, tmp_path) -> None:
    folder = _copy_gold(dirs, tmp_path / "under")
    case_id = test_ids[0]
    gold = read_image(_mask_path(folder, case_id))
    truth = np.asarray(gold.array) == 1
    kept = truth.copy()
    kept[..., 5:] = False  # drop the upper part of the tree
    write_image(_mask_path(folder, case_id), kept.astype(np.uint8), like=gold.geometry)
    report = _grade(dirs, folder)
    case = next(c for c in report.cases if c["case_id"] == case_id)
    # the prediction is inside the GT, so prediction->GT distances are small; the GT's upper
    # cap at z = 9 is >= 4 slices (10 mm) away from the kept part (top slice z = 4)
    assert case["hd"] >= 10.0


def test_hd_matches_an_independent_distance_transform(dirs, test_ids, tmp_path) -> None:
    folder = _copy_gold(dirs, tmp_path / "dilated")
    case_id = test_ids[1]
    gold = read_image(_mask_path(folder, case_id))
    truth = np.asarray(gold.array) == 1
    pred = ndimage.binary_dilation(truth, structure=np.ones((3, 1, 1), bool))
    write_image(_mask_path(folder, case_id), pred.astype(np.uint8), like=gold.geometry)
    report = _grade(dirs, folder)
    case = next(c for c in report.cases if c["case_id"] == case_id)
    spacing = gold.spacing_mm

    def surface(x):
        return x & ~ndimage.binary_erosion(x, structure=ndimage.generate_binary_structure(3, 1))

    sp, sg = surface(pred), surface(truth)
    d_pg = ndimage.distance_transform_edt(~sg, sampling=spacing)[sp].max()
    d_gp = ndimage.distance_transform_edt(~sp, sampling=spacing)[sg].max()
    assert case["hd"] == pytest.approx(max(d_pg, d_gp))
    assert case["hd"] == pytest.approx(0.8)  # one voxel along x


def test_float_masks_with_zero_and_one_are_valid(dirs, test_ids, tmp_path) -> None:
    folder = _copy_gold(dirs, tmp_path / "float")
    case_id = test_ids[0]
    gold = read_image(_mask_path(folder, case_id))
    floats = np.asarray(gold.array).astype(np.float32)
    path = folder / "predictions" / f"{case_id}.nii.gz"
    write_image(path, floats, like=gold.geometry)
    _write_csv(
        folder,
        [
            (case_id, f"predictions/{case_id}.nii.gz"),
            (test_ids[1], f"predictions/{test_ids[1]}.seg.nrrd"),
        ],
    )
    report = _grade(dirs, folder)
    assert report.valid
    assert report.metrics["dsc_50pc"] == 1.0


def test_wrong_size_is_invalid(dirs, test_ids, tmp_path) -> None:
    folder = _copy_gold(dirs, tmp_path / "s")
    write_image(
        _mask_path(folder, test_ids[0]),
        np.zeros((20, 16, 11), np.uint8),
        spacing_mm=(0.8, 0.8, 2.5),
    )
    (reason,) = _invalid_reasons(dirs, folder)
    assert test_ids[0] in reason
    assert "(20, 16, 11)" in reason
    assert "(20, 16, 12)" in reason


def test_values_0_255_are_invalid(dirs, test_ids, tmp_path) -> None:
    folder = _copy_gold(dirs, tmp_path / "s")
    gold = read_image(_mask_path(folder, test_ids[0]))
    write_image(_mask_path(folder, test_ids[0]), np.asarray(gold.array) * 255, like=gold.geometry)
    (reason,) = _invalid_reasons(dirs, folder)
    assert test_ids[0] in reason
    assert "255" in reason
    assert "allowed values are [0, 1]" in reason


def test_nan_and_unreadable_files_are_invalid(dirs, test_ids, tmp_path) -> None:
    folder = _copy_gold(dirs, tmp_path / "s")
    mask = np.zeros((20, 16, 12), np.float32)
    mask[0, 0, 0] = np.nan
    write_image(_mask_path(folder, test_ids[0]), mask, spacing_mm=(0.8, 0.8, 2.5))
    (reason,) = _invalid_reasons(dirs, folder)
    assert test_ids[0] in reason
    assert "NaN" in reason
    _mask_path(folder, test_ids[0]).write_bytes(b"NRRD0004\ngarbage")
    (reason,) = _invalid_reasons(dirs, folder)
    assert test_ids[0] in reason
    assert "unreadable" in reason


def test_four_d_and_wrong_file_type_are_invalid(dirs, test_ids, tmp_path) -> None:
    folder = _copy_gold(dirs, tmp_path / "s")
    write_image(folder / "predictions" / "x.nii.gz", np.zeros((20, 16, 12, 2), np.uint8))
    (folder / "predictions" / "x.png").write_bytes(b"")
    _write_csv(folder, [(test_ids[0], "predictions/x.nii.gz"), (test_ids[1], "predictions/x.png")])
    reasons = _invalid_reasons(dirs, folder)
    assert any(test_ids[0] in r and "3-D" in r for r in reasons)
    assert any(test_ids[1] in r and "file type not accepted" in r for r in reasons)


def test_spacing_difference_is_only_a_warning(dirs, test_ids, tmp_path) -> None:
    folder = _copy_gold(dirs, tmp_path / "s")
    gold = read_image(_mask_path(folder, test_ids[0]))
    write_image(_mask_path(folder, test_ids[0]), np.asarray(gold.array), spacing_mm=(1.0, 1.0, 1.0))
    result = validate_submission(TASK, folder, data_dir=dirs.root.parent)
    assert result.valid
    (warning,) = result.warnings
    assert test_ids[0] in warning
    assert "spacing (1.0, 1.0, 1.0) mm" in warning
    assert "(0.8, 0.8, 2.5) mm" in warning


def test_prepare_rejects_a_mask_with_another_foreground_value(tmp_path) -> None:
    raw = tmp_path / "raw"
    fixture.make_fixture(raw, seed=0)
    path = raw / "Rider" / "R1" / "R1.seg.nrrd"
    mask = read_image(path)
    write_image(path, np.asarray(mask.array) * 2, like=mask.geometry)
    public, private = tmp_path / "public", tmp_path / "private"
    public.mkdir()
    private.mkdir()
    job = PrepareJob(raw=raw, public=public, private=private, task=get_task(TASK), mini=True)
    with pytest.raises(DataError, match=r"R1: mask values \[0, 2\]"):
        prepare(job)


def test_prepare_rejects_duplicate_ids(tmp_path) -> None:
    raw = tmp_path / "raw"
    fixture.make_fixture(raw, seed=0)
    shutil.copytree(raw / "Rider" / "R1", raw / "KiTS" / "R1")
    with pytest.raises(DataError, match="'R1' appears twice"):
        discover_cases(raw)


# --- the study's definitions (docs/study-errata.md, seg_a) -------------------------------------


def test_study_hausdorff_is_one_directional_and_in_voxels(tmp_path) -> None:
    from study_cases import score_case, write_xyz

    # a line of 6 voxels along x (2 mm), y and z 1 voxel: every foreground voxel is surface
    truth = np.zeros((6, 1, 1), np.uint8)
    truth[[0, 3], 0, 0] = 1
    pred = np.zeros_like(truth)
    pred[0, 0, 0] = 1
    gold = write_xyz(tmp_path / "gold.nrrd", truth, (2.0, 1.0, 1.0))
    mine = write_xyz(tmp_path / "pred.nrrd", pred, (2.0, 1.0, 1.0))
    official = score_case(TASK, "official", mine, gold).values
    study = score_case(TASK, "study", mine, gold).values
    # Dice 2·1 / (2 + 1) under both
    assert official["dsc"] == study["dsc"] == pytest.approx(2 / 3)
    # official: gold voxel x=3 is 3 voxels · 2 mm from the prediction -> 6 mm;
    # study: prediction -> gold only, and the only predicted voxel lies on the gold -> 0
    assert official["hd"] == pytest.approx(6.0)
    assert study["hd"] == 0.0
    # the other way round: the predicted voxel x=3 is 3 voxels away (study: 3, not 6 mm)
    reverse = score_case(TASK, "study", gold, mine).values
    assert reverse["hd"] == pytest.approx(3.0)


def test_study_empty_prediction_gets_the_diagonal_in_voxels(tmp_path) -> None:
    from study_cases import score_case, write_xyz

    truth = np.zeros((4, 3, 2), np.uint8)
    truth[1, 1, 1] = 1
    gold = write_xyz(tmp_path / "gold.nrrd", truth, (2.0, 1.0, 3.0))
    empty = write_xyz(tmp_path / "pred.nrrd", np.zeros_like(truth), (2.0, 1.0, 3.0))
    # official: ‖(4·2, 3·1, 2·3)‖ = √109 mm; study: ‖(4, 3, 2)‖ = √29 voxels
    assert score_case(TASK, "official", empty, gold).values["hd"] == pytest.approx(math.sqrt(109))
    assert score_case(TASK, "study", empty, gold).values["hd"] == pytest.approx(math.sqrt(29))
