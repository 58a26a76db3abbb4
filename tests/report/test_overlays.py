"""Overlay images: outlines, boxes and points drawn on the case's input image from the private
gold and the submission; the drawing itself against hand-made masks and windows.
"""

from __future__ import annotations

import gzip
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from rexmle.grading import grade_submission
from rexmle.grading.grader import write_report
from rexmle.io import read_image, write_image
from rexmle.report import overlays as overlays_module
from rexmle.report.overlays import (
    GAP_PX,
    MANIFEST,
    OVERLAY_DIR,
    choose_slices,
    mask_triptych,
    read_overlays,
    write_overlays,
)
from rexmle.report.viewing import (
    BOTH,
    GOLD,
    PRED,
    ImageView,
    display_grey,
    label_outline,
    resample,
)
from tests.grade_reports import grade_report_json
from tests.run_records import write_run_json


def _pixels(png: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(png)) as image:
        return np.asarray(image.convert("RGB"))


def _count(pixels: np.ndarray, colour: tuple[int, int, int]) -> int:
    return int((pixels == colour).all(axis=2).sum())


def _panels(pixels: np.ndarray) -> list[np.ndarray]:
    width = (pixels.shape[1] - 2 * GAP_PX) // 3
    return [pixels[:, i * (width + GAP_PX) : i * (width + GAP_PX) + width] for i in range(3)]


def test_outline_of_a_square_by_hand() -> None:
    gold = np.zeros((8, 8), dtype=np.uint8)
    gold[2:6, 2:6] = 1  # a 4 x 4 square: its boundary has 12 pixels (16 - the 2 x 2 inside)
    assert int(label_outline(gold).sum()) == 12
    two = gold.copy()
    two[2:6, 4:6] = 2  # two touching labels: the seam is an outline of both
    assert int(label_outline(two).sum()) == 16


def test_window_and_percentiles_by_hand() -> None:
    ct = np.array([[-160.0, 40.0, 240.0, 1000.0]])
    grey = display_grey(ct, ImageView("x", "CT", window=(40.0, 400.0)))
    assert grey.tolist() == [[0, 128, 255, 255]]  # (v - (40 - 200)) / 400 * 255, clipped
    ramp = np.arange(101, dtype=float).reshape(1, -1)
    grey = display_grey(ramp, ImageView("x", "MR", percentiles=(10.0, 90.0)))
    assert grey[0, 10] == 0
    assert grey[0, 90] == 255
    assert grey[0, 50] == 128


def test_superimposed_and_side_by_side_panels_on_the_image() -> None:
    rng = np.random.default_rng(0)
    image = rng.normal(100.0, 20.0, (32, 32))
    gold = np.zeros((32, 32), dtype=np.uint8)
    gold[8:20, 8:20] = 1
    pred = np.roll(gold, 4, axis=1)
    view = ImageView("x", "MR", percentiles=(1.0, 99.0))
    overlay, gold_only, pred_only = _panels(_pixels(mask_triptych(image, gold, pred, view)))
    assert _count(gold_only, GOLD) > 0
    assert _count(gold_only, PRED) == 0
    assert _count(pred_only, PRED) > 0
    assert _count(pred_only, GOLD) == 0
    # superimposed: the shifted squares share part of their top and bottom edges
    assert _count(overlay, BOTH) > 0
    assert _count(overlay, GOLD) > 0
    assert _count(overlay, PRED) > 0
    # the image shows through away from the outlines: its texture, not a flat background
    grey = overlay[:, :, 0].astype(float)
    plain = (overlay[:, :, 0] == overlay[:, :, 1]) & (overlay[:, :, 1] == overlay[:, :, 2])
    assert grey[plain].std() > 20
    expected = resample(display_grey(image, view), overlay.shape[:2]).astype(float)
    assert np.abs(grey[plain] - expected[plain]).max() <= 1  # 252 grey levels kept


def test_slices_start_with_the_largest_disagreement() -> None:
    gold = np.zeros((10, 10, 8), dtype=np.uint8)
    gold[2:8, 2:8, 2] = 1  # the gold's largest slice
    gold[3:6, 3:6, 5] = 1
    pred = gold.copy()
    pred[:, :, 5] = 0
    pred[0:9, 0:9, 6] = 1  # 81 wrong voxels on z = 6, 9 missed on z = 5
    picks = choose_slices(gold, pred)
    assert picks[0] == (6, "largest disagreement")
    assert (2, "largest gold area") in picks
    assert len(picks) == len({z for z, _ in picks})
    assert choose_slices(np.zeros((4, 4, 6)), np.zeros((4, 4, 6))) == [
        (3, "middle slice, both empty")
    ]


