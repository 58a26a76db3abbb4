"""Failure taxonomy from records and logs, and `rexmle analyze` on real mini-data grades."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rexmle.analysis.analyze import analyze_runs, summary_per_agent
from rexmle.analysis.cases import mask_column
from rexmle.analysis.taxonomy import classify, crash_class, invalid_rule
from rexmle.grading import grade_submission
from rexmle.grading.grader import write_report
from rexmle.io import read_image, write_image
from rexmle.report import collect_runs
from tests.grade_reports import grade_report_json
from tests.run_records import write_run_json


def _folder(runs: Path, agent: str, seed: int, record: dict, *, stderr: str = "") -> Path:
    folder = runs / "g" / "isles22" / agent / f"seed-{seed}"
    folder.mkdir(parents=True)
    record = {"config": {"mini": True, "time_limit_s": 1000.0}, **record}
    write_run_json(folder, record)
    (folder / "agent.stderr.log").write_text(stderr)
    return folder


@pytest.mark.parametrize(
    ("stderr", "expected"),
    [
        ("Traceback...\ntorch.OutOfMemoryError: CUDA out of memory. Tried", "out_of_memory"),
        ("RuntimeError: CUDA error: device-side assert triggered", "cuda_error"),
        ("ModuleNotFoundError: No module named 'monai'", "import_error"),
        ("FileNotFoundError: [Errno 2] No such file or directory: 'x'", "file_not_found"),
        ("Traceback (most recent call last):\nKeyError: 'label'", "other (KeyError)"),
        ("Killed", "out_of_memory"),
    ],
)
def test_crash_classes_from_stderr(stderr: str, expected: str) -> None:
    assert crash_class(stderr)[0] == expected


def test_an_unknown_exception_keeps_its_message() -> None:
    stderr = (
        'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n'
        "    x = cases[7]\nIndexError: list index out of range\n"
    )
    assert crash_class(stderr) == ("other (IndexError)", "IndexError: list index out of range")


def test_invalid_rules_from_the_graders_reasons() -> None:
    assert invalid_rule("submission.csv: 3 test id(s) missing: a, b, c.") == "missing_cases"
    assert invalid_rule("masks/a.nii.gz: shape (2, 2, 2), but the test image has") == "wrong_shape"
    assert invalid_rule("file 'a.nii.gz' does not exist in the submission folder") == "missing_file"
    assert invalid_rule("a.nii.gz: values [7] are not allowed; allowed values are") == "bad_values"
    assert invalid_rule("something new") == "other"


def test_every_class_from_run_folders(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    _folder(runs, "a", 0, {"status": "running"})
    _folder(runs, "a", 1, {"status": "infra_error", "error": "the grader failed (exit 2)"})
    _folder(runs, "a", 2, {"status": "budget_exceeded", "error": "LLM budget of $5 spent"})
    _folder(runs, "a", 3, {"status": "timeout", "error": "time limit reached after 1000 s"})
    _folder(
        runs, "a", 4, {"status": "agent_error"}, stderr="RuntimeError: CUDA out of memory. Tried"
    )
    _folder(runs, "a", 5, {"status": "completed", "timings_s": {"agent": 20.0}})
    _folder(runs, "a", 6, {"status": "completed", "timings_s": {"agent": 900.0}})
    invalid = _folder(runs, "a", 7, {"status": "invalid_submission"})
    (invalid / "submission").mkdir()
    (invalid / "submission" / "submission.csv").write_text("case_id\n")
    reasons = ["submission.csv: 2 test id(s) missing: x, y."]
    (invalid / "grade.json").write_text(grade_report_json("isles22", valid=False, reasons=reasons))
    labels = [classify(r).label for r in collect_runs(runs)]
    assert labels == [
        "unfinished",
        "infra_error",
        "budget_stop",
        "timeout",
        "crash: out_of_memory",
        "early_exit",  # exit 0 after 20 s of 1000 s without a submission
        "no_submission",  # exit 0 after 900 s without a submission
        "invalid_format: missing_cases",
    ]


def _graded_run(runs: Path, task: str, agent: str, submission: Path, data_dir: Path) -> None:
    report = grade_submission(task, submission, data_dir=data_dir, workers=1)
    folder = runs / "g" / task / agent / "seed-0"
    folder.mkdir(parents=True)
    status = "completed" if report.valid else "invalid_submission"
    write_run_json(folder, {"status": status, "config": {"mini": True}})
    write_report(report, folder / "grade.json")
    shutil.copytree(submission, folder / "submission")


def _transformed_gold(gold: Path, out: Path, column: str, change) -> Path:
    shutil.copytree(gold, out)
    with (out / "submission.csv").open() as handle:
        cells = [row[column] for row in csv.DictReader(handle)]
    for cell in cells:
        image = read_image(out / cell)
        array = np.ascontiguousarray(change(image.array)).astype(image.array.dtype)
        geometry = image.geometry if array.shape == image.array.shape else None
        if geometry is None:
            write_image(out / cell, array, spacing_mm=image.geometry.spacing_mm)
        else:
            write_image(out / cell, array, like=geometry)
    return out


def test_analyze_flags_a_flipped_and_a_transposed_gold_not_the_gold(
    prepared_mini, tmp_path: Path
) -> None:
    isles, seg_a = prepared_mini("isles22"), prepared_mini("seg_a")
    data_dir = isles.root.parent
    runs = tmp_path / "runs"
    _graded_run(runs, "isles22", "oracle", isles.gold, data_dir)
    flipped = _transformed_gold(
        isles.gold, tmp_path / "flipped", "predicted_mask_path", lambda a: np.flip(a, 0)
    )
    _graded_run(runs, "isles22", "flipper", flipped, data_dir)
    # seg_a's mini grid is (20, 16, 12): swapping x and y gives a wrong shape (invalid, by shape)
    column = mask_column("seg_a")[1]
    swapped = _transformed_gold(
        seg_a.gold, tmp_path / "swapped", column, lambda a: np.transpose(a, (1, 0, 2))
    )
    _graded_run(runs, "seg_a", "swapper", swapped, data_dir)
    analyses = {a.agent: a for a in analyze_runs(collect_runs(runs), data_dir=data_dir)}
    assert analyses["oracle"].geometry.kind == "ok"
    assert analyses["flipper"].geometry.kind == "flipped"
    assert analyses["flipper"].geometry.detail == "flip axes (0,)"
    assert analyses["swapper"].failure.label == "invalid_format: wrong_shape"
    assert analyses["swapper"].geometry.kind == "axes_permuted"
    summary = summary_per_agent(list(analyses.values())).set_index("agent")
    assert summary.loc["flipper", "geometry_flagged"] == 1
    assert summary.loc["oracle", "geometry_flagged"] == 0
    done = subprocess.run(
        [sys.executable, "-m", "rexmle.cli", "analyze", str(runs), "--data-dir", str(data_dir),
         "--json", str(tmp_path / "a.json")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "flipped" in done.stdout
    assert "axes_permuted" in done.stdout
    payload = json.loads((tmp_path / "a.json").read_text())
    assert {r["agent"]: r["geometry"]["kind"] for r in payload["runs"]} == {
        "oracle": "ok",
        "flipper": "flipped",
        "swapper": "axes_permuted",
    }
