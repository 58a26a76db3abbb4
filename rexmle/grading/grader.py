"""Validate and grade a submission folder for a prepared task.

Validation reads public data only and never computes a score. Grading re-runs validation, loads
``private/gold/`` with the same loader, calls the task's scorer and ranks the result. A failure that
is not the submission's fault raises :class:`~rexmle.errors.HarnessError` (exit code 2).
"""

from __future__ import annotations

import functools
import json
import math
import time
from pathlib import Path
from typing import Literal

from rexmle import __version__
from rexmle.challenges.base import LoadedSubmission, SubmissionCase, TaskDirs, TaskImplementation
from rexmle.challenges.registry import load_implementation
from rexmle.config import resolve_data_dir
from rexmle.errors import MAX_REASONS, HarnessError, InvalidSubmission, NotPrepared
from rexmle.grading.checks import SubmissionWarning
from rexmle.grading.csvfile import leading_zero_hints, read_csv_rows
from rexmle.grading.integrity import check_private_files
from rexmle.grading.parallel import default_workers, map_cases
from rexmle.grading.paths import resolve_submission_path
from rexmle.grading.reasons import BoundedReasons
from rexmle.grading.report import GradeReport, ValidationResult
from rexmle.ranking import load_leaderboard

SUBMISSION_CSV = "submission.csv"


def task_dirs(task_id: str, data_dir: Path | None = None) -> TaskDirs:
    """Folders of ``task_id`` under the data dir (see :mod:`rexmle.config`)."""
    from rexmle.challenges.registry import get_task

    root = resolve_data_dir(data_dir)
    spec = get_task(task_id)
    return TaskDirs(root=root / task_id, raw=root / spec.raw_folder / "raw")


def require_prepared(task_id: str, dirs: TaskDirs) -> None:
    """Raise NotPrepared unless ``prepared.json`` exists (it is written last by prepare)."""
    if not dirs.prepared_json.is_file():
        msg = (
            f"task {task_id!r} is not prepared in {dirs.root.parent} "
            f"(no {dirs.prepared_json.name}); run: rexmle prepare {task_id} [--mini] "
            f"--data-dir {dirs.root.parent}"
        )
        raise NotPrepared(msg)


def prepared_data_mode(dirs: TaskDirs) -> Literal["mini", "full"]:
    """``mini`` when ``prepared.json`` says the task was prepared from the mini fixture."""
    prepared = json.loads(dirs.prepared_json.read_text(encoding="utf-8"))
    return "mini" if prepared.get("mini") else "full"


def load_submission(
    task: TaskImplementation, folder: Path, public_dir: Path, *, workers: int
) -> LoadedSubmission:
    """Apply every validity rule (generic CSV/id/path rules, then the task's own checks).

    Raises:
        InvalidSubmission: with every reason found (not only the first).
    """
    folder = Path(folder)
    if not folder.is_dir():
        msg = f"submission folder {folder} does not exist or is not a folder"
        raise InvalidSubmission([msg])
    csv_path = folder / SUBMISSION_CSV
    if csv_path.is_symlink():
        resolved, problem = resolve_submission_path(folder, SUBMISSION_CSV)
        if resolved is None:
            raise InvalidSubmission([f"{SUBMISSION_CSV}: {problem}"])
    columns, rows = read_csv_rows(csv_path)
    reasons = BoundedReasons()
    warnings = BoundedReasons()
    missing_cols = [c for c in task.required_columns if c not in columns]
    if missing_cols:
        msg = (
            f"{SUBMISSION_CSV}: missing required column(s) {missing_cols}; "
            f"expected columns {list(task.required_columns)}, found {columns}"
        )
        raise InvalidSubmission([msg])
    extra_cols = [c for c in columns if c not in task.required_columns]
    if extra_cols:
        warnings.append(f"{SUBMISSION_CSV}: extra column(s) {extra_cols} are ignored")

    expected = task.test_ids(public_dir)
    expected_set = set(expected)
    seen: dict[str, int] = {}
    cases: dict[str, SubmissionCase] = {}
    path_owner: dict[Path, str] = {}
    unknown: list[tuple[str, str]] = []  # (where, id) of the first MAX_REASONS unknown ids
    n_unknown = 0
    for line, row in enumerate(rows, start=2):
        case_id = row[task.id_column]
        where = f"{SUBMISSION_CSV} line {line} ({task.id_column}={case_id!r})"
        empty = [c for c in task.required_columns if row[c] == ""]
        if empty:
            reasons.append(f"{where}: empty cell in required column(s) {empty}")
            continue
        if case_id in seen:
            reasons.append(f"{where}: duplicate id (first on line {seen[case_id]})")
            continue
        seen[case_id] = line
        if case_id not in expected_set:
            n_unknown += 1
            if len(unknown) < MAX_REASONS:
                unknown.append((where, case_id))
            continue
        paths: dict[str, Path] = {}
        for column in task.path_columns:
            resolved, problem = resolve_submission_path(folder, row[column])
            if resolved is None:
                reasons.append(f"{where}, column {column}: {problem}")
                continue
            if resolved in path_owner:
                reasons.append(
                    f"{where}, column {column}: file {row[column]!r} is also used by id "
                    f"{path_owner[resolved]!r}; every case needs its own file"
                )
                continue
            path_owner[resolved] = case_id
            paths[column] = resolved
        if len(paths) == len(task.path_columns):
            cases[case_id] = SubmissionCase(case_id=case_id, row=dict(row), paths=paths)
    missing_ids = [i for i in expected if i not in seen]
    hints = leading_zero_hints([i for _, i in unknown], set(missing_ids))
    for where, case_id in unknown:
        reasons.append(f"{where}: {case_id!r} is not a test id{hints.get(case_id, '')}")
    reasons.count_more(n_unknown - len(unknown))
    if missing_ids:
        shown = ", ".join(repr(i) for i in missing_ids[:10])
        more = f" and {len(missing_ids) - 10} more" if len(missing_ids) > 10 else ""
        reasons.append(
            f"{SUBMISSION_CSV}: {len(missing_ids)} test id(s) missing: {shown}{more}. "
            f"Write one row per test case."
        )
    checked = map_cases(
        functools.partial(_check_case, task, public_dir),
        [cases[i] for i in sorted(cases)],
        workers=workers,
        label="checking files",
    )
    for case_findings in checked:
        for finding in case_findings:
            (warnings if isinstance(finding, SubmissionWarning) else reasons).append(finding)
    if reasons:
        raise InvalidSubmission(reasons.as_list())
    submission = LoadedSubmission(folder=folder, cases=cases, warnings=warnings.as_list())
    across = task.check_submission(submission, public_dir)
    if across:
        raise InvalidSubmission(across)
    return submission


