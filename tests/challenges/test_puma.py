"""PUMA end to end on the mini fixture: prepare, gold, sample, perturbations, invalid input.

The four tasks share one raw folder and one split; the mini split sends
``training_set_primary_roi_004`` and ``training_set_metastatic_roi_002`` to test.
"""

from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import tifffile
from PIL import Image as PILImage
from skimage.draw import polygon as skimage_polygon

from rexmle.challenges.puma.classes import TISSUE_VALUES
from rexmle.challenges.puma.geojson import read_features
from rexmle.challenges.puma.prepare import RawCases, discover_cases, prepare_nuclei, split_cases
from rexmle.errors import DataError
from rexmle.grading import grade_submission, validate_submission
from rexmle.preparation import prepare_task
from rexmle.tasks.jobs import PrepareJob
from rexmle.tasks.registry import get_task

TISSUE_TASKS = ("puma-track1-task1", "puma-track2-task1")
NUCLEI_TASKS = ("puma-track1-task2", "puma-track2-task2")
TEST_IDS = ["training_set_primary_roi_004", "training_set_metastatic_roi_002"]
PAIR_CASE = "training_set_metastatic_roi_002"


@pytest.fixture(scope="module")
def all_dirs(prepared_mini):
    return {task: prepared_mini(task) for task in TISSUE_TASKS + NUCLEI_TASKS}


def _grade(task: str, dirs, folder: Path):
    return grade_submission(task, folder, data_dir=dirs.root.parent, workers=1)


def _invalid_reasons(task: str, dirs, folder: Path) -> list[str]:
    result = validate_submission(task, folder, data_dir=dirs.root.parent, workers=1)
    assert not result.valid
    report = _grade(task, dirs, folder)
    assert not report.valid
    assert report.metrics == {}
    assert report.ranking.percentile == 0.0
    return result.reasons