def _graded(prepared_mini, tmp_path: Path, task: str, submission=None) -> tuple[Path, Path]:
    dirs = prepared_mini(task)
    folder = tmp_path / "run"
    shutil.copytree(submission or dirs.gold, folder / "submission")
    report = grade_submission(task, folder / "submission", data_dir=dirs.root.parent, workers=1)
    assert report.valid, report.reasons
    write_report(report, folder / "grade.json")
    return folder, dirs.gold


def test_a_segmentation_overlay_shows_the_dwi_under_the_outlines(prepared_mini, tmp_path) -> None:
    dirs = prepared_mini("isles22")
    moved = tmp_path / "moved"
    shutil.copytree(dirs.gold, moved)
    for mask in sorted((moved / "predictions").glob("*.nii.gz")):
        image = read_image(mask)
        write_image(mask, np.roll(image.array, 2, axis=0), like=image.geometry)
    folder, gold = _graded(prepared_mini, tmp_path, "isles22", moved)
    written = write_overlays("isles22", folder / "submission", gold, folder)
    assert "best" in {o.rank for o in written}
    assert len({o.case_id for o in written}) == 2
    assert any(o.note == "largest disagreement" for o in written)
    assert all(o.image == "DWI, 0.5th–99.5th percentile" for o in written)
    first = next(o for o in written if o.note == "largest disagreement")
    z = int(first.view.split()[2])
    dwi = read_image(dirs.public / "test" / f"{first.case_id}_dwi.nii.gz").array[:, :, z].T
    overlay, gold_only, pred_only = _panels(
        _pixels((folder / OVERLAY_DIR / first.file).read_bytes())
    )
    assert _count(gold_only, GOLD) > 0
    assert _count(pred_only, PRED) > 0
    plain = overlay[:, :, 0] == overlay[:, :, 1]
    assert overlay[:, :, 0][plain].astype(float).std() > 10  # texture, not a flat square
    expected = display_grey(dwi, ImageView("x", "DWI", percentiles=(0.5, 99.5)))
    shown = resample(expected, overlay.shape[:2]).astype(float)
    assert np.abs(overlay[:, :, 0][plain].astype(float) - shown[plain]).max() <= 1
    assert [o.file for o in read_overlays(folder)] == [o.file for o in written]


@pytest.mark.parametrize("task", ["dentex", "topcow-track1-task2"])
def test_box_detection_runs_get_overlays(prepared_mini, tmp_path: Path, task: str) -> None:
    folder, gold = _graded(prepared_mini, tmp_path, task)
    written = write_overlays(task, folder / "submission", gold, folder)
    assert written
    assert all(o.view == "boxes (x-y)" for o in written)
    assert {o.rank for o in written} <= {"best", "median", "worst", "first", "middle", "last"}
    manifest = json.loads((folder / OVERLAY_DIR / MANIFEST).read_text())
    assert [m["file"] for m in manifest] == [o.file for o in written]
    drawn = []
    for overlay in written:
        both, gold_only, pred_only = _panels(
            _pixels((folder / OVERLAY_DIR / overlay.file).read_bytes())
        )
        # the gold itself as the prediction: the same boxes in both side panels, all yellow
        assert _count(gold_only, GOLD) == _count(pred_only, PRED) == _count(both, BOTH)
        assert _count(both, GOLD) == _count(both, PRED) == 0
        assert gold_only[:, :, 0].astype(float).std() > 5  # on the image
        drawn.append(_count(gold_only, GOLD))
    assert max(drawn) > 0  # (a case may hold no box)


def test_puma_nuclei_are_points_on_the_he_tile(prepared_mini, tmp_path: Path) -> None:
    folder, gold = _graded(prepared_mini, tmp_path, "puma-track1-task2")
    written = write_overlays("puma-track1-task2", folder / "submission", gold, folder)
    assert written
    assert all(o.view == "points" for o in written)
    pixels = _pixels((folder / OVERLAY_DIR / written[0].file).read_bytes())
    both, gold_only, _ = _panels(pixels)
    assert _count(both, BOTH) > 0
    assert _count(gold_only, GOLD) == _count(both, BOTH)
    saturation = gold_only.max(axis=2).astype(int) - gold_only.min(axis=2)
    assert saturation.mean() > 20  # H&E in colour


