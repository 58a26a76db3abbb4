"""The grading pipeline: validate a submission, score it against ``private/gold/``, rank it.

One pipeline for every task, calling the family's plain functions where the YAML names them:

1. generic rules: ``submission.csv`` parses, has the declared columns, one row per test id, every
   path cell resolves to its own regular file inside the submission folder;
2. declared rules: each path column's :class:`~rexmle.tasks.spec.FileRule`;
3. family checks: ``check_case`` per case (in parallel), then ``check_submission``;
4. scoring: ``score_case`` per case in parallel (or ``score_dataset`` once), giving typed rows;
5. aggregation as declared per metric: ``mean`` and ``median`` here, ``dataset`` by the family's
   ``aggregate`` function;
6. ranking against the task's leaderboard (:mod:`rexmle.ranking`, a pure function);
7. the grade report.

Steps 4-6 follow a named definition set (:mod:`rexmle.tasks.definitions`): ``official`` (the
default) or ``study``, which takes the family's ``functions.study`` scorers where it declares them,
rounds every metric to 5 decimals and ranks with the study's rounded mean positions.

Validation (steps 1-3) reads public data only and never computes a score. A failure that is not
the submission's fault raises :class:`~rexmle.errors.HarnessError` (exit code 2).
"""

from __future__ import annotations

import functools
import json
import math
import time
from pathlib import Path

from rexmle import __version__
from rexmle.errors import MAX_REASONS, HarnessError, InvalidSubmission
from rexmle.grading.integrity import check_private_files
from rexmle.grading.report import GradeReport, ValidationResult
from rexmle.ranking import Leaderboard, Ranking, Rounding
from rexmle.tasks.checks import SubmissionWarning, check_declared_file
from rexmle.tasks.csvfile import leading_zero_hints, read_csv_rows, read_id_column
from rexmle.tasks.definitions import (
    DEFAULT_DEFINITIONS,
    STUDY_METRIC_DECIMALS,
    STUDY_THRESHOLD_DECIMALS,
    DefinitionSet,
)
from rexmle.tasks.folders import TaskDirs, prepared_data_mode, require_prepared, task_dirs
from rexmle.tasks.jobs import CheckContext, ScoreCase, ScoreJob
from rexmle.tasks.leaderboard import load_leaderboard
from rexmle.tasks.parallel import default_workers, map_cases, workers_worth_it
from rexmle.tasks.paths import resolve_submission_path
from rexmle.tasks.reasons import BoundedReasons
from rexmle.tasks.registry import Task, load_task
from rexmle.tasks.rows import CaseRow, mean_of, median_of
from rexmle.tasks.submission import LoadedSubmission, SubmissionCase

SUBMISSION_CSV = "submission.csv"


def expected_ids(task: Task, context: CheckContext) -> list[str]:
    """The ids a submission must hold: the family's ``test_ids``, else the sample submission's."""
    test_ids = task.function("test_ids")
    if test_ids is not None:
        return list(test_ids(context))
    columns = task.columns
    return read_id_column(context.public / "sample_submission.csv", columns.id_column)


