"""``public/score.py``: the launcher of :mod:`rexmle.grading.pair_score` in every task's data.

It is written by ``rexmle prepare`` (like ``description.md``) and uses only the standard library,
because the agent's own interpreter (AIDE's, ML-Master's, R&D-Agent's environment, or an
image's) need not have the harness installed. It looks for an interpreter that can import the
grader, in this order:

1. ``$HARNESS_PYTHON``: the harness's interpreter, set in every run's environment
   (:func:`rexmle.runner.workspace.agent_env`); each sandbox shows it at its own path (bwrap
   maps it, with the harness package, to its read-only mounts);
2. the interpreter running ``score.py``;
3. ``python3`` on ``PATH`` (an agent image has rexmle installed there).

When none can, it says so with each interpreter's import error and exits 2.
"""

from __future__ import annotations

from pathlib import Path


def write_score_script(public: Path, task_id: str) -> Path:
    """Write ``public/score.py`` for ``task_id`` (see :data:`SCORE_SCRIPT`); returns its path."""
    path = public / "score.py"
    path.write_text(SCORE_SCRIPT.replace("@TASK@", task_id), encoding="utf-8")
    path.chmod(0o755)
    return path


SCORE_SCRIPT = '''\
#!/usr/bin/env python3
"""Official metrics of task @TASK@ for two submission-shaped folders.

    python score.py PRED_DIR GOLD_DIR [--json]

Both folders hold a submission.csv and the files it names; build GOLD_DIR from training cases
and their labels (PRED_DIR needs a row for each of its ids). The grader's own code computes the
metrics (python -m rexmle.grading.pair_score). This launcher uses only the standard library: it
runs the grader with the first interpreter that can import it: $HARNESS_PYTHON (the
harness's interpreter, set in every run, so the metrics come from the grader's own interpreter),
this one, then python3 on PATH.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

TASK = "@TASK@"
MODULE = "rexmle.grading.pair_score"
HERE = Path(__file__).resolve().parent


def candidates():
    seen = []
    for python in (os.environ.get("HARNESS_PYTHON"), sys.executable, shutil.which("python3")):
        if python and python not in seen and Path(python).is_file():
            seen.append(python)
    return seen


def main():
    # folders made absolute: the grader runs in this folder, so no package of the caller's
    # working folder shadows the harness's
    given = [a if a.startswith("-") else os.path.abspath(a) for a in sys.argv[1:]]
    args = [TASK, *given, "--public-dir", str(HERE)]
    if any(a in ("-h", "--help") for a in given):
        args = ["--help"]
    tried = []
    for python in candidates():
        probe = subprocess.run(
            [python, "-c", "import " + MODULE],
            capture_output=True,
            text=True,
            check=False,
            cwd=HERE,
        )
        if probe.returncode == 0:
            return subprocess.call([python, "-m", MODULE, *args], cwd=HERE)
        last = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        tried.append(f"{python}: {last}")
    sys.stderr.write(
        "score.py: no interpreter here can import the harness's grader (" + MODULE + "); "
        "tried:\\n  " + "\\n  ".join(tried or ["(none found)"]) + "\\n"
    )
    return 2


if __name__ == "__main__":
    sys.exit(main())
'''
"""The stdlib-only launcher written into every task's ``public/`` (``@TASK@``: the task id)."""
