"""NeurIPS-CellSeg: mini fixture -> prepare -> validate/grade; F1 by hand; tiled mode; rules."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import tifffile
from PIL import Image
from scipy import ndimage

from rexmle.challenges.neurips_cellseg import metrics, prepare, submission
from rexmle.challenges.neurips_cellseg.fixture import TRAINING_NAMES, TUNING_NAMES
from rexmle.errors import DataError
from rexmle.grading.grader import grade_submission, validate_submission
from rexmle.tasks.jobs import PrepareJob
from rexmle.tasks.registry import get_task, load_task

KEYS = ("f1_0.5", "f1_0.6", "f1_0.7", "f1_0.8", "f1_0.9")

TASK = "neurips-cellseg"


@pytest.fixture(scope="module")
def prepared(prepared_mini) -> Path:
    """The data dir holding the mini task, prepared once per session."""
    return prepared_mini(TASK).root.parent


def _root(data_dir: Path) -> Path:
    return data_dir / TASK


def _copy_gold(data_dir: Path, target: Path) -> Path:
    shutil.copytree(_root(data_dir) / "private" / "gold", target)
    return target


def _read(path: Path) -> np.ndarray:
    return np.asarray(tifffile.imread(str(path)))


def _grade(data_dir: Path, folder: Path):
    return grade_submission(TASK, folder, data_dir=data_dir, workers=1)


def _job(raw: Path, out: Path, *, mini: bool) -> PrepareJob:
    return PrepareJob(
        raw=raw, public=out / "public", private=out / "private", task=get_task(TASK), mini=mini
    )


def _split(data_dir: Path) -> dict:
    return json.loads((_root(data_dir) / "private" / "split.json").read_text(encoding="utf-8"))


# ---- preparation ------------------------------------------------------------------------------


def test_split_matches_sklearn_on_the_stable_sorted_pairs(prepared: Path) -> None:
    sklearn = pytest.importorskip("sklearn.model_selection")
    pairs = [("Training-labeled", Path(n).stem) for n in TRAINING_NAMES]
    pairs += [("Tuning", Path(n).stem) for n in TUNING_NAMES]
    ordered = sorted(pairs, key=lambda p: p[1])  # stable: Training-labeled first on equal stems
    train, test = sklearn.train_test_split(ordered, test_size=0.2, random_state=42, shuffle=True)

    def public_id(pair: tuple[str, str]) -> str:
        return ("tuning_" if pair[0] == "Tuning" else "") + pair[1]

    split = _split(prepared)
    assert split["train"] == [public_id(p) for p in train]
    assert split["test"] == [public_id(p) for p in test]
    assert len(split["test"]) == 4  # ceil(0.2 * 16)
    # the colliding stem cell_00001 is in test from both sources, under two ids
    assert {"cell_00001", "tuning_cell_00001"} <= set(split["test"])
    cases = split["source"]["cases"]
    assert cases["tuning_cell_00001"] == {"source": "Tuning", "stem": "cell_00001"}
    assert cases["cell_00001"] == {"source": "Training-labeled", "stem": "cell_00001"}


def test_public_layout_sizes_and_byte_copies(prepared: Path) -> None:
    root = _root(prepared)
    public = root / "public"
    raw = root / "raw"
    split = _split(prepared)
    with open(public / "test" / "image_sizes.csv", newline="", encoding="utf-8") as handle:
        sizes = {r["image_id"]: (int(r["height"]), int(r["width"])) for r in csv.DictReader(handle)}
    assert sorted(sizes) == sorted(split["test"])
    assert set(sizes.values()) == {(48, 64)}
    assert sorted(p.stem for p in (public / "test" / "images").iterdir()) == sorted(split["test"])
    assert not (public / "test" / "labels").exists()
    assert (public / "test" / "images" / "tuning_cell_00001.tif").read_bytes() == (
        raw / "Tuning" / "images" / "cell_00001.tif"
    ).read_bytes()
    train_label = public / "train" / "labels" / "tuning_cell_00002_label.tiff"
    assert (
        train_label.read_bytes()
        == (raw / "Tuning" / "labels" / "cell_00002_label.tiff").read_bytes()
    )
    assert (public / "train" / "images" / "cell_00003.tif").is_file()  # extension kept
    gold = root / "private" / "gold" / "predictions" / "tuning_cell_00001_label.tiff"
    assert gold.read_bytes() == (raw / "Tuning" / "labels" / "cell_00001_label.tiff").read_bytes()


def test_prepare_checks_real_counts_and_missing_labels(prepared: Path, tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    shutil.copytree(_root(prepared) / "raw", raw)
    with pytest.raises(DataError, match="1000"):
        prepare.prepare(_job(raw, tmp_path / "1", mini=False))
    (raw / "Tuning" / "labels" / "cell_00002_label.tiff").unlink()
    with pytest.raises(DataError, match=r"cell_00002\.png has no label"):
        prepare.prepare(_job(raw, tmp_path / "2", mini=True))


# ---- grading ----------------------------------------------------------------------------------


def test_gold_reaches_the_cap_logged_by_prepare(prepared: Path) -> None:
    report = _grade(prepared, _root(prepared) / "private" / "gold")
    assert report.valid, report.reasons
    expected = json.loads(
        (_root(prepared) / "private" / "gold_expected.json").read_text(encoding="utf-8")
    )
    # 4 test images; cell_00001 has cells only in the border band, so 3 of 4 keep a cell:
    # every f1_t = 3 / 4 = 0.75 for every submission at best.
    assert expected["metrics"] == dict.fromkeys(KEYS, 0.75)
    assert report.metrics == expected["metrics"]
    per_case = {c["case_id"]: c["f1_0.5"] for c in report.cases}
    assert per_case == expected["per_image_f1"]
    assert per_case["cell_00001"] == 0.0


def test_permuted_instance_ids_and_png_give_the_gold_score(prepared: Path, tmp_path: Path) -> None:
    folder = _copy_gold(prepared, tmp_path / "perm")
    rng = np.random.default_rng(0)
    rows = [("image_id", "predicted_mask_path")]
    for path in sorted((folder / "predictions").glob("*.tiff")):
        labels = _read(path)
        ids = np.unique(labels[labels > 0])
        lookup = np.zeros(int(labels.max()) + 1, dtype=np.uint16)
        lookup[ids] = rng.permutation(ids.size) * 7 + 100  # non-consecutive, shuffled
        case_id = path.name.removesuffix("_label.tiff")
        Image.fromarray(lookup[labels]).save(folder / "predictions" / f"{case_id}.png")
        path.unlink()
        rows.append((case_id, f"predictions/{case_id}.png"))
    with open(folder / "submission.csv", "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)
    report = _grade(prepared, folder)
    assert report.valid, report.reasons
    assert report.metrics == dict.fromkeys(KEYS, 0.75)


def _inner(mask: np.ndarray) -> bool:
    return not (mask[:2].any() or mask[-2:].any() or mask[:, :2].any() or mask[:, -2:].any())


def test_one_dilated_instance_lowers_only_f1_0_9(prepared: Path, tmp_path: Path) -> None:
    folder = _copy_gold(prepared, tmp_path / "dilate")
    chosen = None
    for path in sorted((folder / "predictions").glob("*.tiff")):
        labels = _read(path)
        for value in np.unique(labels[labels > 0]):
            cell = labels == value
            grown = ndimage.binary_dilation(cell) & ((labels == 0) | cell)
            iou = cell.sum() / grown.sum()  # cell is inside grown: IoU = |cell| / |grown|
            if _inner(grown) and 0.8 <= iou < 0.9:
                chosen = (path, value, grown)
                break
        if chosen:
            break
    assert chosen is not None
    path, value, grown = chosen
    labels = _read(path)
    n_truth = int(sum(_inner(labels == v) for v in np.unique(labels[labels > 0])))
    labels[grown] = value
    tifffile.imwrite(str(path), labels)
    report = _grade(prepared, folder)
    # One pair drops below IoU 0.9 only: on that image P = R = (n - 1) / n, so F1 = (n - 1) / n;
    # the other three images keep 1, 1 and 0: f1_0.9 = (2 + round((n - 1) / n, 4)) / 4.
    expected = (2 + round((n_truth - 1) / n_truth, 4)) / 4
    assert report.metrics["f1_0.9"] == pytest.approx(expected, abs=1e-12)
    assert report.metrics["f1_0.9"] < 0.75
    for key in ("f1_0.5", "f1_0.6", "f1_0.7", "f1_0.8"):
        assert report.metrics[key] == 0.75


def test_baseline_is_deterministic_for_a_seed(prepared: Path, tmp_path: Path) -> None:
    public = _root(prepared) / "public"
    first, second = tmp_path / "a", tmp_path / "b"
    for folder in (first, second):
        folder.mkdir()
        load_task(TASK).solve_baseline(public, folder, seed=0)
    for path in sorted((first / "predictions").iterdir()):
        assert np.array_equal(_read(path), _read(second / "predictions" / path.name))


# ---- the metric by hand and in tiled mode -----------------------------------------------------


def test_image_scores_by_hand() -> None:
    truth = np.zeros((20, 20), dtype=np.uint16)
    truth[4:8, 4:8] = 1  # A: 16 px
    truth[10:14, 10:16] = 2  # B: 24 px
    pred = np.zeros_like(truth)
    pred[4:8, 4:8] = 5  # A exactly
    pred[10:14, 11:17] = 9  # B one column to the right: overlap 4 x 5 = 20, union 28, IoU 0.714
    pred[4:6, 12:14] = 3  # a false positive
    row = metrics.image_scores(pred, truth)
    # t <= 0.7: TP = 2, P = 2/3, R = 1 -> F1 = 2 (2/3) / (5/3) = 0.8
    # t >= 0.8: TP = 1, P = 1/3, R = 1/2 -> F1 = 2 (1/6) / (5/6) = 0.4
    assert [row[k] for k in KEYS] == [0.8, 0.8, 0.8, 0.4, 0.4]
    assert (row["n_truth"], row["n_pred"], row["tp_0.5"]) == (2, 3, 2)


def test_f1_is_rounded_to_four_decimals() -> None:
    truth = np.zeros((30, 30), dtype=np.int32)
    for k in range(3):
        truth[4 + 8 * k : 8 + 8 * k, 4:8] = k + 1
    pred = truth.copy()
    pred[4:8, 20:24] = 10  # one false positive
    # TP = 3, P = 3/4, R = 1 -> F1 = 2 (3/4) / (7/4) = 6/7 = 0.857142... -> 0.8571
    assert metrics.image_scores(pred, truth)["f1_0.5"] == 0.8571


def test_tiled_mode_equals_whole_image_away_from_tile_edges() -> None:
    # 80 x 70 with 32-px tiles (threshold 1000 px forces tiling): padded to 96 x 96, 3 x 3 tiles.
    truth = np.zeros((80, 70), dtype=np.uint16)
    pred = np.zeros((80, 70), dtype=np.uint32)
    cells = [(5, 5), (5, 40), (40, 8), (40, 40), (70, 5), (70, 40)]  # all inside one tile
    for k, (r, c) in enumerate(cells, start=1):
        truth[r : r + 6, c : c + 6] = k
        pred[r : r + 6, c + (k % 2) : c + 6] = 100 + k  # odd k lose a column: IoU 30/36 = 0.833
    whole = metrics.image_scores(pred, truth)
    tiled = metrics.image_scores(pred, truth, whole_image_max_pixels=1000, tile_px=32)
    assert tiled == whole
    # t <= 0.8: 6 TP of 6 -> F1 = 1; t = 0.9: the 3 cells with IoU 0.833 miss -> F1 = 0.5
    assert [whole[k] for k in KEYS] == [1.0, 1.0, 1.0, 1.0, 0.5]


def test_tiled_mode_drops_cells_crossing_a_tile_edge() -> None:
    truth = np.zeros((80, 70), dtype=np.uint16)
    truth[10:16, 10:16] = 1  # inside tile (0, 0)
    truth[28:36, 10:16] = 2  # crosses the row-32 tile edge: removed in both tiles
    pred = truth.astype(np.int64)
    whole = metrics.image_scores(pred, truth)
    tiled = metrics.image_scores(pred, truth, whole_image_max_pixels=1000, tile_px=32)
    assert (whole["n_truth"], tiled["n_truth"]) == (2, 1)
    assert whole["f1_0.5"] == tiled["f1_0.5"] == 1.0


# ---- validity rules ----------------------------------------------------------------------------


def _invalid(data_dir: Path, folder: Path) -> list[str]:
    result = validate_submission(TASK, folder, data_dir=data_dir, workers=1)
    assert not result.valid
    return result.reasons


def _replace_first(folder: Path, write) -> str:
    path = sorted((folder / "predictions").glob("*.tiff"))[0]
    write(path)
    return path.name.removesuffix("_label.tiff")


@pytest.mark.parametrize(
    ("array", "expected"),
    [
        (np.zeros((48, 64), dtype=np.float32), "not an integer type"),
        (np.zeros((48, 64), dtype=bool), "not an integer type"),
        (np.zeros((48, 63), dtype=np.uint16), "has shape (48, 63)"),
        (np.zeros((48, 64, 3), dtype=np.uint8), "single-channel 2-D"),
        (np.zeros((48, 64, 1), dtype=np.uint16), "single-channel 2-D"),
        (np.full((48, 64), -1, dtype=np.int32), "negative value -1"),
        (np.full((48, 64), 3_000_000_000, dtype=np.uint32), "exceeds 2147483647"),
    ],
)
def test_mask_rules_name_case_and_problem(
    prepared: Path, tmp_path: Path, array: np.ndarray, expected: str
) -> None:
    folder = _copy_gold(prepared, tmp_path / "sub")
    case_id = _replace_first(folder, lambda p: tifffile.imwrite(str(p), array))
    reasons = _invalid(prepared, folder)
    assert any(case_id in r and expected in r for r in reasons), reasons


def test_unreadable_file_and_wrong_suffix_are_invalid(prepared: Path, tmp_path: Path) -> None:
    folder = _copy_gold(prepared, tmp_path / "sub")
    paths = sorted((folder / "predictions").glob("*.tiff"))
    paths[0].write_bytes(b"not a tiff")
    np.save(folder / "predictions" / "x.npy", np.zeros((48, 64), dtype=np.uint16))
    text = (folder / "submission.csv").read_text(encoding="utf-8")
    second = paths[1].name.removesuffix("_label.tiff")
    (folder / "submission.csv").write_text(
        text.replace(f"predictions/{paths[1].name}", "predictions/x.npy"), encoding="utf-8"
    )
    reasons = _invalid(prepared, folder)
    first = paths[0].name.removesuffix("_label.tiff")
    assert any(first in r and "unreadable" in r for r in reasons), reasons
    assert any(second in r and "file type not accepted" in r for r in reasons), reasons


def test_too_many_instances_is_invalid(
    prepared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(submission, "MAX_INSTANCES", 3)
    folder = _copy_gold(prepared, tmp_path / "sub")
    array = np.arange(48 * 64, dtype=np.uint32).reshape(48, 64) % 5  # ids 1..4: 4 instances
    case_id = _replace_first(folder, lambda p: tifffile.imwrite(str(p), array))
    reasons = _invalid(prepared, folder)
    assert any(case_id in r and "4 distinct instance ids" in r for r in reasons), reasons


@pytest.mark.slow
def test_gold_of_the_real_data_reaches_the_logged_cap() -> None:
    from rexmle.tasks.folders import read_prepared, task_dirs

    dirs = task_dirs(TASK)
    manifest = read_prepared(dirs)
    if manifest is None or manifest.get("mini"):
        pytest.skip("the real NeurIPS-CellSeg data is not prepared in the configured data dir")
    expected = json.loads((dirs.private / "gold_expected.json").read_text(encoding="utf-8"))
    report = grade_submission(TASK, dirs.gold, workers=2)
    assert len(report.cases) == 221
    assert report.metrics == pytest.approx(expected["metrics"], abs=1e-12)