def _check_case(task: TaskImplementation, public_dir: Path, case: SubmissionCase) -> list[str]:
    findings = []
    for finding in task.check_case(case, public_dir):
        text = f"case {case.case_id!r}: {finding}"
        findings.append(SubmissionWarning(text) if isinstance(finding, SubmissionWarning) else text)
    return findings


def validate_submission(
    task_id: str,
    submission_dir: Path,
    *,
    data_dir: Path | None = None,
    workers: int | None = None,
) -> ValidationResult:
    """Check a submission's format with public data only (never a score)."""
    task = load_implementation(task_id)
    dirs = task_dirs(task_id, data_dir)
    require_prepared(task_id, dirs)
    try:
        loaded = load_submission(
            task, Path(submission_dir), dirs.public, workers=workers or default_workers()
        )
    except InvalidSubmission as err:
        return ValidationResult(
            task=task_id, valid=False, reasons=err.reasons, warnings=[], n_cases=0
        )
    return ValidationResult(
        task=task_id,
        valid=True,
        reasons=[],
        warnings=loaded.warnings,
        n_cases=len(loaded.cases),
    )


def grade_submission(
    task_id: str,
    submission_dir: Path,
    *,
    data_dir: Path | None = None,
    workers: int | None = None,
) -> GradeReport:
    """Validate, score against ``private/gold/`` and rank a submission.

    Raises:
        NotPrepared: the task is not prepared in the data dir.
        HarnessError: a private file differs from ``prepared.json``, gold does not load, the
            scorer fails or returns a non-finite or missing
            leaderboard value (a harness problem, not the submission's).
    """
    started = time.perf_counter()
    task = load_implementation(task_id)
    dirs = task_dirs(task_id, data_dir)
    require_prepared(task_id, dirs)
    check_private_files(task_id, dirs)
    leaderboard = load_leaderboard(task_id)
    data = prepared_data_mode(dirs)
    n_workers = workers or default_workers()
    try:
        submission = load_submission(task, Path(submission_dir), dirs.public, workers=n_workers)
    except InvalidSubmission as err:
        return GradeReport(
            task=task_id,
            valid=False,
            reasons=err.reasons,
            metrics={},
            cases=[],
            ranking=leaderboard.rank(None),
            data=data,
            rexmle_version=__version__,
            seconds=time.perf_counter() - started,
        )
    try:
        gold = load_submission(task, dirs.gold, dirs.public, workers=n_workers)
    except InvalidSubmission as err:
        msg = f"{task_id}: private/gold is not a valid submission (broken preparation?): {err}"
        raise HarnessError(msg) from err
    scores = task.score(submission, gold, dirs, workers=n_workers)
    expected_keys = [m.key for m in task.spec.metrics] + list(task.spec.extra_metrics)
    missing = [k for k in expected_keys if k not in scores.metrics]
    if missing:
        msg = f"{task_id}: the scorer returned no value for {missing}"
        raise HarnessError(msg)
    bad = {k: v for k, v in scores.metrics.items() if not math.isfinite(v)}
    if bad:
        msg = f"{task_id}: the scorer returned non-finite values {bad}"
        raise HarnessError(msg)
    ranking = leaderboard.rank({m.key: scores.metrics[m.key] for m in task.spec.metrics})
    return GradeReport(
        task=task_id,
        valid=True,
        reasons=[],
        warnings=submission.warnings,
        metrics={k: float(v) for k, v in scores.metrics.items()},
        cases=scores.cases,
        ranking=ranking,
        data=data,
        rexmle_version=__version__,
        seconds=time.perf_counter() - started,
    )


def write_report(report: GradeReport, path: Path) -> None:
    """Write a grade report as JSON (parents created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report.model_dump(mode="json"), indent=2) + "\n", encoding="utf-8")
