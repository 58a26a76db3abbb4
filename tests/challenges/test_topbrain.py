"""TopBrain tracks 1 (CTA) and 2 (MRA) end to end on the shared mini fixture."""

from __future__ import annotations

import csv
import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from scipy import ndimage
from skimage.morphology import skeletonize
from sklearn.model_selection import train_test_split

from rexmle.challenges.topbrain import fixture
from rexmle.challenges.topbrain.labels import TABLE_SHA256, TRACKS, table_bytes, valid_neighbors
from rexmle.challenges.topbrain.metrics import aggregate, score_arrays
from rexmle.challenges.topbrain.prepare import discover_cases, prepare
from rexmle.errors import DataError
from rexmle.grading import grade_submission, validate_submission
from rexmle.io import read_image, write_image
from rexmle.metrics.topology import label_neighbors
from rexmle.tasks.jobs import PrepareJob
from rexmle.tasks.registry import get_task
from rexmle.tasks.rows import CaseRow

TASKS = {"topbrain-track1": "ct", "topbrain-track2": "mr"}
HEADER = ("image_id", "predicted_mask_path")
SHAPE = (24, 20, 16)


@pytest.fixture(scope="module", params=sorted(TASKS))
def task(request, prepared_mini):
    dirs = prepared_mini(request.param)
    split = json.loads((dirs.private / "split.json").read_text())
    return request.param, TASKS[request.param], dirs, split["test"]


def _grade(task_id: str, dirs, folder: Path):
    return grade_submission(task_id, folder, data_dir=dirs.root.parent, workers=1)


def _copy_gold(dirs, target: Path) -> Path:
    shutil.copytree(dirs.gold, target)
    return target


def _pred(folder: Path, modality: str, pid: str) -> Path:
    return folder / "predictions" / f"topcow_{modality}_{pid}_0000.nii.gz"


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


def _case(report, pid: str) -> dict:
    return next(c for c in report.cases if c["case_id"] == pid)


@pytest.mark.parametrize("modality", ["ct", "mr"])
def test_vendored_tables_match_the_published_files(modality) -> None:
    assert hashlib.sha256(table_bytes(modality)).hexdigest() == TABLE_SHA256[modality]
    table = valid_neighbors(modality)
    assert sorted(table) == list(range(1, TRACKS[modality].n_labels + 1))
    for label, allowed in table.items():
        assert label not in allowed
        for other in allowed:
            assert label in table[other]  # symmetric


def test_track_label_sets() -> None:
    assert len(TRACKS["ct"].side_road) == 18
    assert len(TRACKS["mr"].side_road) == 17
    assert TRACKS["ct"].names[40] == "SSS"
    assert TRACKS["mr"].names[42] == "L-MMA"
    assert TRACKS["ct"].names[10] == TRACKS["mr"].names[10] == "Acom"


@pytest.mark.parametrize(("task_id", "modality"), sorted(TASKS.items()))
def test_declared_mask_values_are_the_track_label_set(task_id, modality) -> None:
    spec = get_task(task_id)
    assert spec.params["scan"] == modality
    rule = spec.submission.column("predicted_mask_path").file
    assert rule.values == list(range(TRACKS[modality].n_labels + 1))
    assert rule.grid_from == f"test/images/topcow_{modality}_{{case_id}}_0000.nii.gz"


@pytest.mark.parametrize("modality", ["ct", "mr"])
def test_fixture_tubes_touch_only_valid_neighbours(modality) -> None:
    rng = np.random.default_rng(0)
    table = valid_neighbors(modality)
    for _ in range(10):
        labels = fixture.label_map(modality, rng)
        for label, touching in label_neighbors(labels).items():
            assert touching <= table[label], (label, touching - table[label])