def _write_csv(folder: Path, header: tuple[str, str], rows: list[tuple[str, str]]) -> None:
    with open(folder / "submission.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)


# ---- preparation -----------------------------------------------------------------------------


def test_split_is_shared_and_layout_follows_the_spec(all_dirs) -> None:
    for task, dirs in all_dirs.items():
        split = json.loads((dirs.private / "split.json").read_text())
        # sorted ids: metastatic_001..005 (0-4), primary_001..005 (5-9);
        # RandomState(42).permutation(10) starts [8, 1] -> primary_004, metastatic_002
        assert split["test"] == TEST_IDS, task
        assert len(split["train"]) == 8
        assert sorted(p.stem for p in (dirs.public / "test" / "images").iterdir()) == sorted(
            TEST_IDS
        )
        assert len(list((dirs.public / "train" / "images").glob("*.tif"))) == 8
        names = {p.name for p in dirs.public.rglob("*")}
        assert not names & {"split.json", "leaderboard.csv", "grade.py"}
    tissue = all_dirs["puma-track1-task1"].public
    assert len(list((tissue / "train" / "labels").glob("*_tissue.geojson"))) == 8
    assert len(list((tissue / "train" / "masks").glob("*.tif"))) == 8
    nuclei = all_dirs["puma-track2-task2"].public
    assert len(list((nuclei / "train" / "labels").glob("*_nuclei.geojson"))) == 8
    assert len(list((nuclei / "train" / "nuclei_json").glob("*.json"))) == 8
    raw_roi = next(all_dirs["puma-track1-task1"].raw.rglob("training_set_primary_roi_004.tif"))
    copied = tissue / "test" / "images" / "training_set_primary_roi_004.tif"
    assert copied.read_bytes() == raw_roi.read_bytes()  # byte copy
    assert tifffile.imread(copied).shape == (128, 128, 4)


def _reference_tissue_map(path: Path, shape: tuple[int, int], nudge: float) -> np.ndarray:
    """Independent rasterisation with skimage (pixel centres, holes removed, file order).

    skimage counts points on an edge as inside; the polygons are nudged by ``nudge`` px so no
    pixel centre lies on an edge (edge pixels are compared separately).
    """
    labels = np.zeros(shape, dtype=np.uint8)
    for feature in read_features(path, allowed_classes=TISSUE_VALUES):
        covered = np.zeros(shape, dtype=bool)
        for rings in feature.polygons:
            part = np.zeros(shape, dtype=bool)
            for k, ring in enumerate(rings):
                rr, cc = skimage_polygon(ring[:, 1] - 0.5 + nudge, ring[:, 0] - 0.5 + nudge, shape)
                inside = np.zeros(shape, dtype=bool)
                inside[rr, cc] = True
                part = part | inside if k == 0 else part & ~inside
            covered |= part
        labels[covered] = TISSUE_VALUES[feature.class_name]
    return labels


def test_training_masks_match_an_independent_rasterisation(all_dirs) -> None:
    public = all_dirs["puma-track1-task1"].public
    for mask_path in sorted((public / "train" / "masks").glob("*.tif")):
        mask = tifffile.imread(mask_path)
        assert mask.dtype == np.uint8
        labels = public / "train" / "labels" / f"{mask_path.stem}_tissue.geojson"
        low = _reference_tissue_map(labels, mask.shape, -1e-6)
        high = _reference_tissue_map(labels, mask.shape, 1e-6)
        clear = low == high  # pixels whose centre lies on no edge
        assert clear.mean() > 0.99
        np.testing.assert_array_equal(mask[clear], low[clear])
        # on an edge: one of the two sides, never a third value
        assert np.all((mask == low) | (mask == high))


def test_test_maps_hold_all_five_classes(all_dirs) -> None:
    gold = all_dirs["puma-track1-task1"].gold
    for case_id in TEST_IDS:
        values = set(np.unique(tifffile.imread(gold / "predictions" / f"{case_id}.tif")).tolist())
        assert values == {0, 1, 2, 3, 4, 5}


def _copy_raw(all_dirs, tmp_path: Path) -> Path:
    raw = tmp_path / "raw"
    shutil.copytree(all_dirs["puma-track1-task1"].raw, raw)
    return raw


def test_an_archive_without_top_folder_is_found(all_dirs) -> None:
    raw = all_dirs["puma-track1-task1"].raw
    cases = discover_cases(raw)
    assert len(cases.ids) == 10
    assert cases.nuclei[PAIR_CASE].parent == raw  # the nuclei archive has no top folder
    assert cases.tissue[PAIR_CASE].parent.name == "01_training_dataset_geojson_tissue"


def test_an_unknown_raw_class_name_fails_preparation(all_dirs, tmp_path) -> None:
    raw = _copy_raw(all_dirs, tmp_path)
    path = raw / f"{PAIR_CASE}_nuclei.geojson"
    path.write_text(path.read_text().replace("nuclei_lymphocyte", "nuclei_lymphocytes"))
    job = PrepareJob(
        raw=raw,
        public=tmp_path / "pub",
        private=tmp_path / "priv",
        task=get_task("puma-track1-task2"),
        mini=True,
    )
    with pytest.raises(DataError, match="unknown class name 'nuclei_lymphocytes'"):
        prepare_nuclei(job)


def test_differing_case_lists_fail_preparation(all_dirs, tmp_path) -> None:
    raw = _copy_raw(all_dirs, tmp_path)
    (raw / "training_set_primary_roi_003_nuclei.geojson").unlink()
    with pytest.raises(DataError, match="only tissue: \\['training_set_primary_roi_003'\\]"):
        discover_cases(raw)


def test_a_duplicated_file_fails_preparation(all_dirs, tmp_path) -> None:
    raw = _copy_raw(all_dirs, tmp_path)
    (raw / "copy").mkdir()
    shutil.copy(raw / f"{PAIR_CASE}_nuclei.geojson", raw / "copy")
    with pytest.raises(DataError, match="found twice"):
        discover_cases(raw)


# ---- tissue tasks ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("task", "key"), [(t, "dice") for t in TISSUE_TASKS] + [(t, "f1") for t in NUCLEI_TASKS]
)
def test_the_empty_sample_prediction_scores_zero(all_dirs, task, key, tmp_path) -> None:
    # tissue: the all-background maps give I_c = 0 for every scored class 1-5 (background 0 is
    # never scored), so every dice_c = 0; nuclei: no prediction gives TP = 0 for every class
    dirs = all_dirs[task]
    folder = tmp_path / "sample"
    shutil.copytree(dirs.public / "predictions", folder / "predictions")
    shutil.copy(dirs.public / "sample_submission.csv", folder / "submission.csv")
    report = _grade(task, dirs, folder)
    assert report.valid
    assert report.metrics[key] == 0.0
    assert all(v == 0.0 for k, v in report.metrics.items() if k.startswith(f"{key}_"))


