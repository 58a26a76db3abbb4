"""Overlay images: box detections drawn from the private gold and the submission, and the
outline drawing itself against a hand-made mask.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from rexmle.grading import grade_submission
from rexmle.grading.grader import write_report
from rexmle.report.overlays import MANIFEST, OVERLAY_DIR, boxes_png, overlay_png, write_overlays
from tests.grade_reports import grade_report_json

GREEN, RED = (40, 200, 90), (230, 60, 50)


def _pixels(png: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(png)) as image:
        return np.asarray(image.convert("RGB"))


def _count(pixels: np.ndarray, colour: tuple[int, int, int]) -> int:
    return int((pixels == colour).all(axis=2).sum())


def test_outline_of_a_square_by_hand() -> None:
    gold = np.zeros((16, 16), dtype=np.uint8)
    gold[4:8, 4:8] = 1  # a 4 x 4 square: its boundary has 12 pixels (16 - the 2 x 2 inside)
    pixels = _pixels(overlay_png(gold, np.zeros_like(gold)))
    scale = 16  # 16 px panels are scaled by min(256 // 16, 16)
    assert pixels.shape == (16 * scale, 2 * 16 * scale + 6, 3)
    assert _count(pixels, GREEN) == 12 * scale * scale
    assert _count(pixels, RED) == 0


def test_boxes_are_drawn_on_a_shared_canvas() -> None:
    pixels = _pixels(boxes_png([(2.0, 2.0, 4.0, 4.0)], [(10.0, 2.0, 4.0, 4.0)]))
    half = (pixels.shape[1] - 6) // 2
    assert _count(pixels[:, :half], GREEN) > 0
    assert _count(pixels[:, :half], RED) == 0
    assert _count(pixels[:, half + 6 :], RED) > 0
    assert _count(pixels[:, half + 6 :], GREEN) == 0


@pytest.mark.parametrize("task", ["dentex", "topcow-track1-task2"])
def test_box_detection_runs_get_overlays(prepared_mini, tmp_path: Path, task: str) -> None:
    dirs = prepared_mini(task)
    folder = tmp_path / "run"
    shutil.copytree(dirs.gold, folder / "submission")
    report = grade_submission(task, folder / "submission", data_dir=dirs.root.parent, workers=1)
    assert report.valid
    write_report(report, folder / "grade.json")
    written = write_overlays(task, folder / "submission", dirs.gold, folder)
    assert written
    assert all(o.view == "boxes (x-y)" for o in written)
    manifest = json.loads((folder / OVERLAY_DIR / MANIFEST).read_text())
    assert [m["file"] for m in manifest] == [o.file for o in written]
    drawn = []
    for overlay in written:
        pixels = _pixels((folder / OVERLAY_DIR / overlay.file).read_bytes())
        half = (pixels.shape[1] - 6) // 2
        # the gold itself as the prediction: the same boxes in both panels
        assert _count(pixels[:, :half], GREEN) == _count(pixels[:, half + 6 :], RED)
        drawn.append(_count(pixels[:, :half], GREEN))
    assert max(drawn) > 0  # (a case may hold no box)


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
    (folder / "run.json").write_text(
        json.dumps({"status": "agent_error", "config": {"mini": True}})
    )
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
