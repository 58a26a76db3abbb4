"""``rexmle demo``: the whole flow on the built-in mini suite with the baseline agent.

Prepares every implemented task from its mini fixture into ``<demo>/data``, runs the ``baseline``
agent on each (one seed, in the sandbox, under the time limit) into ``<demo>/runs``, grades each
run in a separate process, grades the task's sample submission for comparison, prints the
leaderboard table (task, headline metric, value, percentile) and writes the report files
(``rexmle.report`` when it is installed, else ``<demo>/report.md``).
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from rich.console import Console

from rexmle.agents.dummy import copy_sample_submission
from rexmle.errors import RexmleError
from rexmle.grading.report import MINI_BANNER
from rexmle.records.runs import read_record
from rexmle.runner.executors import EXECUTORS, EXIT_INTERRUPTED, Invocation, plan
from rexmle.runner.experiment import AgentEntry, ExecutorSettings, Experiment
from rexmle.runner.sandbox import SandboxKind
from rexmle.runner.settings import RunSettings
from rexmle.tasks.registry import all_tasks, get_task

DEMO_GROUP = "demo"
DEFAULT_TIME_LIMIT_S = 600.0


@dataclass(frozen=True)
class DemoRow:
    """One task's line in the demo table."""

    task: str
    headline_key: str
    higher_is_better: bool
    status: str
    """The run's status, or ``not implemented`` / ``not prepared``."""
    valid: bool
    value: float | None
    percentile: float | None
    sample_value: float | None
    """The headline value of the task's sample submission (the floor to beat)."""
    note: str = ""

    @property
    def beats_sample(self) -> bool:
        """True when the baseline's headline value is strictly better than the sample's."""
        if self.value is None or self.sample_value is None:
            return False
        if self.higher_is_better:
            return self.value > self.sample_value
        return self.value < self.sample_value


@dataclass(frozen=True)
class DemoResult:
    """The demo's rows and the report files written."""

    rows: list[DemoRow]
    report_files: list[Path]


def sample_headline(task_id: str, data_dir: Path) -> float | None:
    """Headline value of the task's sample submission (graded in-process, one worker)."""
    from rexmle.grading import grade_submission
    from rexmle.tasks.folders import task_dirs

    dirs = task_dirs(task_id, data_dir)
    with tempfile.TemporaryDirectory(prefix="rexmle-sample-") as scratch:
        copy_sample_submission(dirs.public, Path(scratch))
        report = grade_submission(task_id, Path(scratch), data_dir=data_dir, workers=1)
    return report.headline_value


def _format(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value:.4g}"


def markdown_table(rows: Sequence[DemoRow]) -> str:
    """The demo table as Markdown."""
    lines = [
        "| task | headline metric | value | percentile | sample submission | status |",
        "|---|---|---:|---:|---:|---|",
    ]
    for row in rows:
        arrow = "↑" if row.higher_is_better else "↓"
        status = row.status if not row.note else f"{row.status}: {row.note.splitlines()[0]}"
        lines.append(
            f"| {row.task} | {row.headline_key} {arrow} | {_format(row.value)} | "
            f"{_format(row.percentile)} | {_format(row.sample_value)} | {status} |"
        )
    return "\n".join(lines) + "\n"


def write_report_files(demo_dir: Path, rows: Sequence[DemoRow], console: Console) -> list[Path]:
    """``rexmle.report`` files when available; always ``demo.json``; else ``report.md``."""
    written = [demo_dir / "demo.json"]
    (demo_dir / "demo.json").write_text(
        json.dumps([{**asdict(r), "beats_sample": r.beats_sample} for r in rows], indent=2) + "\n",
        encoding="utf-8",
    )
    from rexmle.report import collect_runs, write_report

    markdown, html = demo_dir / "report.md", demo_dir / "report.html"
    try:
        write_report(collect_runs(demo_dir / "runs"), markdown=markdown, html_path=html)
        return [*written, markdown, html]
    except (RexmleError, OSError, ValueError, TypeError) as error:
        console.print(f"[yellow]warning:[/] rexmle.report failed ({error}); writing report.md")
    (demo_dir / "report.md").write_text(
        "# ReX-MLE demo: baseline agent on the mini suite\n\n"
        + f"> **{MINI_BANNER.format(n=len(rows))}**\n\n"
        + markdown_table(rows),
        encoding="utf-8",
    )
    return [*written, demo_dir / "report.md"]


def run_demo(
    demo_dir: Path,
    *,
    tasks: Sequence[str] | None = None,
    concurrency: int = 2,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    sandbox: SandboxKind = "auto",
    console: Console | None = None,
) -> DemoResult:
    """Prepare, run ``baseline``, grade and report (see the module docstring).

    Runs already completed in ``demo_dir`` are reused (failed ones are retried). The study is
    an :class:`Experiment` run by the local executor, as ``rexmle run`` would.
    """
    console = console or Console(stderr=True)
    demo_dir = Path(demo_dir).resolve()
    data_dir, runs_dir = demo_dir / "data", demo_dir / "runs"
    task_ids = list(tasks) if tasks else list(all_tasks())
    study = Experiment(
        name=DEMO_GROUP,
        agents=[AgentEntry(agent="baseline")],
        tasks=task_ids,
        seeds=[0],
        time_limit_s=time_limit_s,
        gpus_per_run=0,
        mini=True,
        sandbox=sandbox,
        executor=ExecutorSettings(kind="local", concurrency=concurrency),
    )
    settings = RunSettings(data_dir=data_dir, runs_dir=runs_dir, sandbox=sandbox, grade_workers=1)
    with console.status(f"preparing {len(task_ids)} mini tasks in {data_dir}…"):
        batch = plan(study, settings, retry_failed=True, recorded_name=None)
    code = EXECUTORS[study.executor.kind](batch, settings, Invocation(summary=False), console)
    if code == EXIT_INTERRUPTED:
        raise KeyboardInterrupt
    left_out, problems = batch.not_implemented, batch.not_prepared
    rows: list[DemoRow] = []
    for job in batch.all_jobs:
        spec = get_task(job.config.task)
        record = read_record(job.folder)
        grade = record.grade if record is not None else None
        valid = bool(grade and grade.valid)
        try:
            sample = sample_headline(job.config.task, data_dir)
        except RexmleError as error:
            sample, note = None, f"sample submission could not be graded: {error}"
        else:
            note = "" if record is None or record.status == "completed" else (record.error or "")
        rows.append(
            DemoRow(
                task=job.config.task,
                headline_key=spec.headline.key,
                higher_is_better=spec.headline.higher_is_better,
                status=record.status if record is not None else "not run",
                valid=valid,
                value=grade.headline_value if grade is not None and valid else None,
                percentile=grade.percentile if grade is not None and valid else None,
                sample_value=sample,
                note=note,
            )
        )
    for task_id, why in {**left_out, **problems}.items():
        spec = get_task(task_id)
        rows.append(
            DemoRow(
                task=task_id,
                headline_key=spec.headline.key,
                higher_is_better=spec.headline.higher_is_better,
                status="not implemented" if task_id in left_out else "not prepared",
                valid=False,
                value=None,
                percentile=None,
                sample_value=None,
                note=why,
            )
        )
    order = {t: i for i, t in enumerate(task_ids)}
    rows.sort(key=lambda r: order.get(r.task, len(order)))
    files = write_report_files(demo_dir, rows, console)
    return DemoResult(rows=rows, report_files=files)
