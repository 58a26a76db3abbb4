"""Write the frozen grade reports ``tests/golden/<task>.json`` (see ``golden_cases``).

Run from the checkout: ``.venv/bin/python tests/golden/make_golden.py [TASK ...]``. It prepares every
registered task (or the given ones) with ``--mini`` in a temporary data dir, grades every variant
and overwrites the JSON files. Only rerun it when a grade is meant to change, and say why in the
commit message: the golden test exists to prove that legitimate grades do not move.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from golden_cases import VARIANTS, golden_path, grade_variant

from rexmle.preparation import prepare_task
from rexmle.tasks.registry import all_tasks


def main(argv: list[str]) -> int:
    """Entry point (see the module docstring)."""
    task_ids = argv or sorted(all_tasks())
    with tempfile.TemporaryDirectory(prefix="rexmle-golden-") as tmp:
        data_dir = Path(tmp) / "data"
        for task_id in task_ids:
            dirs, _ = prepare_task(task_id, data_dir=data_dir, mini=True, fixture_secret=None)
            work = Path(tmp) / "work" / task_id
            work.mkdir(parents=True)
            reports = {v: grade_variant(task_id, v, dirs, work) for v in VARIANTS}
            text = json.dumps(reports, indent=1, sort_keys=True, allow_nan=False) + "\n"
            golden_path(task_id).write_text(text, encoding="utf-8")
            sys.stdout.write(f"{task_id}: {len(text)} bytes\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
