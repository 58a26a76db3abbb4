"""Score one submission-shaped folder against another with the task's official metrics.

This is what ``public/score.py`` runs for an agent: ``PRED_DIR`` and ``GOLD_DIR`` are folders
shaped like a submission (``submission.csv`` and the files it names), ``GOLD_DIR`` built by the
agent from training labels. The metrics are computed by the grader's own code
(:func:`rexmle.grading.grader.score_rows` and :func:`~rexmle.grading.grader.aggregate_metrics`
with the family's scorer); nothing private is read.

Differences from ``rexmle grade``, all because the cases are not the test set:

- the ids are those of ``GOLD_DIR`` (``PRED_DIR`` must have exactly them), not the test ids;
- the generic rules apply to both folders (columns, one row per id, paths inside the folder),
  but not the declared file rules and family checks, which compare files with the public test
  inputs; a file the scorer cannot read is reported with the case it belongs to;
- ``GOLD_DIR`` stands for ``private/``: a family whose scorer reads more than gold from there
  finds it in ``GOLD_DIR`` (:data:`GOLD_EXTRAS`, e.g. TopCoW's ``roi/`` boxes), or builds it from
  the gold folder (DENTEX's ``gt_coco.json`` from the gold detections);
- no ranking: the leaderboard ranks test-set values only.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from rexmle.errors import HarnessError, InvalidSubmission, RexmleError
from rexmle.grading.grader import aggregate_metrics, load_submission, score_rows
from rexmle.tasks.csvfile import read_id_column
from rexmle.tasks.jobs import ScoreJob
from rexmle.tasks.parallel import default_workers
from rexmle.tasks.registry import Task, load_task
from rexmle.tasks.submission import LoadedSubmission

SUBMISSION_CSV = "submission.csv"
GOLD_EXTRAS: dict[str, str] = {
    "topcow-track1-task1": (
        "roi/topcow_ct_<id>.txt: the ROI box of each gold case (copy train/roi/ of the data)"
    ),
    "topcow-track2-task1": (
        "roi/topcow_mr_<id>.txt: the ROI box of each gold case (copy train/roi/ of the data)"
    ),
    "dentex": (
        "gt_coco.json (optional): COCO annotations of the gold images, as the training "
        "annotations are written; without it the gold detections are the reference "
        "(area = box width x height, not crowd)"
    ),
}
"""What a family's scorer reads from ``GOLD_DIR`` besides the gold submission."""


class PairScoreError(RexmleError):
    """The two folders cannot be scored against each other (the message says why)."""

    exit_code = 1


def _load(
    task: Task, folder: Path, public: Path, ids: list[str] | None, what: str
) -> LoadedSubmission:
    if not (folder / SUBMISSION_CSV).is_file():
        msg = f"{what} {folder} has no {SUBMISSION_CSV}"
        raise PairScoreError(msg)
    if ids is None:
        ids = read_id_column(folder / SUBMISSION_CSV, task.columns.id_column)
    try:
        return load_submission(task, folder, public, workers=1, expected=ids, file_checks=False)
    except InvalidSubmission as err:
        reasons = "\n  - ".join(err.reasons)
        msg = f"{what} {folder} is not a submission of the gold cases:\n  - {reasons}"
        raise PairScoreError(msg) from err


def _dentex_truth(gold: LoadedSubmission, private: Path) -> None:
    """``gt_coco.json`` of the gold detections (one image per gold id, boxes as annotations)."""
    images: list[dict[str, object]] = []
    annotations: list[dict[str, object]] = []
    for number, case_id in enumerate(gold.ids(), start=1):
        images.append({"id": number, "file_name": f"{case_id}.png"})
        (path,) = gold.cases[case_id].paths.values()
        for box in json.loads(path.read_text(encoding="utf-8-sig")):
            x, y, w, h = (float(v) for v in box["bbox"])
            annotations.append(
                {
                    **{k: v for k, v in box.items() if k.startswith("category_id")},
                    "id": len(annotations) + 1,
                    "image_id": number,
                    "bbox": [x, y, w, h],
                    "area": w * h,
                    "iscrowd": 0,
                }
            )
    document = {"images": images, "annotations": annotations}
    (private / "gt_coco.json").write_text(json.dumps(document), encoding="utf-8")


