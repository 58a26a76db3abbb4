"""A job runs once across processes: the second ``rexmle run`` on it skips it and touches nothing."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from runner_support import COPY_SAMPLE

from rexmle.records.runs import read_record
from rexmle.runner.run_lock import RunLocked, run_folder_lock


def test_second_run_of_the_same_job_skips_it(isles22_dirs, tmp_path: Path):
    started = tmp_path / "started"
    release = tmp_path / "release"
    command = f"{COPY_SAMPLE}; touch {started}; while [ ! -e {release} ]; do sleep 0.1; done"
    runs = tmp_path / "runs"
    args = [
        sys.executable, "-m", "rexmle.cli", "run", "--agent", "command", "--agent-cmd", command,
        "--agent-name", "once", "--task", "isles22", "--mini",
        "--data-dir", str(isles22_dirs.root.parent), "--runs-dir", str(runs),
        "--sandbox", "local", "--kill-grace", "1",
    ]  # fmt: skip
    folder = runs / "default" / "isles22" / "once" / "seed-0"
    with open(tmp_path / "first.log", "w") as log:
        first = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while not started.exists():
            assert time.monotonic() < deadline, (tmp_path / "first.log").read_text()
            time.sleep(0.1)
        submission_before = sorted(os.listdir(folder / "workspace" / "submission"))
        second_started = time.monotonic()
        second = subprocess.run(args, capture_output=True, text=True, timeout=300, check=False)
        second_s = time.monotonic() - second_started
        # the first run's workspace is untouched by the second process
        assert sorted(os.listdir(folder / "workspace" / "submission")) == submission_before
        release.touch()
        assert first.wait(timeout=300) == 0
    message = " ".join(second.stderr.split())  # the console wraps long lines
    assert "skipped: another rexmle process is running this job" in message
    assert second.returncode == 0
    record = read_record(folder)
    assert record is not None
    assert record.status == "completed"
    print(f"second process skipped the locked job in {second_s:.2f} s")


def test_lock_is_exclusive_and_freed_when_released(tmp_path: Path):
    with run_folder_lock(tmp_path / "run") as path:
        with (
            pytest.raises(RunLocked, match="another rexmle process"),
            run_folder_lock(tmp_path / "run"),
        ):
            pass
        # a separate process sees it taken, too
        probe = (
            "import fcntl, sys; f = open(sys.argv[1]); "
            "fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)"
        )
        held = subprocess.run([sys.executable, "-c", probe, str(path)], check=False)
        assert held.returncode != 0
    with open(path) as handle:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free again