def test_split_and_layout(task) -> None:
    _, modality, dirs, _ = task
    split = json.loads((dirs.private / "split.json").read_text())
    ids = sorted(split["train"] + split["test"])
    assert ids == list(fixture.PIDS)
    train, test = train_test_split(ids, test_size=0.2, random_state=42, shuffle=True)
    assert (split["train"], split["test"]) == (train, test)
    assert len(train) == 4
    assert len(test) == 2
    labels = sorted(p.name for p in (dirs.public / "train" / "labels").iterdir())
    assert labels == sorted(f"topcow_{modality}_{i}.nii.gz" for i in train)
    images = sorted(p.name for p in (dirs.public / "test" / "images").iterdir())
    assert images == sorted(f"topcow_{modality}_{i}_0000.nii.gz" for i in test)
    with open(dirs.public / "sample_submission.csv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["image_id"] for r in rows] == sorted(test)  # leading zeros kept
    assert (
        rows[0]["predicted_mask_path"]
        == f"predictions/topcow_{modality}_{rows[0]['image_id']}_0000.nii.gz"
    )


def test_gold_gets_the_expected_values(task) -> None:
    task_id, modality, dirs, test_ids = task
    raw = discover_cases(dirs.raw, TRACKS[modality])
    for pid in test_ids:
        assert _pred(dirs.gold, modality, pid).read_bytes() == raw[pid].label.read_bytes()
    expected = json.loads((dirs.private / "expected_gold.json").read_text())
    report = _grade(task_id, dirs, dirs.gold)
    assert report.valid
    assert report.metrics["dice"] == 1.0
    assert report.metrics["cldice"] == 1.0
    assert report.metrics["b0_error"] == 0.0
    assert report.metrics["hd95"] == 0.0
    # the fixture's tubes touch only valid neighbours, so the logged GT error is 0
    assert report.metrics["neighbor_error"] == expected["neighbor_error"] == 0.0
    # side-road labels present in a test GT: 8, 9, 10, 15, 25, 31 (+ 41 for MR)
    # -> 6 / 18 (CT) or 7 / 17 (MR); every absent label has F1 = 0 for every submission
    cap = 6 / 18 if modality == "ct" else 7 / 17
    assert report.metrics["f1_side_road"] == pytest.approx(expected["f1_side_road"])
    assert expected["f1_side_road"] == pytest.approx(cap)
    positions = report.ranking.positions
    assert all(
        positions[k] == 1.0 for k in ("dice", "cldice", "b0_error", "hd95", "neighbor_error")
    )


def test_sample_submission_gets_the_empty_values(task, tmp_path) -> None:
    task_id, _, dirs, _ = task
    folder = tmp_path / "sample"
    shutil.copytree(dirs.public / "predictions", folder / "predictions")
    shutil.copy(dirs.public / "sample_submission.csv", folder / "submission.csv")
    assert validate_submission(task_id, folder, data_dir=dirs.root.parent).valid
    report = _grade(task_id, dirs, folder)
    # empty prediction: every GT label scores Dice 0, clDice 0, HD95 290 mm; each GT tube is one
    # component, so B0err = 1 per label; no predicted label -> NbErr 0; side roads all FN -> F1 0
    assert report.metrics == {
        "dice": 0.0,
        "cldice": 0.0,
        "b0_error": 1.0,
        "hd95": 290.0,
        "neighbor_error": 0.0,
        "f1_side_road": 0.0,
    }


def test_label_10_touching_label_23_is_an_invalid_neighbour(task, tmp_path) -> None:
    task_id, modality, dirs, test_ids = task
    folder = _copy_gold(dirs, tmp_path / "nb")
    pid = test_ids[0]
    gold = read_image(_pred(folder, modality, pid))
    labels = np.asarray(gold.array).astype(np.uint8)
    k = len(set(np.unique(labels).tolist()) - {0})
    acom = np.argwhere(labels == 10)  # a line along x
    x, y, z = acom[len(acom) // 2]
    below = labels[x - 1 : x + 2, y - 1 : y + 2, z - 2 : z + 1]
    assert set(np.unique(below).tolist()) == {0, 10}  # only the Acom is near
    labels[x, y, z - 1] = 23  # R-VA under the Acom: not in either's valid list
    write_image(_pred(folder, modality, pid), labels, like=gold.geometry)
    report = _grade(task_id, dirs, folder)
    case = _case(report, pid)
    # NbErr_10 = 1 (23 touches it), NbErr_23 = 1 (10 touches it); mean over k + 1 labels
    assert case["neighbor_error"] == pytest.approx(2 / (k + 1))
    # label 23 is absent from the GT: Dice 0 and HD95 290 for it, ideal for the k others
    assert case["dice"] == pytest.approx(k / (k + 1))
    assert case["hd95"] == pytest.approx(290 / (k + 1))
    assert report.metrics["neighbor_error"] == pytest.approx(1 / (k + 1))  # the other case has 0


def test_dropping_half_a_tube_raises_hd95_in_both_directions(task, tmp_path) -> None:
    task_id, modality, dirs, test_ids = task
    folder = _copy_gold(dirs, tmp_path / "half")
    pid = test_ids[0]
    gold = read_image(_pred(folder, modality, pid))
    labels = np.asarray(gold.array).astype(np.uint8)
    k = len(set(np.unique(labels).tolist()) - {0})
    basilar = np.argwhere(labels == 1)
    assert len(basilar) == 6
    assert len({tuple(v[:2]) for v in basilar}) == 1
    top = np.sort(basilar[:, 2])[3:]
    labels[basilar[0, 0], basilar[0, 1], top] = 0  # keep the lower three voxels
    write_image(_pred(folder, modality, pid), labels, like=gold.geometry)
    report = _grade(task_id, dirs, folder)
    case = _case(report, pid)
    dz = fixture.SPACING_MM[modality][2]
    # P ⊂ G, so d(P->G) = 0 (the one-directional reference version gave 0); d(G->P) over the six
    # GT surface voxels = [0, 0, 0, dz, 2dz, 3dz]; numpy percentile 95 at rank 0.95 * 5 = 4.75:
    # 2dz + 0.75 * dz = 2.75 dz (2.2 mm for CT, 1.65 mm for MR)
    assert case["hd95"] == pytest.approx(2.75 * dz / k)
    # Dice_1 = 2 * 3 / (6 + 3) = 2/3; skeleton of P is inside G (Tprec 1), half the GT skeleton is
    # inside P (Tsens 1/2): clDice_1 = 2 * 0.5 / 1.5 = 2/3; still one component
    assert case["dice"] == pytest.approx((k - 1 + 2 / 3) / k)
    assert case["cldice"] == pytest.approx((k - 1 + 2 / 3) / k)
    assert case["b0_error"] == 0.0


def test_metrics_on_boxes_equal_full_array_computations() -> None:
    rng = np.random.default_rng(7)
    truth = fixture.label_map("ct", rng)
    pred = np.roll(truth, 1, axis=0)
    pred[ndimage.binary_dilation(truth == 4, iterations=1) & (pred == 0)] = 4
    spacing = (0.5, 0.5, 0.8)
    values, _ = score_arrays(pred, truth, spacing, "ct")
    labels = sorted((set(np.unique(truth).tolist()) | set(np.unique(pred).tolist())) - {0})

    def full_cldice(p, g):
        sp, sg = skeletonize(p).astype(bool), skeletonize(g).astype(bool)
        tprec = (sp & g).sum() / sp.sum() if sp.sum() else 0.0
        tsens = (sg & p).sum() / sg.sum() if sg.sum() else 0.0
        return 0.0 if tprec + tsens == 0 else 2 * tprec * tsens / (tprec + tsens)

    def full_hd95(p, g):
        box = np.ones((3, 3, 3), bool)
        p, g = np.pad(p, 1), np.pad(g, 1)
        sp = p & ~ndimage.binary_erosion(p, structure=box)
        sg = g & ~ndimage.binary_erosion(g, structure=box)
        d_pg = ndimage.distance_transform_edt(~sg, sampling=spacing)[sp]
        d_gp = ndimage.distance_transform_edt(~sp, sampling=spacing)[sg]
        return max(np.percentile(d_pg, 95), np.percentile(d_gp, 95))

    cl = [full_cldice(pred == lab, truth == lab) for lab in labels]
    hd = [full_hd95(pred == lab, truth == lab) for lab in labels]
    assert values["cldice"] == pytest.approx(np.mean(cl))
    assert values["hd95"] == pytest.approx(np.mean(hd))


def test_a_ct_label_map_with_label_41_is_invalid(tmp_path, prepared_mini) -> None:
    dirs = prepared_mini("topbrain-track1")
    pid = json.loads((dirs.private / "split.json").read_text())["test"][0]
    folder = _copy_gold(dirs, tmp_path / "s")
    gold = read_image(_pred(folder, "ct", pid))
    labels = np.asarray(gold.array).astype(np.uint8)
    labels[0, 0, 0] = 41
    write_image(_pred(folder, "ct", pid), labels, like=gold.geometry)
    (reason,) = _invalid_reasons("topbrain-track1", dirs, folder)
    assert pid in reason
    assert "values 41 are not allowed" in reason
    assert reason.endswith(
        "allowed values are [0, 1, 2, " + ", ".join(map(str, range(3, 41))) + "]"
    )


def test_size_nan_and_unreadable_files_are_invalid(task, tmp_path) -> None:
    task_id, modality, dirs, test_ids = task
    folder = _copy_gold(dirs, tmp_path / "s")
    spacing = fixture.SPACING_MM[modality]
    write_image(
        _pred(folder, modality, test_ids[0]), np.zeros((24, 20, 15), np.uint8), spacing_mm=spacing
    )
    floats = np.zeros(SHAPE, np.float32)
    floats[2, 2, 2] = np.nan
    write_image(_pred(folder, modality, test_ids[1]), floats, spacing_mm=spacing)
    reasons = _invalid_reasons(task_id, dirs, folder)
    assert any(test_ids[0] in r and "(24, 20, 15)" in r and "(24, 20, 16)" in r for r in reasons)
    assert any(test_ids[1] in r and "NaN" in r for r in reasons)
    _pred(folder, modality, test_ids[1]).write_bytes(b"\x1f\x8b not gzip")
    reasons = _invalid_reasons(task_id, dirs, folder)
    assert any(test_ids[1] in r and "unreadable" in r for r in reasons)


def test_spacing_difference_is_only_a_warning(task, tmp_path) -> None:
    task_id, modality, dirs, test_ids = task
    folder = _copy_gold(dirs, tmp_path / "s")
    gold = read_image(_pred(folder, modality, test_ids[0]))
    mha = folder / "p.mha"
    write_image(mha, np.asarray(gold.array).astype(np.uint8), spacing_mm=(1.0, 1.0, 1.0))
    _write_csv(
        folder,
        [
            (test_ids[0], "p.mha"),
            (test_ids[1], f"predictions/topcow_{modality}_{test_ids[1]}_0000.nii.gz"),
        ],
    )
    result = validate_submission(task_id, folder, data_dir=dirs.root.parent)
    assert result.valid
    assert any("spacing" in w and test_ids[0] in w for w in result.warnings)
    report = _grade(task_id, dirs, folder)
    assert report.metrics["dice"] == 1.0
    assert report.metrics["hd95"] == 0.0


def test_prepare_rejects_bad_raw_labels(tmp_path) -> None:
    raw = tmp_path / "raw"
    fixture.make_fixture(raw, seed=0)
    labels = raw / fixture.TOP_FOLDER / "labelsTr_topbrain_ct"
    path = labels / "topcow_ct_004.nii.gz"
    label = read_image(path)
    array = np.asarray(label.array).copy()
    array[0, 0, 0] = 42
    write_image(path, array, like=label.geometry)
    public, private = tmp_path / "pub", tmp_path / "priv"
    public.mkdir()
    private.mkdir()
    job = PrepareJob(
        raw=raw, public=public, private=private, task=get_task("topbrain-track1"), mini=True
    )
    with pytest.raises(DataError, match=r"ct case 004: label values \[42\] are outside 0..40"):
        prepare(job)
    # the MR track is unaffected; a missing label stops it
    (raw / fixture.TOP_FOLDER / "labelsTr_topbrain_mr" / "topcow_mr_010.nii.gz").unlink()
    with pytest.raises(DataError, match="010: 1 image"):
        discover_cases(raw, TRACKS["mr"])


# --- cases mirrored from the official unit tests (CoWBenchmark/TopBrain_Eval_Metrics) ----------


def test_official_invalid_neighbors_absent_pred() -> None:
    # test_invalid_neighbors_all_classes_absent_pred: a 3x3x3 image with labels 30, 31, 32 on
    # the diagonal; CT table -> NbErr 30: 1, 31: 2, 32: 1, mean 4/3; with the images swapped
    # (blank prediction) -> 0
    blank = np.zeros((3, 3, 3), np.uint8)
    diagonal = blank.copy()
    for i in range(3):
        diagonal[i, i, i] = 30 + i
    values, _ = score_arrays(diagonal, blank, (1.0, 1.0, 1.0), "ct")
    assert values["neighbor_error"] == pytest.approx(4 / 3)
    values, _ = score_arrays(blank, diagonal, (1.0, 1.0, 1.0), "ct")
    assert values["neighbor_error"] == 0.0


@pytest.mark.parametrize("modality", ["ct", "mr"])
def test_official_side_road_threshold_iou_planes(modality) -> None:
    # test_detection_sideroad_labels_ThresholdIoU and
    # test_invalid_neighbors_all_classes_detection_label8910: four z planes, GT 4x4 squares of
    # labels 8, 9, 10 and nothing in the last plane; the prediction has 4, 3 and 5 voxels of
    # them and one voxel of label 15
    truth = np.zeros((4, 4, 4), np.uint8)
    truth[:, :, 0], truth[:, :, 1], truth[:, :, 2] = 8, 9, 10
    pred = np.zeros_like(truth)
    pred[0, :, 0] = 8  # IoU 4/16 = 0.25 -> TP
    pred[0, :3, 1] = 9  # IoU 3/16 < 0.25 -> FN
    pred[0, :, 2] = 10  # IoU 5/16 -> TP
    pred[1, 0, 2] = 10
    pred[0, 0, 3] = 15  # absent from GT -> FP
    values, outcomes = score_arrays(pred, truth, (1.0, 1.0, 1.0), modality)
    assert {k: str(v) for k, v in outcomes.items() if str(v) != "TN"} == {
        8: "TP",
        9: "FN",
        10: "TP",
        15: "FP",
    }
    assert set(outcomes) == set(TRACKS[modality].side_road)
    # NbErr: 8 touches 9 (invalid) -> 1; 9 touches 8 and 10 -> 2; 10 touches 9 (invalid) and
    # 15 (valid) -> 1; 15 touches 10 -> 0; mean over the four predicted labels = 1.0
    assert values["neighbor_error"] == pytest.approx(1.0)
    # one case: F1 = 1 for labels 8 and 10, 0 for every other side-road label
    row = CaseRow(case_id="x", values=dict(values), detail=outcomes)
    task_of = {scan: task_id for task_id, scan in TASKS.items()}
    metrics = aggregate([row], get_task(task_of[modality]))
    assert metrics["f1_side_road"] == pytest.approx(2 / len(TRACKS[modality].side_road))


# --- the study's definitions (docs/study-errata.md, topbrain-track1/2) -------------------------


def test_study_hd95_is_one_directional_and_neighbour_error_averages_over_gt_and_pred(
    tmp_path,
) -> None:
    from study_cases import score_case, write_xyz

    truth = np.zeros((12, 3, 3), np.uint8)
    truth[0, 1, 1] = truth[8, 1, 1] = 1
    truth[1, 1, 1] = 4  # touches label 1: the CT table allows neither 1-4 nor 4-1
    truth[11, 1, 1] = 5  # never predicted
    pred = truth.copy()
    pred[8, 1, 1] = pred[11, 1, 1] = 0
    gold = write_xyz(tmp_path / "gold.nii.gz", truth, (1.0, 1.0, 1.0))
    mine = write_xyz(tmp_path / "pred.nii.gz", pred, (1.0, 1.0, 1.0))
    official = score_case("topbrain-track1", "official", mine, gold).values
    study = score_case("topbrain-track1", "study", mine, gold).values
    # label 1: d(P→G) = [0], d(G→P) = [0, 8] -> 95th percentile 0.95·8 = 7.6; label 4: 0;
    # label 5 only in G: 290. Official max of both directions, study P→G only.
    assert official["hd95"] == pytest.approx((7.6 + 0 + 290) / 3)
    assert study["hd95"] == pytest.approx((0 + 0 + 290) / 3)
    # invalid neighbours: 1 touches 4 and 4 touches 1, one error each; official mean over the
    # predicted labels {1, 4} = 1, study over G ∪ P = {1, 4, 5} = 2/3
    assert official["neighbor_error"] == 1.0
    assert study["neighbor_error"] == pytest.approx(2 / 3)
    # Dice is the official one: (2/3 + 1 + 0) / 3
    assert official["dice"] == study["dice"] == pytest.approx(5 / 9)