def test_the_byte_cap_keeps_each_cases_first_view(prepared_mini, tmp_path, monkeypatch) -> None:
    folder, gold = _graded(prepared_mini, tmp_path, "seg_a")
    every = write_overlays("seg_a", folder / "submission", gold, folder)
    first_views = [o for o in every if o.file.endswith("-00.png")]
    assert len(every) > len(first_views)
    cap = sum((folder / OVERLAY_DIR / o.file).stat().st_size for o in first_views) + 10
    monkeypatch.setattr(overlays_module, "MAX_TOTAL_BYTES", cap)
    capped = write_overlays("seg_a", folder / "submission", gold, folder)
    assert {o.file for o in capped} >= {o.file for o in first_views}
    assert sum((folder / OVERLAY_DIR / o.file).stat().st_size for o in capped) <= cap


def test_a_mask_whose_header_declares_too_much_is_refused(prepared_mini, tmp_path) -> None:
    import nibabel as nib

    dirs = prepared_mini("isles22")
    folder, gold = _graded(prepared_mini, tmp_path, "isles22")
    victim = sorted((folder / "submission" / "predictions").glob("*.nii.gz"))[0]
    header = nib.Nifti1Header()
    header.set_data_shape((4096, 4096, 4096))
    header.set_data_dtype(np.uint8)
    body = header.binaryblock + b"\0" * 4  # a header claiming 64 GiB and 4 bytes of data
    victim.write_bytes(gzip.compress(body))
    assert dirs.gold.is_dir()
    with pytest.raises(ValueError, match=r"budget|at most"):
        write_overlays("isles22", folder / "submission", gold, folder)


def test_an_invalid_grade_writes_nothing(prepared_mini, tmp_path: Path) -> None:
    dirs = prepared_mini("dentex")
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "grade.json").write_text(grade_report_json("dentex", valid=False, reasons=["x"]))
    assert write_overlays("dentex", dirs.gold, dirs.gold, folder) == []
    assert not (folder / OVERLAY_DIR).exists()


def test_run_pages_of_odd_agent_names_are_linked_and_escaped(tmp_path: Path) -> None:
    from rexmle.report import collect_runs
    from rexmle.report import write_report as write_site

    folder = tmp_path / "runs" / "g" / "isles22" / "a b#<i>" / "seed-0"
    folder.mkdir(parents=True)
    write_run_json(folder, {"status": "agent_error", "config": {"mini": True}})
    site = tmp_path / "site"
    write_site(collect_runs(tmp_path / "runs"), html_path=site)
    page = site / "runs" / "g" / "isles22" / "a b#<i>" / "seed-0.html"
    assert page.is_file()
    index = (site / "index.html").read_text()
    assert "href='runs/g/isles22/a%20b%23%3Ci%3E/seed-0.html'" in index
    assert "<i>" not in index.replace("&lt;i&gt;", "")


def test_the_ranking_column_is_the_first_numeric_metric_of_the_case_rows() -> None:
    from rexmle.report.overlays import score_key
    from rexmle.tasks.rows import CaseRow

    # isles22: dice is the headline; a flag in its place is no score, abs_volume_diff (a metric) is
    rows = [CaseRow("a", {"dice": True, "abs_volume_diff": 2.0}), CaseRow("b", {"dice": 0.5})]
    assert score_key("isles22", rows) == "abs_volume_diff"
    assert score_key("isles22", [CaseRow("a", {"dice": 0.25, "abs_volume_diff": 2.0})]) == "dice"
    assert score_key("isles22", [CaseRow("a", {"label": "x"})]) is None
    assert score_key("isles22", []) is None


def test_a_run_page_links_collected_files_but_never_follows_a_link(tmp_path: Path) -> None:
    from rexmle.report import collect_runs
    from rexmle.report import write_report as write_site

    secret = tmp_path / "secret.txt"
    secret.write_text("the host's secret")
    folder = tmp_path / "runs" / "g" / "isles22" / "aide" / "seed-0"
    logs = folder / "agent_output" / "logs"
    logs.mkdir(parents=True)
    write_run_json(folder, {"status": "completed", "config": {}})
    (logs / "journal.json").symlink_to(secret)
    (logs / "tree_plot.html").write_text("<html>tree</html>")
    (logs / "notes.txt").symlink_to(secret)
    site = tmp_path / "site"
    write_site(collect_runs(tmp_path / "runs"), html_path=site)
    page = (site / "runs" / "g" / "isles22" / "aide" / "seed-0.html").read_text()
    files = site / "runs" / "g" / "isles22" / "aide" / "seed-0.files"
    assert "seed-0.files/agent_output/logs/tree_plot.html" in page
    assert (files / "agent_output" / "logs" / "tree_plot.html").read_text() == "<html>tree</html>"
    copied = [p.read_text() for p in files.rglob("*") if p.is_file()]
    assert "the host's secret" not in "".join(copied)
    assert "the host's secret" not in page
