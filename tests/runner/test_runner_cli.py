"""`rexmle run` (resume after a kill, skip, retry) and `rexmle demo`."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from runner_support import COPY_SAMPLE, marker_processes
from typer.testing import CliRunner, Result

from rexmle.cli import app
from rexmle.errors import TaskNotImplemented
from rexmle.preparation import SECRET_BYTES, prepare_task
from rexmle.records.runs import read_record
from rexmle.runner.demo import run_demo
from rexmle.tasks.registry import all_tasks, get_task, load_task


def in_process(*args: str) -> Result:
    """Run the CLI in this process (fast; the agents still run as subprocesses)."""
    return CliRunner().invoke(app, list(args))


def rexmle(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    """Run the CLI as its own process (needed to kill it from outside)."""
    return subprocess.run(
        [sys.executable, "-m", "rexmle.cli", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        **kwargs,  # type: ignore[arg-type]
    )


def wait_for(condition, *, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.2)


def status_of(folder: Path) -> str | None:
    record = read_record(folder)
    return None if record is None else record.status


def test_killed_run_resumes_only_unfinished_runs(isles22_dirs, tmp_path: Path):
    hold = tmp_path / f"hold-{time.time_ns()}"
    hold.touch()
    # seed 0 finishes at once; the others wait while `hold` exists
    command = (
        f'{COPY_SAMPLE}; if [ "$SEED" != 0 ]; then while [ -e {hold} ]; do sleep 0.1; done; fi'
    )
    runs = tmp_path / "runs"
    args = [
        "run", "--agent", "command", "--agent-cmd", command, "--agent-name", "held",
        "--task", "isles22", "--seeds", "3", "--mini", "--data-dir", str(isles22_dirs.root.parent),
        "--runs-dir", str(runs), "--sandbox", "local", "--kill-grace", "1",
    ]  # fmt: skip
    seeds = [runs / "default" / "isles22" / "held" / f"seed-{k}" for k in range(3)]
    with open(tmp_path / "first.log", "w") as log:
        first = subprocess.Popen(
            [sys.executable, "-m", "rexmle.cli", *args], stdout=log, stderr=subprocess.STDOUT
        )
        wait_for(lambda: status_of(seeds[0]) == "completed" and status_of(seeds[1]) == "running")
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=60) == 130
    assert "interrupted" in (tmp_path / "first.log").read_text()
    assert marker_processes(str(hold)) == []  # the waiting agent was stopped with the harness
    assert status_of(seeds[1]) == "cancelled"  # stopped on purpose: not final, runs again
    assert status_of(seeds[2]) is None
    done_before = (seeds[0] / "run.json").read_bytes()

    hold.unlink()
    second = rexmle(*args, "--concurrency", "2")  # not part of the run config
    assert second.returncode == 0, second.stderr
    assert "2 run(s) to do, 1 already done" in second.stderr
    assert (seeds[0] / "run.json").read_bytes() == done_before  # not redone
    assert [status_of(s) for s in seeds] == ["completed"] * 3


def test_retry_failed_reruns_agent_errors(isles22_dirs, tmp_path: Path):
    flag = tmp_path / "fail-once"
    flag.touch()
    command = f"if [ -e {flag} ]; then exit 5; fi; {COPY_SAMPLE}"
    args = [
        "run", "--agent", "command", "--agent-cmd", command, "--task", "isles22", "--mini",
        "--data-dir", str(isles22_dirs.root.parent), "--runs-dir", str(tmp_path / "runs"),
        "--sandbox", "local",
    ]  # fmt: skip
    assert in_process(*args).exit_code == 0
    folder = next((tmp_path / "runs").rglob("seed-0"))
    assert status_of(folder) == "agent_error"
    flag.unlink()
    assert "0 run(s) to do" in in_process(*args).stderr  # failures are kept by default
    assert status_of(folder) == "agent_error"
    assert in_process(*args, "--retry-failed").exit_code == 0
    assert status_of(folder) == "completed"


def test_run_refuses_bad_arguments(tmp_path: Path):
    both = in_process("run", "--agent", "dummy", "--task", "isles22", "--suite", "mini")
    assert both.exit_code == 2
    assert "not both" in both.stderr
    neither = in_process("run", "--agent", "dummy", "--dry-run")
    assert neither.exit_code == 2
    assert "give --task TASK (one or more) or --suite SUITE" in neither.stderr
    assert "not both" not in neither.stderr  # none was given
    no_cmd = in_process("run", "--agent", "command", "--task", "isles22")
    assert no_cmd.exit_code == 2
    assert "--agent-cmd" in no_cmd.stderr
    slurm = in_process("run", "--agent", "dummy", "--task", "isles22", "--executor", "ray")
    assert slurm.exit_code == 2
    assert "not available" in slurm.stderr
    unprepared = in_process(
        "run", "--agent", "dummy", "--task", "isles22", "--data-dir", str(tmp_path / "empty"),
        "--runs-dir", str(tmp_path / "runs"),
    )  # fmt: skip
    assert unprepared.exit_code == 2
    assert "not prepared" in unprepared.stderr
    assert not (tmp_path / "runs").exists()


def test_demo_on_isles22(tmp_path: Path):
    done = rexmle(
        "demo", "--dir", str(tmp_path / "demo"), "--task", "isles22", "--concurrency", "1"
    )
    assert done.returncode == 0, done.stderr
    assert "isles22" in done.stdout
    assert "dice" in done.stdout
    assert "sample sub.: the headline value the task's sample submission scores" in done.stdout
    rows = json.loads((tmp_path / "demo" / "demo.json").read_text())
    assert len(rows) == 1
    row = rows[0]
    assert (row["task"], row["headline_key"], row["status"], row["valid"]) == (
        "isles22",
        "dice",
        "completed",
        True,
    )
    assert row["beats_sample"]
    assert row["value"] > row["sample_value"]
    assert 0.0 <= row["percentile"] <= 1.0
    assert (tmp_path / "demo" / "report.md").is_file()
    assert "MINI DATA" in done.stdout
    assert "MINI DATA" in (tmp_path / "demo" / "report.md").read_text()
    assert "class='banner mini'" in (tmp_path / "demo" / "report.html").read_text()
    grade = json.loads(
        (
            tmp_path / "demo" / "runs" / "demo" / "isles22" / "baseline" / "seed-0" / "grade.json"
        ).read_text()
    )
    assert grade["metrics"]["dice"] == row["value"]


def _has_baseline(task_id: str) -> bool:
    try:
        task = load_task(task_id)
    except TaskNotImplemented:
        return False
    return task.has_baseline


@pytest.mark.slow
def test_demo_on_the_whole_mini_suite(tmp_path: Path):
    # The demo's data made from the fixtures every other test uses (seed 0: a secret of zero
    # bytes, which the demo keeps), so its baseline values are those of the golden reports.
    # With a fresh secret a nearest-case baseline may tie the sample on a few mini cases;
    # tests/test_fixture_secret.py covers fresh secrets.
    for task_id in all_tasks():
        prepare_task(
            task_id, data_dir=tmp_path / "demo" / "data", mini=True,
            fixture_secret=bytes(SECRET_BYTES),
        )  # fmt: skip
    result = run_demo(tmp_path / "demo", concurrency=2)
    implemented = [t for t in all_tasks() if _has_baseline(t)]
    assert [r.task for r in result.rows if r.status != "not implemented"] == implemented
    assert len(result.rows) == len(all_tasks())
    for row in result.rows:
        if row.status == "not implemented":
            continue
        direction = get_task(row.task).headline.higher_is_better
        assert row.status == "completed", (row.task, row.note)
        assert row.valid, row.task
        assert row.beats_sample, (row.task, row.value, row.sample_value, direction)
    assert all(path.is_file() for path in result.report_files)


def test_run_prints_why_a_run_failed_and_json_records(isles22_dirs, tmp_path: Path):
    bad_csv = (
        'printf "case_id,predicted_mask_path\\nnot-a-case,nowhere.nii.gz\\n" '
        '> "$SUBMISSION_DIR/submission.csv"'
    )
    crash = "echo \"ModuleNotFoundError: No module named 'monai'\" >&2; exit 1"
    base = [
        "run", "--agent", "command", "--task", "isles22", "--mini", "--data-dir",
        str(isles22_dirs.root.parent), "--runs-dir", str(tmp_path / "runs"), "--sandbox", "local",
    ]  # fmt: skip
    invalid = rexmle(*base, "--agent-cmd", bad_csv, "--agent-name", "bad", "--json")
    assert invalid.returncode == 0, invalid.stderr
    assert "invalid_submission" in invalid.stderr
    assert "reason: submission.csv" in invalid.stderr
    records = json.loads(invalid.stdout)
    assert [(r["agent"], r["status"]) for r in records] == [("bad", "invalid_submission")]
    crashed = rexmle(*base, "--agent-cmd", crash, "--agent-name", "crash")
    assert "crash: import_error" in crashed.stderr
    assert "No module named" in crashed.stderr
