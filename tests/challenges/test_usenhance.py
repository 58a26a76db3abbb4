"""USenhance on the mini fixture: sorted pairs, grayscale conversion, validity, metric values."""

from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from scipy import ndimage

from rexmle.grading import grade_submission, validate_submission

TASK = "usenhance"


@pytest.fixture(scope="module")
def dirs(prepared_mini):
    return prepared_mini(TASK)


def _grade(dirs, folder):
    return grade_submission(TASK, folder, data_dir=dirs.root.parent, workers=1)


def _gold_copy(dirs, tmp_path: Path) -> Path:
    return Path(shutil.copytree(dirs.gold, tmp_path / "sub"))


def _test_ids(dirs) -> list[str]:
    with open(dirs.public / "sample_submission.csv", newline="") as handle:
        return [row["image_id"] for row in csv.DictReader(handle)]


def test_split_uses_sorted_pairs_and_counts(dirs) -> None:
    split = json.loads((dirs.private / "split.json").read_text())
    assert (len(split["train"]), len(split["test"])) == (16, 4)
    # ids are ordered breast_1, breast_10, breast_11, breast_2, carotid_1, ... before the permutation;
    # RandomState(42).permutation(20)[:4] = [0, 17, 15, 1] -> breast_1, thyroid_10, liver_2, breast_10
    assert split["test"] == ["breast_1", "thyroid_10", "liver_2", "breast_10"]
    # the liver high-quality images were RGB in raw: converted to grayscale, and counted
    assert split["source"]["converted_to_grayscale"] == 4
    with Image.open(dirs.gold / "enhanced" / "liver_2.png") as image:
        assert image.mode == "L"


def test_gold_scores_the_maximum(dirs) -> None:
    report = _grade(dirs, dirs.gold)
    assert report.metrics == {"lncc": 1.0, "ssim": 1.0, "psnr": 100.0}
    assert report.ranking.percentile == 1.0


def test_constant_sample_images_get_lncc_zero(dirs, tmp_path) -> None:
    folder = tmp_path / "sample"
    shutil.copytree(dirs.public / "enhanced", folder / "enhanced")
    shutil.copy(dirs.public / "sample_submission.csv", folder / "submission.csv")
    report = _grade(dirs, folder)
    # a constant image has no local contrast anywhere: no valid pixel, images differ -> 0.0
    assert report.metrics["lncc"] == 0.0
    assert report.metrics["ssim"] < 1.0


def test_blurred_gold_psnr_matches_a_direct_computation(dirs, tmp_path) -> None:
    folder = _gold_copy(dirs, tmp_path)
    expected = []
    for image_id in _test_ids(dirs):
        path = folder / "enhanced" / f"{image_id}.png"
        truth = np.asarray(Image.open(path), dtype=np.float64)
        blurred = np.rint(ndimage.uniform_filter(truth, 3, mode="reflect")).astype(np.uint8)
        Image.fromarray(blurred).save(path)
        mse = np.mean((blurred.astype(np.float64) - truth) ** 2)
        expected.append(10 * math.log10(255.0**2 / mse))
    report = _grade(dirs, folder)
    assert report.metrics["psnr"] == pytest.approx(np.mean(expected))
    assert report.metrics["lncc"] < 1.0
    assert report.metrics["ssim"] < 1.0


def test_low_quality_input_scores_below_gold(dirs, tmp_path) -> None:
    folder = _gold_copy(dirs, tmp_path)
    for image_id in _test_ids(dirs):
        shutil.copy(
            dirs.public / "test" / "low_quality" / f"{image_id}.png",
            folder / "enhanced" / f"{image_id}.png",
        )
    report = _grade(dirs, folder)
    assert report.valid
    assert all(math.isfinite(v) for v in report.metrics.values())
    assert report.metrics["lncc"] < 1.0
    assert report.metrics["psnr"] < 100.0


