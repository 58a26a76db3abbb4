"""The grader process: its own memory limit, killed with the harness, never a late grade.json."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from runner_support import COPY_SAMPLE, marker_processes

from rexmle.runner.limits import EXIT_PARENT_GONE, limited_argv

# a submission.csv of 1,000,000 malformed lines: grading it takes seconds, long enough to kill
# the harness while the grader works
SLOW_SUBMISSION = (
    "python3 -c \"import os; f = open(os.environ['SUBMISSION_DIR'] + '/submission.csv', 'w'); "
    "f.write('case_id,predicted_mask_path\\n'); "
    "f.writelines('x%d,a,b\\n' % i for i in range(1000000))\""
)


def _wait_for(condition, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.05)


def test_grader_dies_with_a_killed_harness_and_writes_no_grade(isles22_dirs, tmp_path: Path):
    runs = tmp_path / f"runs-{time.time_ns()}"
    argv = [
        sys.executable, "-m", "rexmle.cli", "run", "--agent", "command", "--agent-cmd",
        SLOW_SUBMISSION, "--task", "isles22", "--mini", "--data-dir",
        str(isles22_dirs.root.parent), "--runs-dir", str(runs), "--sandbox", "local",
    ]  # fmt: skip
    runs.mkdir()
    marker = f"{runs}/default/isles22/"  # the run folder: on the grader's command line only
    with open(tmp_path / "harness.log", "w") as log:
        harness = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_for(lambda: marker_processes(marker) != [])
            time.sleep(0.5)  # the grader is working
        finally:
            harness.send_signal(signal.SIGKILL)
            harness.wait(timeout=30)
    (folder,) = (runs / "default" / "isles22").glob("command*/seed-0")
    _wait_for(lambda: marker_processes(marker) == [], timeout_s=10)
    time.sleep(1.0)
    assert not (folder / "grade.json").exists()
    # the same grade takes about 10 s: a surviving grader would have written grade.json by now
    assert not (folder / "grade.json").exists()


def test_memory_limit_applies_to_the_command_and_not_its_parent():
    probe = (
        "import resource\n"
        "print(resource.getrlimit(resource.RLIMIT_AS)[0])\n"
        "try:\n"
        "    block = bytearray(600 << 20)\n"
        "    print('allocated')\n"
        "except MemoryError:\n"
        "    print('MemoryError')\n"
    )
    done = subprocess.run(
        limited_argv([sys.executable, "-c", probe], memory_bytes=400 << 20),
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert done.stdout.split() == [str(400 << 20), "MemoryError"]
    unlimited = subprocess.run(
        limited_argv([sys.executable, "-c", probe], memory_bytes=None),
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert unlimited.stdout.split()[1] == "allocated"


def test_launcher_refuses_to_start_when_its_parent_is_gone():
    argv = limited_argv([sys.executable, "-c", "print('started')"], memory_bytes=None)
    argv[argv.index("--parent") + 1] = "1"  # not our parent: as if the harness had died
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == EXIT_PARENT_GONE
    assert "started" not in done.stdout


def test_a_grader_out_of_memory_is_an_infra_error(isles22_dirs, tmp_path: Path):
    runs = tmp_path / "runs"
    done = subprocess.run(
        [sys.executable, "-m", "rexmle.cli", "run", "--agent", "command", "--agent-cmd",
         COPY_SAMPLE, "--task", "isles22", "--mini", "--data-dir", str(isles22_dirs.root.parent),
         "--runs-dir", str(runs), "--sandbox", "local", "--grade-memory-mb", "64"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr[-3000:]  # a run ended infra_error
    (folder,) = (runs / "default" / "isles22").glob("command*/seed-0")
    record = json.loads((folder / "run.json").read_text())
    assert record["status"] == "infra_error"
    assert record["grade"]["grader_exit_code"] not in (0, 1)
    assert "the grader failed" in record["error"]
    assert not (folder / "grade.json").exists()
