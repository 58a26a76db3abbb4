"""TopCoW 2024, six tasks end to end on the mini fixture: prepare, gold, sample, baseline,
perturbed submissions against hand computations, and every validity rule.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest

from rexmle.challenges.topcow import fixture
from rexmle.challenges.topcow.labels import ALLOWED_VALUES
from rexmle.challenges.topcow.prepare import prepare_segmentation
from rexmle.challenges.topcow.roi import Box, read_roi
from rexmle.errors import DataError
from rexmle.grading import grade_submission, validate_submission
from rexmle.io import read_image, write_image
from rexmle.tasks.jobs import PrepareJob
from rexmle.tasks.registry import get_task, load_task

TASKS = [f"topcow-track{t}-task{k}" for t in (1, 2) for k in (1, 2, 3)]
SEG, BOX, EDG = "topcow-track1-task1", "topcow-track1-task2", "topcow-track1-task3"
BEST = {
    1: {
        "dice": 1.0,
        "cldice": 1.0,
        "b0_error": 0.0,
        "hd95": 0.0,
        "f1_grp2": 1.0,  # every group-2 label occurs in a test GT (8, 9, 10 in 001; 15 in 002)
        "anterior_graph_acc": 1.0,
        "posterior_graph_acc": 1.0,
        "anterior_topology": 1.0,
        "posterior_topology": 1.0,
    },
    2: {"boundary_iou": 1.0, "iou": 1.0},
    3: {"anterior_acc": 1.0, "posterior_acc": 1.0},
}


def _task_number(task_id: str) -> int:
    return int(task_id[-1])


@pytest.fixture(scope="module")
def prepared(prepared_mini):
    return {task_id: prepared_mini(task_id) for task_id in TASKS}


def _grade(task_id: str, dirs, folder: Path):
    return grade_submission(task_id, folder, data_dir=dirs.root.parent, workers=1)


def _copy_gold(dirs, target: Path) -> Path:
    shutil.copytree(dirs.gold, target)
    return target


def _invalid_reasons(task_id: str, dirs, folder: Path) -> list[str]:
    result = validate_submission(task_id, folder, data_dir=dirs.root.parent, workers=1)
    assert not result.valid
    report = _grade(task_id, dirs, folder)
    assert not report.valid
    assert report.metrics == {}
    assert report.ranking.percentile == 0.0
    return result.reasons


# ---- preparation -----------------------------------------------------------------------------


def test_tracks_share_one_split_and_the_public_layout_per_task(prepared) -> None:
    for track, modality in (("track1", "ct"), ("track2", "mr")):
        splits = [
            json.loads((prepared[f"topcow-{track}-task{k}"].private / "split.json").read_text())
            for k in (1, 2, 3)
        ]
        # sorted pids 001..006, RandomState(42).permutation(6)[:2] -> pids 001 and 002
        assert splits[0]["test"] == ["001", "002"]
        assert splits[0]["train"] == ["006", "003", "005", "004"]
        assert splits[0] == splits[1] == splits[2]
        assert splits[0]["source"]["modality"] == modality
    public = prepared[SEG].public
    assert (public / "train" / "images" / "topcow_ct_003_0000.nii.gz").is_file()
    assert (public / "train" / "labels" / "topcow_ct_003.nii.gz").is_file()
    assert (public / "train" / "roi" / "topcow_ct_003.txt").is_file()
    assert sorted(p.name for p in (public / "test" / "images").iterdir()) == [
        "topcow_ct_001_0000.nii.gz",
        "topcow_ct_002_0000.nii.gz",
    ]
    assert sorted(p.name for p in (prepared[SEG].private / "roi").iterdir()) == [
        "topcow_ct_001.txt",
        "topcow_ct_002.txt",
    ]
    box_public = prepared["topcow-track2-task2"].public
    box_json = json.loads((box_public / "train" / "boxes" / "topcow_mr_003_bbox.json").read_text())
    assert Box(tuple(box_json["size"]), tuple(box_json["location"])) == read_roi(
        box_public / "train" / "labels" / "topcow_mr_003.txt"
    )
    edges_public = prepared[EDG].public
    assert (edges_public / "train" / "labels" / "topcow_ct_004.yml").is_file()
    edges = json.loads((edges_public / "train" / "edges" / "topcow_ct_004_edges.json").read_text())
    assert edges == fixture.VARIANTS["004"].edges()
    for dirs in prepared.values():
        names = {p.name for p in dirs.public.rglob("*")}
        assert not any(n.startswith(("topcow_ct_001.", "topcow_mr_001.")) for n in names)
        assert "split.json" not in names
        assert "description.md" in names
        text = (dirs.public / "description.md").read_text()
        assert "{{" not in text
        assert "keep the leading zeros" in text


def test_the_fixture_is_the_same_whichever_task_writes_it(tmp_path) -> None:
    trees = {}
    for task_id in ("topcow-track1-task1", "topcow-track2-task3"):
        root = tmp_path / task_id
        load_task(task_id).make_fixture(root, seed=0)
        trees[task_id] = {
            p.relative_to(root).as_posix(): (
                np.asarray(read_image(p).array).tobytes()
                if p.name.endswith(".nii.gz")
                else p.read_bytes()
            )
            for p in sorted(root.rglob("*"))
            if p.is_file()
        }
    first, second = trees.values()
    assert len(first) == 2 * 6 * 4  # two modalities, six cases, four files each
    assert first == second


# ---- gold, sample, baseline ------------------------------------------------------------------


@pytest.mark.parametrize("task_id", TASKS)
def test_gold_gets_the_values_prepare_expects(prepared, task_id: str) -> None:
    report = _grade(task_id, prepared[task_id], prepared[task_id].gold)
    assert report.valid, report.reasons
    assert report.metrics == BEST[_task_number(task_id)]
    expected = json.loads((prepared[task_id].private / "expected_gold.json").read_text())
    assert report.metrics == expected


@pytest.mark.parametrize("task_id", TASKS)
def test_each_task_declares_its_track_and_kind(task_id: str) -> None:
    spec = get_task(task_id)
    track, kind = int(task_id.split("-")[1][-1]), _task_number(task_id)
    assert (spec.params["scan"], spec.params["track"]) == ({1: "ct", 2: "mr"}[track], track)
    assert [m.key for m in spec.metrics] == list(BEST[kind])
    (column,) = spec.submission.columns
    if kind == 1:
        assert column.file.values == list(ALLOWED_VALUES)
        scan = spec.params["scan"]
        assert column.file.grid_from == f"test/images/topcow_{scan}_{{case_id}}_0000.nii.gz"
    else:
        assert column.file is None  # JSON files: the family's own checks read them


# ---- task 1 ----------------------------------------------------------------------------------


def _mask_path(folder: Path, pid: str, modality: str = "ct") -> Path:
    return folder / "predictions" / f"topcow_{modality}_{pid}_0000.nii.gz"


def _edit_mask(folder: Path, pid: str, edit) -> None:
    path = _mask_path(folder, pid)
    image = read_image(path)
    array = np.asarray(image.array).copy()
    write_image(path, edit(array), like=image.geometry)


def test_a_vessel_outside_the_roi_changes_nothing(prepared, tmp_path) -> None:
    dirs = prepared[SEG]
    folder = _copy_gold(dirs, tmp_path / "outside")
    box = read_roi(dirs.private / "roi" / "topcow_ct_001.txt")

    def add_outside(array):
        z_above = box.location[2] + box.size[2]  # first slice above the ROI
        array[10:20, 10:20, z_above:] = 7
        return array

    _edit_mask(folder, "001", add_outside)
    assert _grade(SEG, dirs, folder).metrics == BEST[1]


def test_missing_acom_matches_a_hand_computation(prepared, tmp_path) -> None:
    dirs = prepared[SEG]
    folder = _copy_gold(dirs, tmp_path / "no-acom")
    _edit_mask(folder, "001", lambda a: np.where(a == 10, 0, a).astype(np.uint8))
    report = _grade(SEG, dirs, folder)
    m = report.metrics
    # case 001 has 12 labels in its ROI; Acom: Dice 0, HD95 90, B0 |0 - 1| = 1; case 002 perfect
    assert m["dice"] == pytest.approx((11 / 12 + 1) / 2)
    assert m["hd95"] == pytest.approx((90 / 12 + 0) / 2)
    assert m["b0_error"] == pytest.approx((1 / 12 + 0) / 2)
    # label 10: TP in 002, FN in 001 -> F1 = 2/3; labels 8, 9, 15 stay 1 -> (3 + 2/3) / 4
    assert m["f1_grp2"] == pytest.approx(11 / 12)
    # anterior GT classes 1_1_0_1 (001) and 1_1_1_1 (002); 001 now reads 1_0_0_1 -> 1/2
    assert m["anterior_graph_acc"] == pytest.approx(0.5)
    assert m["anterior_topology"] == pytest.approx(0.5)
    assert m["posterior_graph_acc"] == m["posterior_topology"] == 1.0


def test_left_right_swap_fails_topology(prepared, tmp_path) -> None:
    dirs = prepared[SEG]
    folder = _copy_gold(dirs, tmp_path / "swap")
    swap = np.arange(256, dtype=np.uint8)
    for right, left in ((2, 3), (4, 6), (5, 7), (8, 9), (11, 12)):
        swap[right], swap[left] = left, right
    for pid in ("001", "002"):
        _edit_mask(folder, pid, lambda a: swap[a])
    m = _grade(SEG, dirs, folder).metrics
    assert m["anterior_topology"] == 0.0
    assert m["posterior_topology"] == 0.0
    assert m["dice"] < 1.0
    # the anterior variant is left-right symmetric here: the graph still reads right
    assert m["anterior_graph_acc"] == 1.0
    assert m["anterior_graph_acc"] > m["anterior_topology"]


def test_label_13_is_invalid(prepared, tmp_path) -> None:
    dirs = prepared[SEG]
    folder = _copy_gold(dirs, tmp_path / "s")

    def add_13(array):
        array[0, 0, 0] = 13
        return array

    _edit_mask(folder, "002", add_13)
    (reason,) = _invalid_reasons(SEG, dirs, folder)
    assert "'002'" in reason
    assert "13" in reason
    assert "not allowed" in reason


def test_wrong_size_nan_and_four_d_masks_are_invalid(prepared, tmp_path) -> None:
    dirs = prepared[SEG]
    folder = _copy_gold(dirs, tmp_path / "s")
    geometry = read_image(_mask_path(folder, "001")).geometry
    write_image(_mask_path(folder, "001"), np.zeros((32, 28, 19), np.uint8), like=geometry)
    floats = np.zeros(fixture.SHAPE, np.float32)
    floats[3, 3, 3] = np.nan
    write_image(_mask_path(folder, "002"), floats, like=geometry)
    reasons = _invalid_reasons(SEG, dirs, folder)
    assert any("'001'" in r and "(32, 28, 19)" in r and "(32, 28, 20)" in r for r in reasons)
    assert any("'002'" in r and "NaN" in r for r in reasons)
    nib.save(
        nib.Nifti1Image(np.zeros((*fixture.SHAPE, 2), np.uint8), np.eye(4)),
        _mask_path(folder, "001"),
    )
    shutil.copy(dirs.gold / "predictions" / "topcow_ct_002_0000.nii.gz", _mask_path(folder, "002"))
    (reason,) = _invalid_reasons(SEG, dirs, folder)
    assert "'001'" in reason
    assert "3-D single-component" in reason


def test_an_unreadable_mask_is_invalid(prepared, tmp_path) -> None:
    dirs = prepared[SEG]
    folder = _copy_gold(dirs, tmp_path / "s")
    _mask_path(folder, "001").write_bytes(b"\x1f\x8b not a volume")
    reasons = _invalid_reasons(SEG, dirs, folder)
    assert any("'001'" in r and "unreadable" in r for r in reasons)


def test_mha_predictions_and_a_spacing_warning(prepared, tmp_path) -> None:
    dirs = prepared[SEG]
    folder = _copy_gold(dirs, tmp_path / "s")
    gold = read_image(_mask_path(folder, "001"))
    mha = folder / "predictions" / "topcow_ct_001.mha"
    write_image(mha, np.asarray(gold.array), spacing_mm=(1.0, 1.0, 1.0))
    _mask_path(folder, "001").unlink()
    rows = [
        ("001", "predictions/topcow_ct_001.mha"),
        ("002", "predictions/topcow_ct_002_0000.nii.gz"),
    ]
    with open(folder / "submission.csv", "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([("image_id", "predicted_mask_path"), *rows])
    result = validate_submission(SEG, folder, data_dir=dirs.root.parent, workers=1)
    assert result.valid, result.reasons
    assert any("'001'" in w and "spacing" in w for w in result.warnings)
    assert _grade(SEG, dirs, folder).metrics == BEST[1]


# ---- task 2 ----------------------------------------------------------------------------------


def _box_path(folder: Path, pid: str) -> Path:
    return folder / "predictions" / f"topcow_ct_{pid}_bbox.json"


def test_shifted_boxes_match_the_set_based_definition(prepared, tmp_path) -> None:
    dirs = prepared[BOX]
    folder = _copy_gold(dirs, tmp_path / "shift")
    expected = {}
    for pid in ("001", "002"):
        payload = json.loads(_box_path(folder, pid).read_text())
        truth = np.zeros((40, 40, 30), bool)
        pred = np.zeros_like(truth)
        (sx, sy, sz), (x, y, z) = payload["size"], payload["location"]
        # ROI (26, 24, 10) -> shell depth ceil(0.2 * s) = (6, 5, 2); a box minus its core
        for mask, dx in ((truth, 0), (pred, 2)):
            mask[x + dx : x + dx + sx, y : y + sy, z : z + sz] = True
            mask[x + dx + 6 : x + dx + sx - 6, y + 5 : y + sy - 5, z + 2 : z + sz - 2] = False
        expected[pid] = (truth & pred).sum() / (truth | pred).sum()
        payload["location"][0] += 2
        _box_path(folder, pid).write_text(json.dumps(payload))
    report = _grade(BOX, dirs, folder)
    by_case = {c["case_id"]: c for c in report.cases}
    for pid, value in expected.items():
        assert by_case[pid]["boundary_iou"] == pytest.approx(value)
    # plain IoU of a 26-wide box shifted by 2 in x: 24 / 28
    assert report.metrics["iou"] == pytest.approx(24 / 28)
    assert report.metrics["boundary_iou"] < report.metrics["iou"] < 1.0


@pytest.mark.parametrize(
    ("payload", "fragment"),
    [
        ({"size": [26.0, 24, 10], "location": [3, 1, 5]}, "3 JSON integers"),
        ({"size": [26, 24, 10], "location": [3, True, 5]}, "3 JSON integers"),
        ({"size": [26, 24, 10], "location": ["3", 1, 5]}, "3 JSON integers"),
        ({"size": [26, 24], "location": [3, 1, 5]}, "3 JSON integers"),
        ({"size": [26, 24, 10]}, "exactly the keys"),
        ({"size": [26, 24, 10], "location": [3, 1, 5], "z": 1}, "exactly the keys"),
        ({"size": [26, 0, 10], "location": [3, 1, 5]}, ">= 1 voxel"),
        ([26, 24, 10], "exactly the keys"),
    ],
)
def test_malformed_boxes_are_invalid(prepared, tmp_path, payload, fragment: str) -> None:
    dirs = prepared[BOX]
    folder = _copy_gold(dirs, tmp_path / "s")
    _box_path(folder, "002").write_text(json.dumps(payload))
    (reason,) = _invalid_reasons(BOX, dirs, folder)
    assert "'002'" in reason
    assert "topcow_ct_002_bbox.json" in reason
    assert fragment in reason


def test_box_json_syntax_error_is_invalid_and_outside_box_only_warns(prepared, tmp_path) -> None:
    dirs = prepared[BOX]
    folder = _copy_gold(dirs, tmp_path / "s")
    _box_path(folder, "001").write_text('{"size": [1, 2, 3], "location": [0, 0, 0]')
    (reason,) = _invalid_reasons(BOX, dirs, folder)
    assert "'001'" in reason
    assert "not valid JSON" in reason
    _box_path(folder, "001").write_text(json.dumps({"size": [40, 24, 10], "location": [-2, 1, 5]}))
    result = validate_submission(BOX, folder, data_dir=dirs.root.parent, workers=1)
    assert result.valid
    assert any("'001'" in w and "not fully inside" in w for w in result.warnings)


# ---- task 3 ----------------------------------------------------------------------------------


def _edges_path(folder: Path, pid: str) -> Path:
    return folder / "predictions" / f"topcow_ct_{pid}_edges.json"


def test_one_wrong_bit_matches_a_hand_computation(prepared, tmp_path) -> None:
    dirs = prepared[EDG]
    folder = _copy_gold(dirs, tmp_path / "bit")
    payload = json.loads(_edges_path(folder, "001").read_text())
    payload["anterior"]["3rd-A2"] = 1  # 001 is 1_1_0_1; now reads 1_1_1_1 (002's class)
    _edges_path(folder, "001").write_text(json.dumps(payload))
    metrics = _grade(EDG, dirs, folder).metrics
    # recall of class 1_1_0_1 = 0/1, of class 1_1_1_1 = 1/1 -> 1/2
    assert metrics == {"anterior_acc": 0.5, "posterior_acc": 1.0}


@pytest.mark.parametrize("value", [True, "1", 1.0, 2])
def test_edge_values_must_be_the_integers_zero_or_one(prepared, tmp_path, value) -> None:
    dirs = prepared[EDG]
    folder = _copy_gold(dirs, tmp_path / "s")
    payload = json.loads(_edges_path(folder, "002").read_text())
    payload["posterior"]["R-P1"] = value
    _edges_path(folder, "002").write_text(json.dumps(payload))
    (reason,) = _invalid_reasons(EDG, dirs, folder)
    assert "'002'" in reason
    assert "R-P1" in reason
    assert "0 or 1" in reason


def test_edge_files_need_the_exact_keys_and_json(prepared, tmp_path) -> None:
    dirs = prepared[EDG]
    folder = _copy_gold(dirs, tmp_path / "s")
    payload = json.loads(_edges_path(folder, "002").read_text())
    del payload["anterior"]["Acom"]
    _edges_path(folder, "002").write_text(json.dumps(payload))
    (reason,) = _invalid_reasons(EDG, dirs, folder)
    assert "'002'" in reason
    assert "'anterior' must hold exactly" in reason
    yml = dirs.root.parent / "topcow-shared" / "raw" / "TopCoW2024_Data_Release"
    shutil.copy(yml / "antpos_edges_labelsTr" / "topcow_ct_002.yml", _edges_path(folder, "002"))
    (reason,) = _invalid_reasons(EDG, dirs, folder)
    assert "'002'" in reason
    assert "not valid JSON" in reason
    # JSON content under a .yml name is refused too: one format, named as such
    _edges_path(folder, "002").write_text(json.dumps(json.loads(
        (dirs.gold / _edges_path(folder, "002").relative_to(folder)).read_text()
    )))  # fmt: skip
    renamed = _edges_path(folder, "002").rename(_edges_path(folder, "002").with_suffix(".yml"))
    text = (
        (folder / "submission.csv")
        .read_text()
        .replace(_edges_path(folder, "002").name, renamed.name)
    )
    (folder / "submission.csv").write_text(text)
    (reason,) = _invalid_reasons(EDG, dirs, folder)
    assert "'002'" in reason
    assert "write a .json file" in reason


# ---- raw data checks -------------------------------------------------------------------------


def test_prepare_fails_loudly_on_broken_raw_data(tmp_path) -> None:
    raw = tmp_path / "raw"
    fixture.make_fixture(raw, seed=0)
    release = raw / "TopCoW2024_Data_Release"

    def run(name: str) -> None:
        public, private = tmp_path / name / "public", tmp_path / name / "private"
        public.mkdir(parents=True)
        private.mkdir()
        task = get_task(SEG)
        prepare_segmentation(
            PrepareJob(raw=raw, public=public, private=private, task=task, mini=True)
        )

    seg = release / "cow_seg_labelsTr" / "topcow_ct_004.nii.gz"
    image = read_image(seg)
    labels = np.asarray(image.array).copy()
    labels[0, 0, 0] = 13
    write_image(seg, labels, like=image.geometry)
    with pytest.raises(DataError, match=r"topcow_ct_004\.nii\.gz: values \[13\]"):
        run("a")
    labels[0, 0, 0] = 0
    write_image(seg, labels, spacing_mm=(0.5, 0.45, 0.6))
    with pytest.raises(DataError, match="spacing"):
        run("b")
    write_image(seg, labels, like=image.geometry)
    (release / "antpos_edges_labelsTr" / "topcow_ct_005.yml").write_text("anterior: {}\n")
    with pytest.raises(DataError, match=r"topcow_ct_005\.yml"):
        run("c")
    (release / "roi_loc_labelsTr" / "topcow_ct_006.txt").unlink()
    with pytest.raises(DataError, match="missing"):
        run("d")
