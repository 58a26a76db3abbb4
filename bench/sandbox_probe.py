"""Sandbox limits as an agent meets them: tmpfs write probe, process limit, log cap, run lock.

Run: ``.venv/bin/python bench/sandbox_probe.py [--tmp-mb 256]``. Needs bwrap; prints one line
per figure (no assertion: the tests check the properties, this reports the numbers).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rexmle.runner.run_lock import RunLocked, run_folder_lock
from rexmle.runner.sandbox import SandboxLimits, SandboxRequest
from rexmle.runner.sandbox.bwrap import BwrapSandbox, bwrap_problem


def run(workdir: Path, command: str, limits: SandboxLimits) -> tuple[str, float]:
    workspace = workdir / "ws"
    workspace.mkdir(exist_ok=True)
    request = SandboxRequest(
        argv=["/bin/sh", "-c", command],
        env={"PATH": "/usr/bin:/bin"},
        workspace=workspace,
        stdout_path=workdir / "out.log",
        stderr_path=workdir / "err.log",
        time_limit_s=300,
        limits=limits,
    )
    started = time.perf_counter()
    BwrapSandbox().run(request)
    seconds = time.perf_counter() - started
    text = (workdir / "out.log").read_text()
    (workdir / "out.log").unlink()
    return text, seconds


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tmp-mb", type=int, default=256)
    options = parser.parse_args()
    problem = bwrap_problem()
    if problem is not None:
        sys.stdout.write(f"skipped: {problem}\n")
        return 0
    limit = options.tmp_mb << 20
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        probe = "dd if=/dev/zero of=/tmp/fill bs=1M count=100000 2>/dev/null; stat -c %s /tmp/fill"
        text, seconds = run(workdir, probe, SandboxLimits(tmp_bytes=limit))
        sys.stdout.write(
            f"tmpfs probe: /tmp limit {limit} B, the agent wrote {int(text)} B "
            f"({seconds:.1f} s for the whole sandboxed run)\n"
        )
        text, seconds = run(workdir, "true", SandboxLimits())
        sys.stdout.write(f"sandbox start+stop of `true`: {seconds:.2f} s\n")
        cap = 1 << 20
        text, _ = run(workdir, "head -c 50000000 /dev/zero", SandboxLimits(log_bytes=cap))
        sys.stdout.write(f"log cap {cap} B: 50 MB written, {len(text)} B kept (with the note)\n")
        folder = workdir / "run"
        with run_folder_lock(folder):
            code = (
                "import sys, time; from pathlib import Path; "
                "from rexmle.runner.run_lock import RunLocked, run_folder_lock; t = time.perf_counter()\n"
                "try:\n    run_folder_lock(Path(sys.argv[1])).__enter__()\n"
                "except RunLocked:\n    print(time.perf_counter() - t)"
            )
            done = subprocess.run(
                [sys.executable, "-c", code, str(folder)],
                capture_output=True,
                text=True,
                check=True,
            )
            sys.stdout.write(
                f"run lock: a second process is refused in {float(done.stdout) * 1e3:.2f} ms "
                f"(pid {os.getpid()} holds it)\n"
            )
        with run_folder_lock(folder):
            pass
        try:
            with run_folder_lock(folder):
                sys.stdout.write("run lock: free again once the holder left\n")
        except RunLocked:  # pragma: no cover - would be a bug
            sys.stdout.write("run lock: STILL HELD\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
