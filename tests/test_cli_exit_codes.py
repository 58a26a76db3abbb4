"""The CLI's exit codes (0 graded, 1 invalid submission, 2 harness error) and ``rexmle rank``."""

from __future__ import annotations

import json
import subprocess
import sys

TASK = "isles22"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rexmle.cli", *args], capture_output=True, text=True, timeout=120
    )


def test_cli_exit_codes_and_json_report(prepared_mini, tmp_path) -> None:
    dirs = prepared_mini(TASK)
    data = str(dirs.root.parent)
    out_json = tmp_path / "grade.json"
    graded = _cli("grade", TASK, str(dirs.gold), "--data-dir", data, "--json", str(out_json))
    assert graded.returncode == 0, graded.stderr
    report = json.loads(out_json.read_text())
    assert set(report) >= {"task", "valid", "reasons", "metrics", "cases", "ranking"}
    assert set(report) >= {"rexmle_version", "seconds"}
    assert report["ranking"]["percentile"] == 1.0
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "submission.csv").write_text("case_id\nsub-strokecase0002\n")
    invalid = _cli("grade", TASK, str(bad), "--data-dir", data)
    assert invalid.returncode == 1
    assert "Traceback" not in invalid.stderr
    assert "predicted_mask_path" in invalid.stderr
    assert _cli("validate", TASK, str(bad), "--data-dir", data).returncode == 1
    unprepared = _cli("grade", TASK, str(bad), "--data-dir", str(tmp_path / "empty"))
    assert unprepared.returncode == 2
    assert "rexmle prepare isles22" in unprepared.stderr


def test_cli_rank_audits_published_numbers() -> None:
    # the best PAT row: dice 0.7869 ... ; values below every row on every metric -> percentile 0
    result = _cli(
        "rank",
        TASK,
        "dice=0.04",
        "lesion_f1=0.0",
        "lesion_count_diff=99",
        "abs_volume_diff=99",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["percentile"] == 0.0
    unknown = _cli("rank", TASK, "hd95=1")
    assert unknown.returncode == 2
    assert "not a leaderboard metric" in unknown.stderr
    not_a_number = _cli("rank", TASK, "dice=0,7", "lesion_f1=0", "lesion_count_diff=1",
                        "abs_volume_diff=1")  # fmt: skip
    assert not_a_number.returncode == 2
    assert "'dice=0,7': dice must be a number, got '0,7'" in not_a_number.stderr


def test_prepare_without_tasks_asks_for_them_without_saying_both_were_given() -> None:
    neither = _cli("prepare")
    assert neither.returncode == 2
    assert "give task ids or --all" in neither.stderr
    assert "not both" not in neither.stderr
    both = _cli("prepare", TASK, "--all")
    assert both.returncode == 2
    assert "give task ids or --all (not both)" in both.stderr
