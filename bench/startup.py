"""Start-up cost of the command line and of grading a small task, against their budgets.

Not a test. Each command runs in a fresh interpreter ``--repeat`` times (default 7); the table
gives the median wall and CPU seconds. Measured:

- ``python -c pass``: the interpreter alone;
- the bare import of the numeric libraries grading needs (numpy, scipy.ndimage, SimpleITK);
- ``import rexmle.cli`` (net = minus the interpreter; budget 0.15 s);
- ``rexmle --help``;
- ``rexmle grade isles22`` of the gold of the mini task (prepared first in a temporary data dir,
  graded once before timing, as an auditor's second grade of the same task; budget 1.5 x the
  bare numeric import).

Run:  .venv/bin/python bench/startup.py [--repeat N]
Compare two checkouts by running it with each one's interpreter.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI_IMPORT_BUDGET_S = 0.15
GRADE_BUDGET_RATIO = 1.5


def timed(argv: list[str], repeat: int) -> tuple[float, float]:
    """Median wall and CPU seconds of ``argv`` (CPU: user + system of the child)."""
    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        walls.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    python = sys.executable
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"python {platform.python_version()}, load {os.getloadavg()[0]:.2f}, "
        f"repeat {args.repeat}"
    )
    with tempfile.TemporaryDirectory(prefix="rexmle-bench-startup-") as tmp:
        data = Path(tmp) / "data"
        subprocess.run(
            [python, "-m", "rexmle.cli", "prepare", "isles22", "--mini", "--data-dir", str(data)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        grade = [python, "-m", "rexmle.cli", "grade", "isles22"]
        grade += [str(data / "isles22" / "private" / "gold"), "--data-dir", str(data)]
        subprocess.run(grade, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        rows = {
            "python -c pass": [python, "-c", "pass"],
            "import numpy, scipy.ndimage, SimpleITK": [
                python,
                "-c",
                "import numpy, scipy.ndimage, SimpleITK",
            ],
            "import rexmle.cli": [python, "-c", "import rexmle.cli"],
            "rexmle --help": [python, "-m", "rexmle.cli", "--help"],
            "rexmle grade isles22 (mini gold)": grade,
        }
        results = {name: timed(argv, args.repeat) for name, argv in rows.items()}
    print(f"{'command':42s} {'wall s':>8s} {'CPU s':>8s}")
    for name, (wall, cpu) in results.items():
        print(f"{name:42s} {wall:8.3f} {cpu:8.3f}")
    interpreter = results["python -c pass"][0]
    numeric = results["import numpy, scipy.ndimage, SimpleITK"][0]
    cli_net = results["import rexmle.cli"][0] - interpreter
    grade_ratio = results["rexmle grade isles22 (mini gold)"][0] / numeric
    print(
        f"import rexmle.cli net of the interpreter: {cli_net:.3f} s "
        f"(budget {CLI_IMPORT_BUDGET_S} s: {'met' if cli_net <= CLI_IMPORT_BUDGET_S else 'MISSED'})"
    )
    print(
        f"grade / bare numeric import: {grade_ratio:.2f}x "
        f"(budget {GRADE_BUDGET_RATIO}x: {'met' if grade_ratio <= GRADE_BUDGET_RATIO else 'MISSED'})"
    )


if __name__ == "__main__":
    main()