def load_submission(
    task: Task,
    folder: Path,
    public_dir: Path,
    *,
    workers: int,
    expected: list[str] | None = None,
    file_checks: bool = True,
) -> LoadedSubmission:
    """Apply every validity rule (generic, declared, then the family's own checks).

    ``expected`` replaces the test ids (:func:`expected_ids`). ``file_checks=False`` skips the
    per-case file rules (declared and the family's ``check_case``) and keeps the CSV, id, path
    and across-case rules: for the gold, whose files the integrity check has just matched byte
    for byte against what ``prepare`` wrote, and for folders of other cases than the test set
    (``rexmle.grading.pair_score``), whose files are not the public test inputs.

    Raises:
        InvalidSubmission: with every reason found (not only the first).
    """
    columns = task.columns
    context = CheckContext(task=task.spec, public=public_dir)
    folder = Path(folder)
    if not folder.is_dir():
        msg = f"submission folder {folder} does not exist or is not a folder"
        raise InvalidSubmission([msg])
    csv_path = folder / SUBMISSION_CSV
    if csv_path.is_symlink():
        resolved, problem = resolve_submission_path(folder, SUBMISSION_CSV)
        if resolved is None:
            raise InvalidSubmission([f"{SUBMISSION_CSV}: {problem}"])
    found_columns, rows = read_csv_rows(csv_path)
    required = columns.required_columns
    reasons = BoundedReasons()
    warnings = BoundedReasons()
    missing_cols = [c for c in required if c not in found_columns]
    if missing_cols:
        msg = (
            f"{SUBMISSION_CSV}: missing required column(s) {missing_cols}; "
            f"expected columns {list(required)}, found {found_columns}"
        )
        raise InvalidSubmission([msg])
    extra_cols = [c for c in found_columns if c not in required]
    if extra_cols:
        warnings.append(f"{SUBMISSION_CSV}: extra column(s) {extra_cols} are ignored")

    if expected is None:
        expected = expected_ids(task, context)
    expected_set = set(expected)
    seen: dict[str, int] = {}
    cases: dict[str, SubmissionCase] = {}
    path_owner: dict[Path, str] = {}
    unknown: list[tuple[str, str]] = []  # (where, id) of the first MAX_REASONS unknown ids
    n_unknown = 0
    for line, row in enumerate(rows, start=2):
        case_id = row[columns.id_column]
        where = f"{SUBMISSION_CSV} line {line} ({columns.id_column}={case_id!r})"
        empty = [c for c in required if row[c] == ""]
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
        for column in columns.path_columns:
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
        if len(paths) == len(columns.path_columns):
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
    to_check = [cases[i] for i in sorted(cases)] if file_checks else []
    checked = map_cases(
        functools.partial(_check_case, task, context),
        to_check,
        workers=workers_worth_it(workers, (p for c in to_check for p in c.paths.values())),
        label="checking files",
    )
    for case_findings in checked:
        for finding in case_findings:
            (warnings if isinstance(finding, SubmissionWarning) else reasons).append(finding)
    if reasons:
        raise InvalidSubmission(reasons.as_list())
    submission = LoadedSubmission(folder=folder, cases=cases, warnings=warnings.as_list())
    check_submission = task.function("check_submission") if file_checks else None
    across = check_submission(submission, context) if check_submission is not None else []
    if across:
        raise InvalidSubmission(list(across))
    return submission


def _check_case(task: Task, context: CheckContext, case: SubmissionCase) -> list[str]:
    """Declared file rules of every path column, then (when they found no error) the family's."""
    found: list[str] = []
    columns = task.columns
    for column in columns.columns:
        if column.file is not None:
            found += check_declared_file(
                case.paths[column.name], column.file, context.public, case.case_id
            )
    if not any(not isinstance(f, SubmissionWarning) for f in found):
        check_case = task.function("check_case")
        if check_case is not None:
            found += check_case(case, context)
    findings = []
    for finding in found:
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
    task = load_task(task_id)
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


def score_rows(
    task: Task, job: ScoreJob, definitions: DefinitionSet = DEFAULT_DEFINITIONS
) -> list[CaseRow]:
    """Per-case rows: ``score_case`` over the cases in parallel (id order), or ``score_dataset``.

    Raises:
        HarnessError: the scorer returned something other than one row per case.
    """
    score_case = task.function("score_case", definitions)
    if score_case is not None:
        items = [
            ScoreCase(
                case_id=case_id,
                submitted=job.submission.cases[case_id],
                gold=job.gold.cases[case_id],
                public=job.public,
                private=job.private,
                params=dict(job.task.params),
            )
            for case_id in job.submission.ids()
        ]
        files = (p for item in items for c in (item.submitted, item.gold) for p in c.paths.values())
        rows = map_cases(score_case, items, workers=workers_worth_it(job.workers, files))
    else:
        score_dataset = task.function("score_dataset", definitions)
        if score_dataset is None:
            msg = f"{task.id}: no scorer is declared for the {definitions} definitions"
            raise HarnessError(msg)
        rows = score_dataset(job)
    if not all(isinstance(row, CaseRow) for row in rows):
        msg = f"{task.id}: the scorer must return CaseRow objects"
        raise HarnessError(msg)
    return list(rows)