@pytest.mark.parametrize(
    ("mode", "shape", "needle"),
    [("RGB", (48, 64, 3), "mode 'RGB'"), ("L", (47, 64), "47 x 64"), ("I;16", (48, 64), "I;16")],
)
def test_wrong_mode_or_size_is_invalid(dirs, tmp_path, mode, shape, needle) -> None:
    folder = _gold_copy(dirs, tmp_path)
    target = folder / "enhanced" / "breast_1.png"
    array = np.zeros(shape, np.uint16 if mode == "I;16" else np.uint8)
    image = Image.fromarray(array)
    image.save(target)
    result = validate_submission(TASK, folder, data_dir=dirs.root.parent)
    assert not result.valid
    assert any("breast_1" in r and needle in r for r in result.reasons), result.reasons


def test_unreadable_file_non_png_name_and_jpeg_named_png(dirs, tmp_path) -> None:
    folder = _gold_copy(dirs, tmp_path)
    (folder / "enhanced" / "breast_1.png").write_bytes(b"\x89PNG broken")
    Image.open(folder / "enhanced" / "liver_2.png").save(folder / "enhanced" / "liver_2.jpg")
    text = (folder / "submission.csv").read_text().replace("liver_2.png", "liver_2.jpg")
    (folder / "submission.csv").write_text(text)
    thyroid = folder / "enhanced" / "thyroid_10.png"
    Image.open(thyroid).save(thyroid, format="JPEG")
    reasons = validate_submission(TASK, folder, data_dir=dirs.root.parent).reasons
    assert any("breast_1" in r and "unreadable" in r for r in reasons)
    assert any("liver_2.jpg" in r and "use one of .png" in r for r in reasons), reasons
    assert any("thyroid_10" in r and "is JPEG, not PNG" in r for r in reasons), reasons


# --- the study's definitions (docs/study-errata.md, usenhance) ---------------------------------


def test_study_psnr_and_ssim_use_the_pair_data_range(tmp_path) -> None:
    from skimage.metrics import structural_similarity
    from study_cases import score_case

    truth = np.full((16, 16), 100, np.uint8)
    truth[4:8, 4:8] = 200
    pred = truth.copy()
    pred[0, 0] = 110
    Image.fromarray(truth).save(tmp_path / "gold.png")
    Image.fromarray(pred).save(tmp_path / "pred.png")
    official = score_case("usenhance", "official", tmp_path / "pred.png", tmp_path / "gold.png")
    study = score_case("usenhance", "study", tmp_path / "pred.png", tmp_path / "gold.png")
    mse = 10.0**2 / 256
    # official: 10·log10(255² / MSE); study: L = max(200, 200) - min(100, 100) = 100
    assert official.values["psnr"] == pytest.approx(10 * math.log10(255.0**2 / mse))
    assert study.values["psnr"] == pytest.approx(10 * math.log10(100.0**2 / mse))
    assert official.values["psnr"] - study.values["psnr"] == pytest.approx(20 * math.log10(2.55))
    as_float = (pred.astype(np.float64), truth.astype(np.float64))
    assert study.values["ssim"] == pytest.approx(
        structural_similarity(as_float[1], as_float[0], data_range=100.0), abs=1e-12
    )
    assert official.values["ssim"] == pytest.approx(
        structural_similarity(as_float[1], as_float[0], data_range=255.0), abs=1e-12
    )
    assert study.values["lncc"] == official.values["lncc"]


def test_study_identical_images_keep_the_psnr_cap(tmp_path) -> None:
    from study_cases import score_case

    flat = np.full((8, 8), 7, np.uint8)
    Image.fromarray(flat).save(tmp_path / "gold.png")
    Image.fromarray(flat).save(tmp_path / "pred.png")
    study = score_case("usenhance", "study", tmp_path / "pred.png", tmp_path / "gold.png")
    # L = 0 (one constant image twice): SSIM 1 and the 100 dB cap, never inf or a division by 0
    assert study.values["ssim"] == 1.0
    assert study.values["psnr"] == 100.0
