"""Overlays are drawn at grade time from the private gold into the run folder, never into the
workspace, and stay within their size bound.
"""

from __future__ import annotations

import json

import numpy as np
from PIL import Image
from runner_support import COPY_SAMPLE

from rexmle.report.overlays import GAP_PX, MANIFEST, MAX_TOTAL_BYTES, OVERLAY_DIR
from rexmle.report.viewing import PANEL_MAX


def test_a_graded_segmentation_run_gets_overlays_in_its_folder(run_agent, isles22_dirs):
    record, folder = run_agent(COPY_SAMPLE, dirs=isles22_dirs)
    assert record.status == "completed"
    manifest = json.loads((folder / OVERLAY_DIR / MANIFEST).read_text())
    assert manifest
    assert {m["rank"] for m in manifest} <= {"best", "median", "worst"}
    grade = json.loads((folder / "grade.json").read_text())
    scores = {c["case_id"]: c["dice"] for c in grade["cases"]}
    best = next(m for m in manifest if m["rank"] == "best")
    assert best["score"] == max(scores.values())
    assert best["score_key"] == "dice"
    total, gold_drawn = 0, []
    for item in manifest:
        path = folder / OVERLAY_DIR / item["file"]
        total += path.stat().st_size
        with Image.open(path) as image:
            width, height = image.size
            pixels = np.asarray(image.convert("RGB"))
        assert 0 < height <= PANEL_MAX[0]
        assert 0 < width <= 3 * PANEL_MAX[1] + 2 * GAP_PX
        panel = (width - 2 * GAP_PX) // 3
        gold_alone = pixels[:, panel + GAP_PX : 2 * panel + GAP_PX]
        gold_drawn.append(bool((gold_alone == (40, 200, 90)).all(axis=2).any()))
        assert item["image"] == "DWI, 0.5th–99.5th percentile"
        # the sample submission predicts no lesion: no prediction outline anywhere
        assert not (pixels == (230, 60, 50)).all(axis=2).any()
    assert any(gold_drawn)  # case 0002's lesion is outlined in the gold's own panel
    assert total <= MAX_TOTAL_BYTES
    workspace = folder / "workspace"
    assert not list(workspace.rglob("*.png"))
    assert not (workspace / OVERLAY_DIR).exists()


def test_an_invalid_run_gets_no_overlays(run_agent, isles22_dirs):
    command = 'printf "case_id,predicted_mask_path\\n" > "$SUBMISSION_DIR/submission.csv"'
    record, folder = run_agent(command, dirs=isles22_dirs)
    assert record.status == "invalid_submission"
    assert not (folder / OVERLAY_DIR).exists()


def test_an_overlay_failure_is_recorded_and_leaves_the_grade(run_agent, isles22_dirs, monkeypatch):
    import rexmle.report.overlays as overlays

    def broken(*_args, **_kwargs):
        raise KeyError("case_id")

    monkeypatch.setattr(overlays, "write_overlays", broken)
    record, folder = run_agent(COPY_SAMPLE, dirs=isles22_dirs)
    assert record.status == "completed"
    assert record.grade is not None
    assert record.grade.valid
    assert "KeyError" in (folder / OVERLAY_DIR / "error.txt").read_text()