def aggregate_metrics(
    task: Task, rows: list[CaseRow], definitions: DefinitionSet = DEFAULT_DEFINITIONS
) -> dict[str, float]:
    """Every declared metric over the test set, as its ``aggregate`` says.

    Raises:
        HarnessError: a ``dataset`` metric is declared but no ``aggregate`` function, or a
            declared key is missing or not finite.
    """
    values: dict[str, float] = {}
    dataset_keys = [m.key for m in task.spec.metrics if m.aggregate == "dataset"]
    if dataset_keys:
        aggregate = task.function("aggregate", definitions)
        if aggregate is None:
            msg = f"{task.id}: metrics {dataset_keys} are 'dataset' but no aggregate is declared"
            raise HarnessError(msg)
        computed = aggregate(rows, task.spec)
        undeclared = sorted(set(computed) - set(dataset_keys))
        if undeclared:
            msg = (
                f"{task.id}: aggregate returned {undeclared}, which the YAML does not declare "
                f"as 'dataset' metrics"
            )
            raise HarnessError(msg)
        values.update({k: float(v) for k, v in computed.items()})
    for metric in task.spec.metrics:
        if metric.aggregate == "dataset":
            continue
        summary = mean_of if metric.aggregate == "mean" else median_of
        try:
            values[metric.key] = summary(rows, metric.case_key)
        except (KeyError, TypeError) as err:
            msg = (
                f"{task.id}: metric {metric.key} is the {metric.aggregate} of the cases' "
                f"{metric.case_key!r}, but a case row has no number there ({err})"
            )
            raise HarnessError(msg) from err
    ordered = {m.key: values[m.key] for m in task.spec.metrics if m.key in values}
    missing = [m.key for m in task.spec.metrics if m.key not in ordered]
    if missing:
        msg = f"{task.id}: the scorer returned no value for {missing}"
        raise HarnessError(msg)
    bad = {k: v for k, v in ordered.items() if not math.isfinite(v)}
    if bad:
        msg = f"{task.id}: the scorer returned non-finite values {bad}"
        raise HarnessError(msg)
    return ordered


def grade_submission(
    task_id: str,
    submission_dir: Path,
    *,
    data_dir: Path | None = None,
    workers: int | None = None,
    definitions: DefinitionSet = DEFAULT_DEFINITIONS,
) -> GradeReport:
    """Validate, score against ``private/gold/`` and rank a submission with ``definitions``.

    Raises:
        NotPrepared: the task is not prepared in the data dir.
        HarnessError: a private file differs from ``prepared.json``, gold does not load, the
            scorer fails or returns a non-finite or missing value (a harness problem, not the
            submission's).
    """
    started = time.perf_counter()
    task = load_task(task_id)
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
            ranking=leaderboard.rank(None, rounding=ranking_rounding(definitions)),
            data=data,
            definitions=definitions,
            rexmle_version=__version__,
            seconds=time.perf_counter() - started,
        )
    gold = load_gold(task, dirs, workers=n_workers)
    job = ScoreJob(
        submission=submission,
        gold=gold,
        task=task.spec,
        public=dirs.public,
        private=dirs.private,
        workers=n_workers,
    )
    rows = score_rows(task, job, definitions)
    metrics = aggregate_metrics(task, rows, definitions)
    # the study ranks the unrounded values, then reports them rounded
    ranking = rank_metrics(leaderboard, task, metrics, ranking_rounding(definitions))
    if definitions == "study":
        metrics = {k: round(v, STUDY_METRIC_DECIMALS) for k, v in metrics.items()}
    return GradeReport(
        task=task_id,
        valid=True,
        reasons=[],
        warnings=submission.warnings,
        metrics=metrics,
        cases=[row.as_json() for row in rows],
        ranking=ranking,
        data=data,
        definitions=definitions,
        rexmle_version=__version__,
        seconds=time.perf_counter() - started,
    )


def load_gold(task: Task, dirs: TaskDirs, *, workers: int) -> LoadedSubmission:
    """``private/gold/`` loaded with the submission rules, less the per-case file rules: grading
    calls it only after :func:`check_private_files` matched every gold file against its hash.

    Raises:
        HarnessError: gold is not a valid submission (a broken preparation).
    """
    try:
        return load_submission(task, dirs.gold, dirs.public, workers=workers, file_checks=False)
    except InvalidSubmission as err:
        msg = f"{task.id}: private/gold is not a valid submission (broken preparation?): {err}"
        raise HarnessError(msg) from err


def ranking_rounding(definitions: DefinitionSet) -> Rounding | None:
    """How a definition set rounds the ranking: the study's decimals, or not at all."""
    if definitions == "study":
        return Rounding(
            result_decimals=STUDY_METRIC_DECIMALS, threshold_decimals=STUDY_THRESHOLD_DECIMALS
        )
    return None


def rank_metrics(
    leaderboard: Leaderboard,
    task: Task,
    metrics: dict[str, float],
    rounding: Rounding | None = None,
) -> Ranking:
    """The ranking of the ranked metrics' values on the leaderboard."""
    ranked = {m.key: metrics[m.key] for m in task.spec.ranked_metrics}
    return leaderboard.rank(ranked, rounding=rounding)


def write_report(report: GradeReport, path: Path) -> None:
    """Write a grade report as JSON (parents created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report.model_dump(mode="json"), indent=2) + "\n", encoding="utf-8")
