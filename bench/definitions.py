"""The two definition sets side by side on the mini data: gold, sample and two perturbations.

Run: ``.venv/bin/python bench/definitions.py [--data-dir D] [TASK ...]`` (default: every task,
prepared with ``--mini`` into D, a temporary folder unless given). For each task it grades
``gold`` (``private/gold/``), ``sample`` (the public sample submission), ``mixed`` (gold with its
first case taken from the sample) and ``shifted`` (gold with every file moved slightly), the
perturbations of ``tests/golden``, under ``official`` and ``study``, and prints a Markdown table:
the headline metric and the mean position under each set, and the ranked metric that moves most
(values compared to 5 decimals, the study's precision).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "golden"))

from golden_cases import build_submission

from rexmle.grading import GradeReport, grade_submission
from rexmle.preparation import prepare_task
from rexmle.tasks.definitions import STUDY_METRIC_DECIMALS
from rexmle.tasks.registry import all_tasks

VARIANTS = ("gold", "sample", "mixed", "shifted")


def _cell(report: GradeReport) -> str:
    if not report.valid:
        return "invalid"
    return f"{report.headline_value:.5f} (pos {report.ranking.mean_position:.5g})"


def _largest_change(official: GradeReport, study: GradeReport) -> str:
    """The ranked metric whose value moves most (relative to its size), or ``-``."""
    if not (official.valid and study.valid):
        return "-" if official.valid == study.valid else "validity"
    ranked = official.ranking.positions
    moved = {
        key: abs(study.metrics[key] - value) / max(abs(value), 1e-12)
        for key, value in official.metrics.items()
        if key in ranked and round(value, STUDY_METRIC_DECIMALS) != study.metrics[key]
    }
    if not moved:
        return "-"
    key = max(moved, key=lambda k: moved[k])
    return f"{key} {official.metrics[key]:.5g} → {study.metrics[key]:.5g}"


def main() -> None:
    """Prepare, grade and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="*", help="task ids (default: all)")
    parser.add_argument("--data-dir", type=Path, default=None)
    args = parser.parse_args()
    tasks = args.tasks or list(all_tasks())
    with tempfile.TemporaryDirectory(prefix="rexmle-definitions-") as tmp:
        data_dir = args.data_dir or Path(tmp) / "data"
        print("| task | variant | headline | official | study | largest change |")
        print("|---|---|---|---|---|---|")
        for task_id in tasks:
            dirs, _ = prepare_task(task_id, data_dir=data_dir, mini=True)
            for variant in VARIANTS:
                work = Path(tmp) / task_id / variant
                work.parent.mkdir(parents=True, exist_ok=True)
                submission = build_submission(task_id, variant, dirs, work)
                official, study = (
                    grade_submission(
                        task_id, submission, data_dir=data_dir, workers=1, definitions=chosen
                    )
                    for chosen in ("official", "study")
                )
                print(
                    f"| {task_id} | {variant} | {official.headline_key} | {_cell(official)} "
                    f"| {_cell(study)} | {_largest_change(official, study)} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
