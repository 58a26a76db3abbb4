"""The ``baseline`` agent: the task's own non-LLM solver, run inside the sandbox.

Run as ``python -m rexmle.agents.baseline`` with $TASK_ID, $DATA_DIR, $SUBMISSION_DIR and $SEED
set (the workspace sets them). It calls ``solve_baseline(data, submission, seed=...)`` of the
task implementation and never reads anything but the public data it is given.

Exit codes: 0 the solver finished; 3 the task has no baseline solver (TaskNotImplemented);
anything else is a crash of the solver (traceback on stderr).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

EXIT_NOT_IMPLEMENTED = 3


def main() -> int:
    """Entry point (see the module docstring)."""
    from rexmle.errors import TaskNotImplemented
    from rexmle.tasks.registry import load_task

    task_id = os.environ["TASK_ID"]
    public_dir = Path(os.environ["DATA_DIR"])
    submission_dir = Path(os.environ["SUBMISSION_DIR"])
    seed = int(os.environ.get("SEED", "0"))
    submission_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    try:
        load_task(task_id).solve_baseline(public_dir, submission_dir, seed=seed)
    except TaskNotImplemented as err:
        sys.stderr.write(f"baseline: not implemented: {err}\n")
        return EXIT_NOT_IMPLEMENTED
    seconds = time.perf_counter() - started
    sys.stdout.write(f"baseline: {task_id} seed {seed} solved in {seconds:.1f} s\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