def score_folders(
    task_id: str,
    pred_dir: Path,
    gold_dir: Path,
    *,
    public_dir: Path,
    workers: int | None = None,
) -> dict[str, float]:
    """Every declared metric of ``pred_dir`` against ``gold_dir`` (see the module docstring).

    Args:
        task_id: the task.
        pred_dir: the predictions, shaped like a submission.
        gold_dir: the reference, shaped like a submission (its ids are the cases scored).
        public_dir: the task's public data (the agent's ``data/``).
        workers: parallel scoring processes (default: as the grader).

    Raises:
        PairScoreError: a folder is not a submission of the gold cases, or a case cannot be
            scored (a file the scorer cannot read).
    """
    task = load_task(task_id)
    gold = _load(task, Path(gold_dir), Path(public_dir), None, "GOLD_DIR")
    pred = _load(task, Path(pred_dir), Path(public_dir), gold.ids(), "PRED_DIR")
    with tempfile.TemporaryDirectory(prefix="rexmle-score-") as scratch:
        private = Path(gold_dir)
        if task.spec.family == "dentex" and not (private / "gt_coco.json").is_file():
            private = Path(scratch)
            _dentex_truth(gold, private)
        job = ScoreJob(
            submission=pred,
            gold=gold,
            task=task.spec,
            public=Path(public_dir),
            private=private,
            workers=workers or default_workers(),
        )
        try:
            rows = score_rows(task, job)
            return aggregate_metrics(task, rows)
        except HarnessError:
            raise
        except (OSError, ValueError, KeyError, IndexError, TypeError, RuntimeError) as err:
            extra = GOLD_EXTRAS.get(task_id)
            hint = f" (GOLD_DIR must also hold {extra})" if extra else ""
            msg = f"{task_id}: the folders cannot be scored: {type(err).__name__}: {err}{hint}"
            raise PairScoreError(msg) from err


def usage_text(task_id: str) -> str:
    """How an agent uses ``score.py`` for ``task_id`` (the help and the instructions say it)."""
    task = load_task(task_id)
    keys = ", ".join(
        f"{m.key} ({'higher' if m.higher_is_better else 'lower'} is better)"
        for m in task.spec.metrics
    )
    lines = [
        f"python score.py PRED_DIR GOLD_DIR [--json]: the official metrics of {task_id} for "
        "PRED_DIR against GOLD_DIR, both shaped like a submission (submission.csv and the files "
        "it names). Build GOLD_DIR from training cases and their labels; PRED_DIR must have a "
        "row for every id of GOLD_DIR.",
        f"Metrics: {keys}.",
    ]
    extra = GOLD_EXTRAS.get(task_id)
    if extra:
        lines.append(f"GOLD_DIR also holds {extra}.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``python -m rexmle.grading.pair_score TASK PRED_DIR GOLD_DIR [--json]``.

    Exit 0 with the metrics printed, 1 when the folders cannot be scored, 2 on a harness error.
    """
    parser = argparse.ArgumentParser(prog="score.py", description=__doc__.splitlines()[0])
    parser.add_argument("task")
    parser.add_argument("pred_dir", type=Path)
    parser.add_argument("gold_dir", type=Path)
    parser.add_argument("--public-dir", type=Path, required=True)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args(argv)
    try:
        metrics = score_folders(
            args.task,
            args.pred_dir,
            args.gold_dir,
            public_dir=args.public_dir,
            workers=args.workers,
        )
    except PairScoreError as err:
        sys.stderr.write(f"score.py: {err}\n")
        return 1
    except RexmleError as err:
        sys.stderr.write(f"score.py: {err}\n")
        return 2
    if args.json:
        sys.stdout.write(json.dumps({"task": args.task, "metrics": metrics}) + "\n")
    else:
        width = max(len(key) for key in metrics)
        for key, value in metrics.items():
            sys.stdout.write(f"{key:<{width}}  {value:.6g}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
