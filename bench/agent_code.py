"""Cost of shipping an agent's own code (``--agent-dir``): hash at planning, snapshot per run.

Builds synthetic agent folders (many small source files; a few large files near the 64 MiB
cap) and times, median of ``--repeat`` rounds:

- ``scan``: the walk with every refusal check (:func:`rexmle.runner.agent_code.scan`);
- ``hash``: the content hash (:func:`~rexmle.runner.agent_code.tree_sha256`);
- ``planned``: the planning hash when nothing changed (:func:`planned_sha256`, cached by stat);
- ``snapshot``: the read-only copy a run gets, hashed again (:func:`take_snapshot`).

Run: ``.venv/bin/python bench/agent_code.py`` (``--repeat N``).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rexmle.runner.agent_code import (
    planned_sha256,
    remove_snapshot,
    scan,
    take_snapshot,
    tree_sha256,
)


def small_files(root: Path, n: int = 2000) -> Path:
    """``n`` source files of 2 KiB in 40 folders."""
    for i in range(n):
        folder = root / f"pkg{i % 40}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"m{i}.py").write_text(f"# module {i}\n" + "x = 1\n" * 340)
    return root


def large_files(root: Path, n: int = 6, mib: int = 10) -> Path:
    """``n`` files of ``mib`` MiB (weights) beside one script."""
    root.mkdir(parents=True)
    (root / "run.py").write_text("print('hi')\n")
    for i in range(n):
        (root / f"w{i}.bin").write_bytes(bytes([i]) * (mib << 20))
    return root


def median_s(action: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        folders = {
            "2000 files x 2 KiB": small_files(base / "small"),
            "6 files x 10 MiB": large_files(base / "large"),
        }
        print(f"{'folder':<20} {'scan':>9} {'hash':>9} {'planned':>9} {'snapshot':>9}")
        for label, folder in folders.items():
            digest = tree_sha256(folder)
            planned_sha256(folder)
            target = base / "snap"
            row = [
                median_s(lambda f=folder: scan(f), args.repeat),
                median_s(lambda f=folder: tree_sha256(f), args.repeat),
                median_s(lambda f=folder: planned_sha256(f), args.repeat),
                median_s(
                    lambda f=folder, t=target, d=digest: take_snapshot(f, t, expected_sha256=d),
                    args.repeat,
                ),
            ]
            remove_snapshot(target)
            print(f"{label:<20} " + " ".join(f"{v * 1000:>7.1f}ms" for v in row))


if __name__ == "__main__":
    main()
