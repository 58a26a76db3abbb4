"""Regrade runs under another definition set (``rexmle report --definitions study|both``).

A run's ``grade.json`` is its official grade (the runner grades with ``official``). To compare a
run with the published table, its ``submission/`` is graded again with the study's definitions
(:mod:`rexmle.tasks.definitions`) against the private data of ``--data-dir``, in a separate
process under the grader's memory limit, exactly as the runner grades. The report is written to
``<run>/grade-study.json`` and reused while it is newer than the run's ``grade.json``.

Only scored runs with a grade are regraded; an unscored run (unfinished, harness error) keeps
its record. The data must be the run's: a run graded on the full data is not regraded against
mini data, or the other way round.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from rexmle.errors import RexmleError
from rexmle.grading.report import GradeReport, read_grade_report
from rexmle.records.results import RunResult
from rexmle.runner.limits import DEFAULT_GRADE_MEMORY_BYTES, limited_argv
from rexmle.tasks.definitions import DefinitionSet
from rexmle.tasks.folders import prepared_data_mode, read_prepared, task_dirs

REGRADE_TIMEOUT_S = 6 * 3600.0
GRADE_INVALID = 1
"""Exit code of ``rexmle grade`` for an invalid submission."""


def regraded_path(result: RunResult, definitions: DefinitionSet) -> Path:
    """Where the run's grade under ``definitions`` is kept (``grade-<set>.json``)."""
    return result.path / f"grade-{definitions}.json"


def _check_data(result: RunResult, data_dir: Path) -> None:
    dirs = task_dirs(result.task, data_dir)
    if read_prepared(dirs) is None:
        msg = (
            f"{result.task} is not prepared in {data_dir}: regrading run {result.path} needs its "
            f"private data (rexmle prepare {result.task} --data-dir {data_dir}"
            f"{' --mini' if result.data == 'mini' else ''})"
        )
        raise RexmleError(msg)
    prepared = prepared_data_mode(dirs)
    if result.data in ("mini", "full") and prepared != result.data:
        msg = (
            f"run {result.path} was graded on {result.data} data but {data_dir} holds "
            f"{prepared} data of {result.task}; give the --data-dir the run was graded with"
        )
        raise RexmleError(msg)


def regrade(result: RunResult, definitions: DefinitionSet, data_dir: Path) -> GradeReport:
    """The run's submission graded with ``definitions`` (reused when already on file).

    Raises:
        RexmleError: the task is not prepared in ``data_dir``, holds other data than the run's,
            or the grader failed (exit 2, a crash, a timeout); the message names the run.
    """
    target = regraded_path(result, definitions)
    official = result.path / "grade.json"
    fresh = target.is_file() and official.is_file()
    if fresh and target.stat().st_mtime >= official.stat().st_mtime:
        return read_grade_report(target)
    _check_data(result, data_dir)
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    argv = [sys.executable, "-m", "rexmle.cli", "grade", result.task]
    argv += [str(result.path / "submission"), "--data-dir", str(data_dir)]
    argv += ["--definitions", definitions, "--json", str(partial)]
    try:
        done = subprocess.run(
            limited_argv(argv, memory_bytes=DEFAULT_GRADE_MEMORY_BYTES),
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=REGRADE_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as err:
        msg = f"regrading run {result.path} took longer than {REGRADE_TIMEOUT_S:g} s"
        raise RexmleError(msg) from err
    expected_valid = {0: True, GRADE_INVALID: False}
    report = read_grade_report(partial) if partial.is_file() else None
    if done.returncode not in expected_valid or report is None:
        tail = (done.stderr or done.stdout)[-2000:]
        msg = f"regrading run {result.path} failed (exit {done.returncode}): {tail}"
        raise RexmleError(msg)
    partial.replace(target)
    return report


def with_grade(result: RunResult, report: GradeReport) -> RunResult:
    """``result`` with its grade fields taken from ``report`` (the run's record otherwise)."""
    valid = report.valid
    return dataclasses.replace(
        result,
        valid=valid,
        headline_value=report.headline_value if valid else None,
        percentile=report.ranking.percentile if valid else 0.0,
        medal=report.ranking.medal if valid else None,
        above_median=report.ranking.above_median if valid else False,
        metrics=dict(report.metrics) if valid else {},
        reasons=list(report.reasons),
    )


def regrade_runs(
    results: Sequence[RunResult], definitions: DefinitionSet, data_dir: Path
) -> list[RunResult]:
    """Every scored, graded run regraded with ``definitions``; other runs unchanged.

    Raises:
        RexmleError: a run could not be regraded (see :func:`regrade`).
    """
    regraded = []
    for result in results:
        if result.scored and (result.path / "grade.json").is_file():
            result = with_grade(result, regrade(result, definitions, data_dir))
        regraded.append(result)
    return regraded