def _tissue_copy(dirs, tmp_path: Path) -> Path:
    return Path(shutil.copytree(dirs.gold, tmp_path / "sub"))


def test_removing_stroma_from_one_case_matches_the_pooled_formula(all_dirs, tmp_path) -> None:
    task = "puma-track1-task1"
    dirs = all_dirs[task]
    folder = _tissue_copy(dirs, tmp_path)
    path = folder / "predictions" / f"{PAIR_CASE}.tif"
    gold_a = tifffile.imread(path)
    gold_b = tifffile.imread(folder / "predictions" / f"{TEST_IDS[0]}.tif")
    changed = gold_a.copy()
    changed[changed == 1] = 0
    tifffile.imwrite(path, changed)
    s_a, s_b = int((gold_a == 1).sum()), int((gold_b == 1).sum())
    # stroma: I = s_b (case a lost all of it), S = (s_a + 0) + (s_b + s_b)
    eps = 1e-5
    stroma = (2 * s_b + eps) / (s_a + 2 * s_b + eps)
    # background gained pixels but is not scored; the other classes are untouched (dice 1)
    report = _grade(task, dirs, folder)
    assert report.metrics["dice_stroma"] == pytest.approx(stroma, abs=1e-12)
    assert report.metrics["dice"] == pytest.approx((stroma + 4) / 5, abs=1e-12)
    by_case = {c["case_id"]: c for c in report.cases}
    assert by_case[PAIR_CASE]["intersection_stroma"] == 0.0
    assert by_case[PAIR_CASE]["total_stroma"] == float(s_a)


def test_a_png_map_is_accepted(all_dirs, tmp_path) -> None:
    task = "puma-track2-task1"
    dirs = all_dirs[task]
    folder = _tissue_copy(dirs, tmp_path)
    gold = tifffile.imread(folder / "predictions" / f"{PAIR_CASE}.tif")
    PILImage.fromarray(gold).save(folder / "predictions" / "a.png")
    rows = [(PAIR_CASE, "predictions/a.png"), (TEST_IDS[0], f"predictions/{TEST_IDS[0]}.tif")]
    _write_csv(folder, ("case_id", "predicted_mask_path"), rows)
    assert _grade(task, dirs, folder).metrics["dice"] == 1.0


@pytest.mark.parametrize(
    ("array", "needle"),
    [
        (np.full((128, 128), 6, np.uint8), "values 6 are not allowed"),
        (np.zeros((128, 128, 3), np.uint8), "single-channel 2-D"),
        (np.zeros((128, 128, 4), np.uint8), "(128, 128, 4)"),
        (np.zeros((128, 128), np.float32), "not an integer type"),
        (np.zeros((128, 127), np.uint8), "(128, 127)"),
        (np.zeros((2, 128, 128), np.uint8), "single-channel 2-D"),
    ],
)
def test_invalid_tissue_maps(all_dirs, tmp_path, array, needle) -> None:
    task = "puma-track1-task1"
    dirs = all_dirs[task]
    folder = _tissue_copy(dirs, tmp_path)
    tifffile.imwrite(folder / "predictions" / f"{PAIR_CASE}.tif", array)
    (reason,) = _invalid_reasons(task, dirs, folder)
    assert PAIR_CASE in reason
    assert needle in reason


def test_unreadable_and_wrongly_typed_tissue_files(all_dirs, tmp_path) -> None:
    task = "puma-track1-task1"
    dirs = all_dirs[task]
    folder = _tissue_copy(dirs, tmp_path)
    (folder / "predictions" / f"{PAIR_CASE}.tif").write_bytes(b"not a tiff")
    (folder / "predictions" / "b.npy").write_bytes(b"")
    rows = [(PAIR_CASE, f"predictions/{PAIR_CASE}.tif"), (TEST_IDS[0], "predictions/b.npy")]
    _write_csv(folder, ("case_id", "predicted_mask_path"), rows)
    reasons = _invalid_reasons(task, dirs, folder)
    assert any(PAIR_CASE in r and "cannot read" in r for r in reasons)
    assert any(TEST_IDS[0] in r and "file type not accepted" in r for r in reasons)


# ---- nuclei tasks ----------------------------------------------------------------------------


