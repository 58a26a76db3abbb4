"""grade.json says which data it was graded on: the mini fixture or the challenge's data."""

from __future__ import annotations

import json
import shutil

from rexmle.grading import grade_submission


def test_a_mini_prepare_is_marked_mini_and_a_full_prepare_full(prepared_mini, tmp_path):
    dirs = prepared_mini("isles22")
    mini = grade_submission("isles22", dirs.gold, data_dir=dirs.root.parent, workers=1)
    assert mini.valid
    assert mini.data == "mini"

    full_root = tmp_path / "data" / "isles22"
    shutil.copytree(dirs.root, full_root, ignore=shutil.ignore_patterns("raw"))
    prepared = json.loads((full_root / "prepared.json").read_text())
    prepared["mini"] = False
    (full_root / "prepared.json").write_text(json.dumps(prepared))
    full = grade_submission("isles22", full_root / "private" / "gold", data_dir=tmp_path / "data")
    assert full.data == "full"
    assert full.metrics == mini.metrics
