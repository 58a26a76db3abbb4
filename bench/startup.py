"""Start-up cost of the command line and of grading a small task, against their budgets.

Not a test. Each command runs in a fresh interpreter, once per round, for ``--repeat`` rounds
(default 7), the commands taking turns within a round; the table gives the median wall and CPU
seconds, and the ratios are the medians of the ratios within each round. Measured:

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


def timed_once(argv: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``argv`` (CPU: user + system of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def interleaved(rows: dict[str, list[str]], repeat: int) -> dict[str, list[tuple[float, float]]]:
    """``repeat`` rounds, each running every command once in turn, so that a change of the
    machine's load between commands moves all of them alike within a round.
    """
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in rows}
    for _ in range(repeat):
        for name, argv in rows.items():
            results[name].append(timed_once(argv))
    return results


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
        runs = interleaved(rows, args.repeat)
    print(f"{'command':42s} {'wall s':>8s} {'CPU s':>8s}")
    for name, values in runs.items():
        wall = statistics.median(v[0] for v in values)
        cpu = statistics.median(v[1] for v in values)
        print(f"{name:42s} {wall:8.3f} {cpu:8.3f}")

    interpreter = runs["python -c pass"]
    numeric = runs["import numpy, scipy.ndimage, SimpleITK"]
    cli_net = statistics.median(
        c[0] - i[0] for c, i in zip(runs["import rexmle.cli"], interpreter, strict=True)
    )
    grades = runs["rexmle grade isles22 (mini gold)"]
    ratios = [g[0] / n[0] for g, n in zip(grades, numeric, strict=True)]
    grade_ratio = statistics.median(ratios)
    print(
        f"import rexmle.cli net of the interpreter (median of rounds): {cli_net:.3f} s "
        f"(budget {CLI_IMPORT_BUDGET_S} s: {'met' if cli_net <= CLI_IMPORT_BUDGET_S else 'MISSED'})"
    )
    print(
        f"grade / bare numeric import, per round: median {grade_ratio:.2f}x, "
        f"range {min(ratios):.2f}-{max(ratios):.2f}x "
        f"(budget {GRADE_BUDGET_RATIO}x: {'met' if grade_ratio <= GRADE_BUDGET_RATIO else 'MISSED'})"
    )


if __name__ == "__main__":
    main()