def _gold_documents(dirs) -> dict[str, dict]:
    return {
        case_id: json.loads((dirs.gold / "predictions" / f"{case_id}.json").read_text())
        for case_id in TEST_IDS
    }


def _expected_gold_f1(documents: dict[str, dict]) -> float:
    """Mean over GT classes of (test cases holding the class) / (number of test cases)."""
    holding: dict[str, int] = {}
    for document in documents.values():
        for name in {p["name"] for p in document["polygons"]}:
            holding[name] = holding.get(name, 0) + 1
    return sum(n / len(documents) for n in holding.values()) / len(holding)


@pytest.mark.parametrize(("task", "expected"), [(NUCLEI_TASKS[0], 1.0), (NUCLEI_TASKS[1], 0.9)])
def test_nuclei_gold_reaches_the_best_achievable_value(all_dirs, task, expected) -> None:
    dirs = all_dirs[task]
    documents = _gold_documents(dirs)
    # track 2: metastatic_002 has no neutrophils and no apoptotic cells, primary_004 has all ten:
    # (8 classes x 2/2 + 2 classes x 1/2) / 10 = 0.9; track 1: all three classes in both -> 1
    assert _expected_gold_f1(documents) == pytest.approx(expected)
    report = _grade(task, dirs, dirs.gold)
    assert report.valid
    assert report.metrics["f1"] == pytest.approx(expected)
    assert report.ranking.percentile == 1.0


def test_nuclei_gold_has_the_multipolygon_parts_and_the_close_pair(all_dirs) -> None:
    documents = _gold_documents(all_dirs["puma-track2-task2"])
    raw = all_dirs["puma-track2-task2"].raw
    raw_features = json.loads((raw / f"{TEST_IDS[0]}_nuclei.geojson").read_text())["features"]
    n_parts = sum(
        len(f["geometry"]["coordinates"]) if f["geometry"]["type"] == "MultiPolygon" else 1
        for f in raw_features
    )
    assert any(f["geometry"]["type"] == "MultiPolygon" for f in raw_features)
    assert len(documents[TEST_IDS[0]]["polygons"]) == n_parts == len(raw_features) + 1
    centres = [np.mean(p["path_points"], axis=0) for p in documents[PAIR_CASE]["polygons"]]
    closest = min(math.dist(a, b) for i, a in enumerate(centres) for b in centres[i + 1 :])
    assert closest == pytest.approx(10.0, abs=0.05)
    for document in documents.values():
        for nucleus in document["polygons"]:
            assert nucleus["path_points"][0] != nucleus["path_points"][-1]


# offsets of exactly 15 px: axis steps and the 9-12-15 triangle
OFFSETS = [np.array(v, dtype=float) for v in ((15, 0), (-15, 0), (0, 15), (0, -15))] + [
    np.array((sx * a, sy * b), dtype=float)
    for a, b in ((9, 12), (12, 9))
    for sx in (1, -1)
    for sy in (1, -1)
]


def _shift(centre: np.ndarray, offset: np.ndarray, scale: float) -> list[float]:
    """``centre + scale * offset``; at scale 1 each float difference is at least |offset|."""
    moved = centre + scale * offset
    if scale == 1.0:
        for axis in np.flatnonzero(offset):
            while abs(moved[axis] - centre[axis]) < abs(offset[axis]):
                moved[axis] = np.nextafter(moved[axis], np.inf * offset[axis])
    return moved.tolist()


def _free_offsets(documents: dict[str, dict]) -> dict[str, list[np.ndarray | None]]:
    """Per nucleus, a 15 px offset whose shifted point stays >= 15.5 px from every other
    same-class GT nucleus of its case (so only its own GT nucleus can be in reach), or None.
    """
    chosen: dict[str, list[np.ndarray | None]] = {}
    for case_id, document in documents.items():
        centres = [np.mean(p["path_points"], axis=0) for p in document["polygons"]]
        names = [p["name"] for p in document["polygons"]]
        chosen[case_id] = []
        for k, (centre, name) in enumerate(zip(centres, names, strict=True)):
            others = [c for j, c in enumerate(centres) if j != k and names[j] == name]
            free = [o for o in OFFSETS if all(math.dist(centre + o, c) >= 15.5 for c in others)]
            chosen[case_id].append(free[0] if free else None)
    return chosen


