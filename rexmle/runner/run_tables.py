"""The tables and JSON that ``rexmle run`` prints: the summary, the records, the dry run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich import box
from rich.table import Table

from rexmle.terminal import console

if TYPE_CHECKING:
    from rexmle.records.runs import RunRecord
    from rexmle.runner.executor import RunJob
    from rexmle.runner.experiment import Experiment, RunKey
    from rexmle.runner.settings import RunSettings

out = console()
err = console(stderr=True)


def print_records_json(jobs: list[RunJob]) -> None:
    """Every run of the batch (this time's and those already done) as a JSON list of records."""
    import json
    import sys

    from rexmle.records.runs import read_record

    payload = []
    for job in jobs:
        record = read_record(job.folder)
        if record is not None:
            payload.append({"folder": str(job.folder), **record.model_dump(mode="json")})
    sys.stdout.write(json.dumps(payload, indent=2) + "\n")


def print_dry_run(
    jobs: list[RunJob],
    to_do: list[RunJob],
    *,
    gpus_per_run: int,
    settings: RunSettings | None = None,
) -> None:
    """The job table, the count, GPU-hours and the enforced cost ceiling of ``jobs``."""
    from rexmle.runner.dry_run import cost_summary
    from rexmle.runner.experiment import dry_run_summary, models_of

    pending = {job.folder for job in to_do}
    table = Table(title="runs", box=box.SIMPLE_HEAD)
    for column in ("condition", "agent", "model", "task", "seed", "hours", "run id", "state"):
        table.add_column(column, no_wrap=True)
    for job in jobs:
        config = job.config
        table.add_row(
            config.condition or "-",
            config.agent.id,
            models_of(job),
            config.task,
            str(config.seed),
            f"{config.time_limit_s / 3600:g}",
            config.run_id(),
            "to run" if job.folder in pending else "done",
        )
    out.print(table)
    summary = dry_run_summary(jobs, gpus_per_run=gpus_per_run, settings=settings)
    cost = cost_summary(jobs, settings)
    out.print(
        f"{summary.n_runs} runs ({len(to_do)} to run), {summary.gpus_per_run} GPU per run, "
        f"{summary.gpu_hours:,.1f} GPU-hours at most; {cost}",
        highlight=False,
        soft_wrap=True,
    )


def print_unresolved_dry_run(study: Experiment, keys: list[RunKey], problem: str) -> None:
    """The job table of an experiment whose agents are not all declared here (no run ids)."""
    from rexmle.runner.experiment import agent_folder, time_limit_of

    table = Table(title="runs", box=box.SIMPLE_HEAD)
    for column in ("condition", "agent", "model", "task", "seed", "hours"):
        table.add_column(column, no_wrap=True)
    hours = 0.0
    unknown = 0
    for key in keys:
        limit = time_limit_of(study, key.condition)
        if limit is None:
            unknown += 1
        else:
            hours += study.gpus_per_run * limit / 3600.0
        table.add_row(
            key.condition or "-",
            agent_folder(key.agent, key.model),
            key.model or "-",
            key.task,
            str(key.seed),
            "agent's" if limit is None else f"{limit / 3600:g}",
        )
    out.print(table)
    cost = "LLM caps and forecast: see the LLM cost section"
    extra = f" (+{unknown} run(s) at their agent's limit)" if unknown else ""
    out.print(
        f"{len(keys)} runs, {study.gpus_per_run} GPU per run, {hours:,.1f} GPU-hours at most"
        f"{extra}; {cost}",
        highlight=False,
        soft_wrap=True,
    )
    err.print(f"[yellow]run ids unknown:[/] {problem}", highlight=False, soft_wrap=True)


def print_summary(records: Sequence[RunRecord]) -> None:
    """One row per run: task, agent, seed, status and the headline grade."""
    if not records:
        return
    table = Table(title="runs")
    for column in ("task", "agent", "seed", "status", "headline", "value", "percentile"):
        table.add_column(column)
    for record in records:
        grade = record.grade
        shown = ("-", "-", "-")
        if grade is not None and grade.valid:
            shown = (
                grade.headline_key or "-",
                f"{grade.headline_value:.4g}",
                f"{grade.percentile:.3f}",
            )
        table.add_row(record.task, record.agent, str(record.seed), record.status, *shown)
    out.print(table)
