"""PANTHER tasks 1 and 2 on the shared mini fixture: layouts, metric deviations, mask rules."""

from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import SimpleITK as sitk
from sklearn.model_selection import train_test_split
from surface_distance import metrics as deepmind

from rexmle.challenges.panther import fixture
from rexmle.challenges.panther.metrics import score_arrays
from rexmle.challenges.panther.prepare import LAYOUTS, discover_cases, prepare, task_layout
from rexmle.errors import DataError, SpecError
from rexmle.grading import grade_submission, validate_submission
from rexmle.io import read_image, write_image
from rexmle.tasks.jobs import PrepareJob
from rexmle.tasks.registry import get_task

TASKS = ("panther-task1", "panther-task2")
HEADER = ("image_id", "predicted_mask_path")
SPACING = (0.8, 0.8, 3.0)
SHAPE = (24, 20, 12)
# surface-distance itself imports from deprecated scipy namespaces
pytestmark = pytest.mark.filterwarnings("ignore:Please import:DeprecationWarning")


@pytest.fixture(scope="module", params=TASKS)
def task(request, prepared_mini):
    dirs = prepared_mini(request.param)
    split = json.loads((dirs.private / "split.json").read_text())
    return request.param, dirs, split["test"]


def _grade(task_id: str, dirs, folder: Path):
    return grade_submission(task_id, folder, data_dir=dirs.root.parent, workers=1)


def _copy_gold(dirs, target: Path) -> Path:
    shutil.copytree(dirs.gold, target)
    return target


def _mask(folder: Path, case_id: str) -> Path:
    return folder / "predictions" / f"{case_id}.mha"