@pytest.mark.parametrize("task", NUCLEI_TASKS)
def test_nuclei_moved_exactly_15_px_never_match(all_dirs, task, tmp_path) -> None:
    dirs = all_dirs[task]
    documents = _gold_documents(dirs)
    offsets = _free_offsets(documents)
    n_moved = sum(o is not None for case in offsets.values() for o in case)
    n_total = sum(len(d["polygons"]) for d in documents.values())
    assert n_moved >= 0.8 * n_total
    for scale, expected_matches in ((1.0, 0), (14.99 / 15, n_moved)):
        folder = Path(shutil.copytree(dirs.gold, tmp_path / f"moved{scale}"))
        for case_id, document in documents.items():
            moved = [
                {
                    "class": p["name"],
                    "centroid": _shift(np.mean(p["path_points"], axis=0), offset, scale),
                }
                for p, offset in zip(document["polygons"], offsets[case_id], strict=True)
                if offset is not None
            ]
            (folder / "predictions" / f"{case_id}.json").write_text(json.dumps({"nuclei": moved}))
        report = _grade(task, dirs, folder)
        assert sum(c["n_matched"] for c in report.cases) == expected_matches, scale
        if scale == 1.0:
            assert report.metrics["f1"] == 0.0


def test_dropping_one_class_in_one_case_lowers_f1_as_computed(all_dirs, tmp_path) -> None:
    task = "puma-track1-task2"
    dirs = all_dirs[task]
    folder = Path(shutil.copytree(dirs.gold, tmp_path / "sub"))
    path = folder / "predictions" / f"{PAIR_CASE}.json"
    document = json.loads(path.read_text())
    document["polygons"] = [p for p in document["polygons"] if p["name"] != "TILs"]
    path.write_text(json.dumps(document))
    report = _grade(task, dirs, folder)
    # TILs in PAIR_CASE: TP 0 -> F1 0; in the other case 1 -> F1_TILs = (0 + 1) / 2 = 1/2
    # f1 = (1 + 1/2 + 1) / 3 = 5/6
    assert report.metrics["f1_TILs"] == pytest.approx(0.5)
    assert report.metrics["f1"] == pytest.approx(5 / 6)


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ({"nuclei": [{"class": "TIL", "centroid": [1, 2]}]}, "'TIL'"),
        ({"nuclei": [{"class": "nuclei_tumor", "centroid": [1, 2]}]}, "'nuclei_tumor'"),
        ('{"polygons": [', "malformed JSON"),
        ({"polygons": [{"name": "tumor", "path_points": [[0, 0], [1, 1]]}]}, "at least 3"),
    ],
)
def test_invalid_nuclei_files_are_rejected_naming_the_case(all_dirs, tmp_path, content, needle):
    task = "puma-track1-task2"
    dirs = all_dirs[task]
    folder = Path(shutil.copytree(dirs.gold, tmp_path / "sub"))
    text = content if isinstance(content, str) else json.dumps(content)
    (folder / "predictions" / f"{PAIR_CASE}.json").write_text(text)
    (reason,) = _invalid_reasons(task, dirs, folder)
    assert PAIR_CASE in reason
    assert needle in reason


def test_prepare_is_idempotent_and_shares_raw(all_dirs) -> None:
    dirs = all_dirs["puma-track1-task1"]
    again, worked = prepare_task("puma-track1-task1", data_dir=dirs.root.parent, mini=True)
    assert not worked
    assert again.root == dirs.root
    assert all_dirs["puma-track2-task2"].raw == dirs.raw


@pytest.mark.parametrize("task", TISSUE_TASKS + NUCLEI_TASKS)
def test_real_size_split_matches_sklearn(task, tmp_path) -> None:
    from sklearn.model_selection import train_test_split

    ids = [f"training_set_primary_roi_{n:03d}" for n in range(1, 104)] + [
        f"training_set_metastatic_roi_{n:03d}" for n in range(1, 103)
    ]
    cases = RawCases(rois=dict.fromkeys(ids, Path("x")), tissue={}, nuclei={})
    job = PrepareJob(
        raw=tmp_path, public=tmp_path, private=tmp_path, task=get_task(task), mini=False
    )
    split = split_cases(cases, job)  # the declared seed and fraction of each task
    train, test = train_test_split(sorted(ids), test_size=0.2, random_state=42, shuffle=True)
    assert (split.train, split.test) == (list(train), list(test))
    assert (len(split.train), len(split.test)) == (164, 41)
