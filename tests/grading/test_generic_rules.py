"""Generic submission rules (spec README §2.2–2.3) on adversarial input: invalid, never a crash."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rexmle.errors import MAX_REASONS, InvalidSubmission
from rexmle.grading import validate_submission
from rexmle.tasks.reasons import BoundedReasons

TASK = "isles22"
HEADER = "case_id,predicted_mask_path\n"
GOOD = "sub-strokecase0009,predictions/sub-strokecase0009_pred.nii.gz\n"


@pytest.fixture(scope="module")
def dirs(prepared_mini):
    return prepared_mini(TASK)


def _folder(dirs, tmp_path: Path, body: str) -> Path:
    folder = tmp_path / "sub"
    shutil.copytree(dirs.gold, folder)
    (folder / "submission.csv").write_text(HEADER + GOOD + body, encoding="utf-8")
    return folder


def _rows(folder: Path, rows: list[tuple[str, str]], header: str = HEADER) -> None:
    lines = "".join(f"{case_id},{path}\n" for case_id, path in rows)
    (folder / "submission.csv").write_text(header + lines, encoding="utf-8")


def _reasons(dirs, folder: Path) -> list[str]:
    result = validate_submission(TASK, folder, data_dir=dirs.root.parent, workers=1)
    assert not result.valid
    return result.reasons


def test_nul_byte_in_a_path_is_a_reason(dirs, tmp_path) -> None:
    folder = _folder(dirs, tmp_path, "sub-strokecase0002,predictions/x.nii.gz\x00\n")
    (reason,) = _reasons(dirs, folder)
    assert "sub-strokecase0002" in reason
    assert "NUL" in reason


def test_over_long_path_component_is_a_reason(dirs, tmp_path) -> None:
    folder = _folder(dirs, tmp_path, f"sub-strokecase0002,predictions/{'a' * 300}.nii.gz\n")
    (reason,) = _reasons(dirs, folder)
    assert "sub-strokecase0002" in reason
    assert "cannot be resolved" in reason


def test_trailing_slash_is_not_rewritten(dirs, tmp_path) -> None:
    body = "sub-strokecase0002,predictions/sub-strokecase0002_pred.nii.gz/\n"
    (reason,) = _reasons(dirs, _folder(dirs, tmp_path, body))
    assert "ends with '/'" in reason


def test_submission_csv_that_is_a_folder_or_a_pipe(dirs, tmp_path) -> None:
    folder = _folder(dirs, tmp_path, "")
    (folder / "submission.csv").unlink()
    os.mkfifo(folder / "submission.csv")
    (reason,) = _reasons(dirs, folder)
    assert "not a regular file" in reason
    (folder / "submission.csv").unlink()
    (folder / "submission.csv").mkdir()
    (reason,) = _reasons(dirs, folder)
    assert "not a regular file" in reason


def test_many_unknown_ids_are_fast_and_the_reasons_capped(dirs, tmp_path) -> None:
    body = "".join(f"x{i},p{i}.nii.gz\n" for i in range(20_000))
    reasons = _reasons(dirs, _folder(dirs, tmp_path, body))
    # 20 000 unknown ids + 1 missing id -> the first MAX_REASONS, then one counting line
    assert len(reasons) == MAX_REASONS + 1
    assert reasons[-1].startswith(f"... and {20_001 - MAX_REASONS} more")


def test_a_harness_failure_exits_2_not_1(dirs) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rexmle.cli", "grade", TASK, str(dirs.gold),
         "--data-dir", str(dirs.root.parent), "--json", "/proc/no-such-dir/grade.json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert "internal error" in done.stderr
    assert "Traceback" not in done.stderr


def test_submission_csv_linked_from_outside_the_folder_is_invalid(dirs, tmp_path) -> None:
    folder = _folder(dirs, tmp_path, "")
    outside = tmp_path / "elsewhere.csv"
    (folder / "submission.csv").rename(outside)
    (folder / "submission.csv").symlink_to(outside)
    (reason,) = _reasons(dirs, folder)
    assert "submission.csv" in reason
    assert "outside the submission folder" in reason


def test_a_million_malformed_lines_give_a_bounded_report(dirs, tmp_path) -> None:
    """Every kind of reason is capped, the CSV reader's too (1M lines -> ~15 KB, not 73 MB)."""
    folder = _folder(dirs, tmp_path, "")
    with open(folder / "submission.csv", "a", encoding="utf-8") as handle:
        handle.writelines(f"x{i},a,b\n" for i in range(1_000_000))
    report_path = tmp_path / "grade.json"
    done = subprocess.run(
        [sys.executable, "-m", "rexmle.cli", "grade", TASK, str(folder), "--workers", "1",
         "--data-dir", str(dirs.root.parent), "--json", str(report_path)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-2000:]
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert len(report["reasons"]) == MAX_REASONS + 1
    assert report["reasons"][0] == "submission.csv line 3: 3 cells, but the header has 2 columns"
    assert (
        report["reasons"][-1]
        == f"... and {1_000_000 - MAX_REASONS} more problem(s) of the same kinds"
    )
    assert report_path.stat().st_size < 100_000
    assert len(done.stdout) + len(done.stderr) < 100_000


def test_reasons_of_every_origin_are_capped() -> None:
    reasons = [f"problem {i}" for i in range(5 * MAX_REASONS)]
    assert len(InvalidSubmission(reasons).reasons) == MAX_REASONS + 1
    collected = BoundedReasons()
    for reason in reasons:
        collected.append(reason)
    collected.count_more(7)
    assert len(collected) == 5 * MAX_REASONS + 7
    assert collected.as_list() == [
        *reasons[:MAX_REASONS],
        f"... and {4 * MAX_REASONS + 7} more problem(s) of the same kinds",
    ]
    assert InvalidSubmission(collected.as_list()).reasons == collected.as_list()


def test_paths_escaping_the_submission_folder(dirs, tmp_path) -> None:
    folder = _folder(dirs, tmp_path, "")
    outside = tmp_path / "outside.nii.gz"
    shutil.copy(folder / "predictions" / "sub-strokecase0009_pred.nii.gz", outside)
    (folder / "predictions" / "link.nii.gz").symlink_to(outside)
    _rows(
        folder,
        [
            ("sub-strokecase0002", "../outside.nii.gz"),
            ("sub-strokecase0009", "predictions/link.nii.gz"),
        ],
    )
    reasons = _reasons(dirs, folder)
    assert any("sub-strokecase0002" in r and "'..'" in r for r in reasons)
    assert any("sub-strokecase0009" in r and "outside the submission folder" in r for r in reasons)
    _rows(
        folder,
        [
            ("sub-strokecase0002", str(outside)),
            ("sub-strokecase0009", "predictions/sub-strokecase0009_pred.nii.gz"),
        ],
    )
    (reason,) = _reasons(dirs, folder)
    assert "absolute" in reason


def test_empty_csv_and_header_only_csv(dirs, tmp_path) -> None:
    folder = _folder(dirs, tmp_path, "")
    (folder / "submission.csv").write_text("")
    (reason,) = _reasons(dirs, folder)
    assert "empty" in reason
    _rows(folder, [])
    (reason,) = _reasons(dirs, folder)
    assert "zero data rows" in reason


def test_one_file_for_two_ids_is_invalid(dirs, tmp_path) -> None:
    folder = _folder(dirs, tmp_path, "")
    same = "predictions/sub-strokecase0009_pred.nii.gz"
    _rows(folder, [("sub-strokecase0002", same), ("sub-strokecase0009", same)])
    reasons = _reasons(dirs, folder)
    assert any("also used by id" in r for r in reasons)