def _write_csv(folder: Path, rows, header=HEADER) -> None:
    with open(folder / "submission.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)


def _invalid_reasons(task_id: str, dirs, folder: Path) -> list[str]:
    result = validate_submission(task_id, folder, data_dir=dirs.root.parent, workers=1)
    assert not result.valid
    report = _grade(task_id, dirs, folder)
    assert not report.valid
    assert report.ranking.percentile == 0.0
    return result.reasons


def _case(report, case_id: str) -> dict:
    return next(c for c in report.cases if c["case_id"] == case_id)


def test_split_and_layout(task) -> None:
    task_id, dirs, test_ids = task
    split = json.loads((dirs.private / "split.json").read_text())
    ids = sorted(split["train"] + split["test"])
    expected_ids = fixture.TASK1_IDS if task_id == "panther-task1" else fixture.TASK2_IDS
    assert ids == sorted(expected_ids)
    train, test = train_test_split(ids, test_size=0.2, random_state=42, shuffle=True)
    assert (split["train"], split["test"]) == (train, test)
    assert len(test) == 2
    assert split["source"]["label_values"] == [0, 1, 2]
    images = sorted(p.name for p in (dirs.public / "test" / "images").iterdir())
    assert images == sorted(f"{i}_0000.mha" for i in test_ids)
    labels = sorted(p.name for p in (dirs.public / "train" / "labels").iterdir())
    assert labels == sorted(f"{i}.mha" for i in train)
    unlabelled = dirs.public / "train_unlabeled" / "images"
    if task_id == "panther-task1":
        assert sorted(p.name for p in unlabelled.iterdir()) == sorted(fixture.UNLABELLED)
    else:
        assert not unlabelled.exists()


def test_gold_is_label_one_only(task) -> None:
    task_id, dirs, test_ids = task
    layout = task_layout(get_task(task_id).params)
    assert layout.number == (1 if task_id == "panther-task1" else 2)
    raw = discover_cases(dirs.raw, layout)
    for case_id in test_ids:
        raw_label = np.asarray(read_image(raw[case_id].label).array)
        gold = np.asarray(read_image(_mask(dirs.gold, case_id)).array)
        assert (raw_label == 2).any()  # pancreas present in the raw label ...
        np.testing.assert_array_equal(gold, (raw_label == 1).astype(np.uint8))  # ... not in gold


def test_an_unknown_task_number_is_a_spec_error() -> None:
    with pytest.raises(SpecError, match=r"params.task must be one of \[1, 2\], got 3"):
        task_layout({"task": 3})


def test_sample_submission_gets_the_uniform_penalty(task, tmp_path) -> None:
    task_id, dirs, _ = task
    folder = tmp_path / "sample"
    shutil.copytree(dirs.public / "predictions", folder / "predictions")
    shutil.copy(dirs.public / "sample_submission.csv", folder / "submission.csv")
    report = _grade(task_id, dirs, folder)
    # official pairing: shape (x, y, z) = (24, 20, 12) with spacing (s_z, s_y, s_x) = (3, .8, .8)
    #   D = ||(72, 16, 9.6)|| = sqrt(5184 + 256 + 92.16) = sqrt(5532.16)
    # physical: D = ||(19.2, 16, 36)|| = sqrt(368.64 + 256 + 1296) = sqrt(1920.64)
    for case in report.cases:
        assert case["dsc"] == 0.0
        assert case["msd"] == 0.0
        assert case["hd95"] == pytest.approx(math.sqrt(5532.16))
        assert case["masd"] == pytest.approx(math.sqrt(5532.16))
        assert case["hd95_physical"] == pytest.approx(math.sqrt(1920.64))
        assert case["volume_pred_mm3"] == 0.0
    # V_pred = 0 everywhere -> rmse = sqrt(mean(V_gt^2))
    volumes = [c["volume_gt_mm3"] for c in report.cases]
    assert report.metrics["rmse"] == pytest.approx(math.sqrt(np.mean(np.square(volumes))))
    # the mini volumes are tiny, so only rmse can rank well: dsc, msd, hd95, masd rank last or so
    assert report.ranking.positions["dsc"] >= 10


def test_one_slice_z_shift_under_both_pairings(task, tmp_path) -> None:
    task_id, dirs, test_ids = task
    folder = _copy_gold(dirs, tmp_path / "shift")
    case_id = test_ids[0]
    gold = read_image(_mask(folder, case_id))
    truth = np.asarray(gold.array) == 1
    shifted = np.roll(truth, 1, axis=2)
    assert not truth[..., -2:].any()
    write_image(_mask(folder, case_id), shifted.astype(np.uint8), like=gold.geometry)
    report = _grade(task_id, dirs, folder)
    case = _case(report, case_id)
    # every surfel is either on the other surface or one slice away, and the caps carry more
    # than 5 % of the area: HD95 = one slice = 3.0 mm physically; the official pairing gives the
    # z axis the spacing s_x = 0.8 mm
    assert case["hd95_physical"] == pytest.approx(3.0)
    assert case["hd95"] == pytest.approx(0.8)
    # independent check with DeepMind surface-distance on SimpleITK-order (z, y, x) arrays
    zyx_truth, zyx_pred = truth.transpose(2, 1, 0), shifted.transpose(2, 1, 0)
    official = deepmind.compute_surface_distances(zyx_truth, zyx_pred, SPACING)
    physical = deepmind.compute_surface_distances(zyx_truth, zyx_pred, SPACING[::-1])
    assert case["hd95"] == pytest.approx(deepmind.compute_robust_hausdorff(official, 95))
    assert case["hd95_physical"] == pytest.approx(deepmind.compute_robust_hausdorff(physical, 95))
    for key, distances in (("msd", official), ("msd_physical", physical)):
        expected = deepmind.compute_surface_dice_at_tolerance(distances, 5.0)
        assert case[key] == pytest.approx(expected)
    gt_to_pred, pred_to_gt = deepmind.compute_average_surface_distance(official)
    assert case["masd"] == pytest.approx((gt_to_pred + pred_to_gt) / 2)
    # the shift keeps the volume, so the volume error is 0 for both cases
    assert report.metrics["rmse"] == pytest.approx(0.0)
    n = int(truth.sum())
    assert case["dsc"] == pytest.approx(2 * int((truth & shifted).sum()) / (2 * n))


def test_a_uniform_case_is_penalised_and_the_others_still_scored(task, tmp_path) -> None:
    task_id, dirs, test_ids = task
    folder = _copy_gold(dirs, tmp_path / "ones")
    ones_id, gold_id = test_ids
    gold = read_image(_mask(folder, ones_id))
    write_image(_mask(folder, ones_id), np.ones(SHAPE, np.uint8), like=gold.geometry)
    report = _grade(task_id, dirs, folder)
    ones, kept = _case(report, ones_id), _case(report, gold_id)
    assert ones["dsc"] == 0.0
    assert ones["msd"] == 0.0
    assert ones["hd95"] == pytest.approx(math.sqrt(5532.16))
    # the all-ones volume is real (official code: 0): 24*20*12 voxels * 0.8*0.8*3.0 mm^3
    assert ones["volume_pred_mm3"] == pytest.approx(5760 * 1.92)
    assert kept["dsc"] == 1.0
    assert kept["hd95"] == 0.0
    # means over the two cases: dsc (0 + 1)/2; hd95 (D + 0)/2
    assert report.metrics["dsc"] == pytest.approx(0.5)
    assert report.metrics["hd95"] == pytest.approx(math.sqrt(5532.16) / 2)
    error = 5760 * 1.92 - ones["volume_gt_mm3"]
    assert report.metrics["rmse"] == pytest.approx(math.sqrt(error**2 / 2))


def test_pairings_agree_when_x_and_z_spacing_agree() -> None:
    rng = np.random.default_rng(3)
    truth = np.zeros((14, 12, 10), bool)
    truth[3:9, 4:8, 2:7] = True
    pred = np.zeros_like(truth)
    pred[4:10, 3:8, 3:8] = True
    pred |= rng.random(truth.shape) > 0.995
    for spacing in ((1.0, 1.0, 1.0), (0.7, 1.3, 0.7)):
        scores = score_arrays(pred, truth, spacing)
        for key in ("msd", "hd95", "masd"):
            assert scores[key] == pytest.approx(scores[f"{key}_physical"])
    anisotropic = score_arrays(pred, truth, (0.8, 0.8, 3.0))
    assert anisotropic["masd"] != pytest.approx(anisotropic["masd_physical"])


def test_spacing_mismatch_is_invalid(task, tmp_path) -> None:
    task_id, dirs, test_ids = task
    folder = _copy_gold(dirs, tmp_path / "s")
    gold = read_image(_mask(folder, test_ids[0]))
    write_image(_mask(folder, test_ids[0]), np.asarray(gold.array), spacing_mm=(1.0, 1.0, 1.0))
    (reason,) = _invalid_reasons(task_id, dirs, folder)
    assert test_ids[0] in reason
    assert "spacing (1.0, 1.0, 1.0)" in reason
    assert "(0.8, 0.8, 3.0)" in reason


def test_values_0_255_and_nan_are_invalid(task, tmp_path) -> None:
    task_id, dirs, test_ids = task
    folder = _copy_gold(dirs, tmp_path / "s")
    gold = read_image(_mask(folder, test_ids[0]))
    write_image(_mask(folder, test_ids[0]), np.asarray(gold.array) * 255, like=gold.geometry)
    floats = np.zeros(SHAPE, np.float32)
    floats[1, 1, 1] = np.nan
    write_image(_mask(folder, test_ids[1]), floats, like=gold.geometry)
    reasons = _invalid_reasons(task_id, dirs, folder)
    assert any(
        test_ids[0] in r and "255" in r and "allowed values are [0, 1]" in r for r in reasons
    )
    assert any(test_ids[1] in r and "NaN" in r for r in reasons)


def test_size_file_type_and_unreadable_files_are_invalid(task, tmp_path) -> None:
    task_id, dirs, test_ids = task
    folder = _copy_gold(dirs, tmp_path / "s")
    write_image(_mask(folder, test_ids[0]), np.zeros((24, 20, 11), np.uint8), spacing_mm=SPACING)
    (reason,) = _invalid_reasons(task_id, dirs, folder)
    assert test_ids[0] in reason
    assert "(24, 20, 11)" in reason
    assert "(24, 20, 12)" in reason
    shutil.copy(_mask(dirs.gold, test_ids[0]), folder / "predictions" / "a.nrrd")
    _mask(folder, test_ids[1]).write_bytes(b"ObjectType = Image\nbroken")
    _write_csv(
        folder,
        [(test_ids[0], "predictions/a.nrrd"), (test_ids[1], f"predictions/{test_ids[1]}.mha")],
    )
    reasons = _invalid_reasons(task_id, dirs, folder)
    assert any(test_ids[0] in r and "file type not accepted" in r for r in reasons)
    assert any(test_ids[1] in r and "unreadable" in r for r in reasons)


def test_nifti_masks_are_accepted(task, tmp_path) -> None:
    task_id, dirs, test_ids = task
    folder = _copy_gold(dirs, tmp_path / "nii")
    gold = read_image(_mask(folder, test_ids[0]))
    write_image(folder / "p.nii.gz", np.asarray(gold.array), like=gold.geometry)
    _write_csv(folder, [(test_ids[0], "p.nii.gz"), (test_ids[1], f"predictions/{test_ids[1]}.mha")])
    report = _grade(task_id, dirs, folder)
    assert report.valid
    assert report.metrics["dsc"] == 1.0


def test_nifti_with_a_trailing_singleton_axis_is_3d_as_in_simpleitk(task, tmp_path) -> None:
    import nibabel as nib

    task_id, dirs, test_ids = task
    folder = _copy_gold(dirs, tmp_path / "nii4")
    gold = read_image(_mask(folder, test_ids[0]))
    write_image(folder / "p.nii.gz", np.asarray(gold.array), like=gold.geometry)
    # the same voxels with an (x, y, z, 1) header: SimpleITK (the official reader) sees 3-D
    three_d = nib.load(str(folder / "p.nii.gz"))
    four_d = np.asarray(three_d.dataobj)[..., np.newaxis]
    nib.save(nib.Nifti1Image(four_d, three_d.affine, three_d.header), str(folder / "p.nii.gz"))
    _write_csv(folder, [(test_ids[0], "p.nii.gz"), (test_ids[1], f"predictions/{test_ids[1]}.mha")])
    report = _grade(task_id, dirs, folder)
    assert report.valid, report.reasons
    assert report.metrics["dsc"] == 1.0


def test_prepare_rejects_a_test_case_without_tumour(tmp_path) -> None:
    raw = tmp_path / "raw"
    fixture.make_fixture(raw, seed=0)
    # task 2 test ids of the fixture split: sorted 10303..10312, RandomState(42) -> 10311, 10304
    path = raw / "PANTHER_Task2" / "LabelsTr" / "10304.mha"
    label = read_image(path)
    write_image(
        path,
        np.where(np.asarray(label.array) == 1, 2, label.array).astype(np.uint8),
        like=label.geometry,
    )
    public, private = tmp_path / "pub", tmp_path / "priv"
    public.mkdir()
    private.mkdir()
    job = PrepareJob(
        raw=raw, public=public, private=private, task=get_task("panther-task2"), mini=True
    )
    with pytest.raises(DataError, match=r"\['10304'\] have no tumour voxel"):
        prepare(job)


def test_prepare_rejects_a_duplicated_image_and_a_missing_label(tmp_path) -> None:
    raw = tmp_path / "raw"
    fixture.make_fixture(raw, seed=0)
    copy = raw / "extra" / "ImagesTr"
    copy.mkdir(parents=True)
    shutil.copy(raw / "PANTHER_Task2" / "ImagesTr" / "10303_0000.mha", copy)
    (raw / "PANTHER_Task2" / "LabelsTr" / "10305.mha").unlink()
    with pytest.raises(DataError) as err:
        discover_cases(raw, LAYOUTS[2])
    assert "10303: 2 image(s), 1 label(s)" in str(err.value)
    assert "10305: 1 image(s), 0 label(s)" in str(err.value)
    # task-1 files never match the task-2 patterns and the reverse
    assert set(discover_cases(raw, LAYOUTS[1])) == set(fixture.TASK1_IDS)


def test_sitk_reads_what_the_grader_compares() -> None:
    # the (x, y, z) arrays of rexmle.io are SimpleITK's (z, y, x) arrays transposed
    array = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    image = sitk.GetImageFromArray(array)
    assert image.GetSize() == (4, 3, 2)


# --- the study's definitions (docs/study-errata.md, panther-task1/2) ---------------------------


@pytest.mark.parametrize("task_id", ["panther-task1", "panther-task2"])
def test_study_pairs_the_spacing_as_sy_sx_sz_on_xyz_arrays(task_id, tmp_path) -> None:
    from study_cases import score_case, write_xyz

    truth = np.zeros((2, 3, 4), np.uint8)
    truth[0, 1, 1:3] = 1
    spacing = (1.0, 2.0, 3.0)
    gold = write_xyz(tmp_path / "gold.mha", truth, spacing)
    empty = write_xyz(tmp_path / "pred.mha", np.zeros_like(truth), spacing)
    official = score_case(task_id, "official", empty, gold).values
    study = score_case(task_id, "study", empty, gold).values
    # a uniform prediction gets the volume diagonal D = ‖(n_x·a, n_y·b, n_z·c)‖ for the pairing
    # (a, b, c) on the (2, 3, 4) array: official (s_z, s_y, s_x) = (3, 2, 1) -> √88;
    # study (s_y, s_x, s_z) = (2, 1, 3) -> ‖(4, 3, 12)‖ = 13; physical (1, 2, 3) -> √184
    assert official["hd95"] == official["masd"] == pytest.approx(math.sqrt(88))
    assert study["hd95"] == study["masd"] == pytest.approx(13.0)
    assert official["hd95_physical"] == study["hd95_physical"] == pytest.approx(math.sqrt(184))
    assert official["dsc"] == study["dsc"] == 0.0


def test_study_equals_the_physical_keys_when_in_plane_spacing_is_equal(tmp_path) -> None:
    from study_cases import score_case, write_xyz

    truth = np.zeros((10, 9, 8), np.uint8)
    truth[2:7, 2:6, 2:6] = 1
    pred = np.roll(truth, 2, axis=2)
    pred[3, 3, 0:2] = 1
    spacing = (0.7, 0.7, 2.5)  # s_x = s_y: the study's (s_y, s_x, s_z) is the physical pairing
    gold = write_xyz(tmp_path / "gold.mha", truth, spacing)
    mine = write_xyz(tmp_path / "pred.mha", pred, spacing)
    official = score_case("panther-task1", "official", mine, gold).values
    study = score_case("panther-task1", "study", mine, gold).values
    for key in ("msd", "hd95", "masd"):
        assert study[key] == official[f"{key}_physical"], key
    assert study["hd95"] != official["hd95"]  # the official pairing puts s_z on x
