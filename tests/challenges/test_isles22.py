"""ISLES'22 on the mini fixture: layout and split, hand-computed metrics, its mask rules."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest

from rexmle.grading import grade_submission, validate_submission
from rexmle.io import read_geometry, read_image, write_image

TASK = "isles22"


@pytest.fixture(scope="module")
def dirs(prepared_mini):
    return prepared_mini(TASK)


def _copy_gold(dirs, target: Path) -> Path:
    shutil.copytree(dirs.gold, target)
    return target


def _grade(dirs, folder: Path):
    return grade_submission(TASK, folder, data_dir=dirs.root.parent, workers=1)


def test_layout_split_and_manifest(dirs) -> None:
    split = json.loads((dirs.private / "split.json").read_text())
    # sorted keys 0001..0010, RandomState(42).permutation(10) starts [8, 1] -> cases 0009 and 0002
    assert split["test"] == ["sub-strokecase0009", "sub-strokecase0002"]
    assert len(split["train"]) == 8
    assert sorted((dirs.public / "test").iterdir())[0].name == "sub-strokecase0002_adc.nii.gz"
    assert (dirs.public / "train" / "sub-strokecase0001_flair.nii.gz").is_file()
    assert not any("msk" in p.name for p in (dirs.public / "test").iterdir())
    manifest = json.loads(dirs.prepared_json.read_text())
    assert manifest["mini"] is True
    assert "gold/submission.csv" in manifest["files"]["private"]
    assert "description.md" in manifest["files"]["public"]
    public_names = {p.name for p in dirs.public.rglob("*")}
    assert not public_names & {"grade.py", "leaderboard.csv", "prepare.py", "split.json"}


def test_sample_submission_scores_one_only_on_the_empty_case(dirs, tmp_path) -> None:
    folder = tmp_path / "sample"
    shutil.copytree(dirs.public / "predictions", folder / "predictions")
    shutil.copy(dirs.public / "sample_submission.csv", folder / "submission.csv")
    report = _grade(dirs, folder)
    by_case = {c["case_id"]: c for c in report.cases}
    # all-zero prediction: dice 0 where the GT has a lesion, 1 on the empty case 0009
    assert by_case["sub-strokecase0002"]["dice"] == 0.0
    assert by_case["sub-strokecase0009"]["dice"] == 1.0
    assert report.metrics["dice"] == 0.5


def test_partial_mask_matches_a_hand_computation(dirs, tmp_path) -> None:
    folder = _copy_gold(dirs, tmp_path / "partial")
    path = folder / "predictions" / "sub-strokecase0002_pred.nii.gz"
    gold = read_image(path)
    mask = np.asarray(gold.array).copy()
    mask[6:8, 6:8, 4:6] = 0  # keep only the first 2x2x2 block of the diagonal pair
    write_image(path, mask, like=gold.geometry)
    report = _grade(dirs, folder)
    case = next(c for c in report.cases if c["case_id"] == "sub-strokecase0002")
    # |G| = 16, |P| = 8, |G∩P| = 8 -> dice = 16 / 24 = 2/3
    assert case["dice"] == pytest.approx(2 / 3)
    # the two GT blocks touch at a corner: one lesion under 26-connectivity, hit -> F1 = 1
    assert case["lesion_f1"] == 1.0
    assert case["lesion_count_diff"] == 0.0
    # 8 missing voxels x (2 * 2 * 4) mm^3 = 128 mm^3 = 0.128 mL
    assert case["abs_volume_diff"] == pytest.approx(0.128)
    # mean over the two test cases (the empty case scores 1): (2/3 + 1) / 2
    assert report.metrics["dice"] == pytest.approx(5 / 6)


def test_eroded_masks_score_lower_dice_than_gold(dirs, tmp_path) -> None:
    from scipy.ndimage import binary_erosion

    folder = _copy_gold(dirs, tmp_path / "eroded")
    path = folder / "predictions" / "sub-strokecase0002_pred.nii.gz"
    gold = read_image(path)
    truth = np.asarray(gold.array) == 1
    eroded = binary_erosion(truth, structure=np.ones((1, 2, 1), bool))
    write_image(path, eroded.astype(np.uint8), like=gold.geometry)
    n_truth, n_eroded = int(truth.sum()), int(eroded.sum())
    expected = 2 * n_eroded / (n_truth + n_eroded)
    report = _grade(dirs, folder)
    case = next(c for c in report.cases if c["case_id"] == "sub-strokecase0002")
    assert case["dice"] == pytest.approx(expected)
    assert case["dice"] < 1.0


def _invalid_reasons(dirs, folder: Path) -> list[str]:
    result = validate_submission(TASK, folder, data_dir=dirs.root.parent, workers=1)
    assert not result.valid
    report = _grade(dirs, folder)
    assert not report.valid
    assert report.metrics == {}
    assert report.ranking.percentile == 0.0
    return result.reasons


def _rewrite_mask(folder: Path, case_id: str, array: np.ndarray, suffix=".nii.gz") -> None:
    geometry = read_geometry(folder / "predictions" / f"{case_id}_pred.nii.gz")
    write_image(folder / "predictions" / f"{case_id}_pred{suffix}", array, like=geometry)


def test_wrong_shape(dirs, tmp_path) -> None:
    folder = _copy_gold(dirs, tmp_path / "s")
    _rewrite_mask(folder, "sub-strokecase0002", np.zeros((17, 16, 8), np.uint8))
    (reason,) = _invalid_reasons(dirs, folder)
    assert "sub-strokecase0002" in reason
    assert "(17, 16, 8)" in reason
    assert "(16, 16, 8)" in reason


def test_trailing_singleton_axis_is_not_squeezed(dirs, tmp_path) -> None:
    folder = _copy_gold(dirs, tmp_path / "s")
    path = folder / "predictions" / "sub-strokecase0002_pred.nii.gz"
    nib.save(nib.Nifti1Image(np.zeros((16, 16, 8, 1), np.uint8), np.eye(4)), str(path))
    (reason,) = _invalid_reasons(dirs, folder)
    assert "4-D" in reason
    assert "sub-strokecase0002" in reason


def test_nan_in_a_float_mask(dirs, tmp_path) -> None:
    folder = _copy_gold(dirs, tmp_path / "s")
    mask = np.zeros((16, 16, 8), np.float32)
    mask[0, 0, 0] = np.nan
    _rewrite_mask(folder, "sub-strokecase0009", mask)
    (reason,) = _invalid_reasons(dirs, folder)
    assert "sub-strokecase0009" in reason
    assert "NaN" in reason


def test_value_two_and_half_are_not_allowed_but_float_ones_are(dirs, tmp_path) -> None:
    folder = _copy_gold(dirs, tmp_path / "s")
    mask = np.zeros((16, 16, 8), np.uint8)
    mask[1, 1, 1] = 2
    _rewrite_mask(folder, "sub-strokecase0009", mask)
    (reason,) = _invalid_reasons(dirs, folder)
    assert "2" in reason
    assert "allowed values are [0, 1]" in reason
    floats = np.zeros((16, 16, 8), np.float32)
    floats[1, 1, 1] = 0.5
    _rewrite_mask(folder, "sub-strokecase0009", floats)
    (reason,) = _invalid_reasons(dirs, folder)
    assert "0.5" in reason
    assert "allowed values are [0, 1]" in reason
    floats[1, 1, 1] = 1.0
    _rewrite_mask(folder, "sub-strokecase0009", floats)
    assert validate_submission(TASK, folder, data_dir=dirs.root.parent).valid


def test_affine_mismatch_is_only_a_warning(dirs, tmp_path) -> None:
    folder = _copy_gold(dirs, tmp_path / "s")
    path = folder / "predictions" / "sub-strokecase0009_pred.nii.gz"
    write_image(path, np.zeros((16, 16, 8), np.uint8), spacing_mm=(1.0, 1.0, 1.0))
    result = validate_submission(TASK, folder, data_dir=dirs.root.parent)
    assert result.valid
    assert any("affine differs" in w and "sub-strokecase0009" in w for w in result.warnings)


def test_voxel_volume_is_the_official_float32_product_of_the_header_zooms(tmp_path) -> None:
    from rexmle.challenges.isles22.metrics import voxel_volume_ml

    # 1.2 x 1.2 x 2.0 mm: the product of the float32 zooms is not the float64 product
    path = tmp_path / "gt.nii.gz"
    image = nib.Nifti1Image(np.zeros((4, 4, 4), np.uint8), np.diag([1.2, 1.2, 2.0, 1.0]))
    nib.save(image, str(path))
    zooms = nib.load(str(path)).header.get_zooms()[:3]
    official = float(np.prod(zooms)) / 1000  # eval_utils: np.prod of the header's float32 zooms
    ours = voxel_volume_ml(read_image(path).spacing_mm)
    assert ours == official
    assert ours != np.prod([float(z) for z in zooms]) / 1000  # a float64 product differs
