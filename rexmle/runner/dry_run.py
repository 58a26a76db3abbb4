"""The study sections of ``rexmle run --dry-run``: LLM cost (enforced caps and a forecast) and
the deviations from the published study (:mod:`rexmle.runner.deviations`).

Runs are grouped by (condition, agent, model). For each group the dry run prints the runs, the
USD cap per run the gateway will enforce (or ``none``: no cap, still metered), the call-rate
caps, and the forecast per run and in total (:mod:`rexmle.runner.llm_cost`, an estimate). The
deviations section lists every item that applies to at least one run, with the number of runs
it applies to and the value of the first such run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rich import box
from rich.table import Table

from rexmle.terminal import console

if TYPE_CHECKING:
    from rexmle.llm.config import Limits, LlmConfig
    from rexmle.records.runs import DeviationRecord
    from rexmle.runner.executor import RunJob
    from rexmle.runner.experiment import Experiment
    from rexmle.runner.settings import RunSettings

out = console()


@dataclass
class CostGroup:
    """The LLM runs of one (condition, agent, model)."""

    condition: str
    agent: str
    model: str
    runs: int = 0
    caps: set[float | None] = field(default_factory=set)
    per_minute: set[int | None] = field(default_factory=set)
    in_flight: set[int | None] = field(default_factory=set)
    forecast_usd: float | None = 0.0
    """Sum of the runs' forecasts (None when one has none)."""


def llm_settings(settings: RunSettings | None) -> tuple[LlmConfig, Limits]:
    """The LLM config the runs get and its limits with the batch's flags applied.

    Raises:
        SpecError: the LLM config file is invalid.
    """
    from rexmle.llm.config import load_llm_config
    from rexmle.runner.llm_cost import batch_limits

    llm = load_llm_config(None if settings is None else settings.llm_config)
    if settings is None:
        return llm, llm.limits
    return llm, batch_limits(llm, settings.llm_budget_usd, settings.llm_max_calls_per_minute)


def cost_ceiling(jobs: Sequence[RunJob], batch: Limits) -> tuple[float | None, int]:
    """(sum of the enforced USD caps of the LLM runs, number of LLM runs without a cap); the
    sum is None when any LLM run has no cap.
    """
    from rexmle.runner.experiment import uses_llm
    from rexmle.runner.llm_cost import enforced_limits

    caps = [enforced_limits(j.config, batch).budget_usd for j in jobs if uses_llm(j)]
    uncapped = sum(1 for cap in caps if cap is None)
    return (None if uncapped else sum(c or 0.0 for c in caps)), uncapped


def cost_groups(jobs: Sequence[RunJob], llm: LlmConfig, batch: Limits) -> list[CostGroup]:
    """The LLM runs grouped by (condition, agent, model), in job order."""
    from rexmle.runner.experiment import models_of, uses_llm
    from rexmle.runner.llm_cost import enforced_limits, forecast_usd

    groups: dict[tuple[str, str, str], CostGroup] = {}
    for job in jobs:
        if not uses_llm(job):
            continue
        key = (job.config.condition or "-", job.config.agent.id, models_of(job))
        group = groups.setdefault(key, CostGroup(*key))
        limits = enforced_limits(job.config, batch)
        group.runs += 1
        group.caps.add(limits.budget_usd)
        group.per_minute.add(limits.max_calls_per_minute)
        group.in_flight.add(limits.max_calls_in_flight)
        forecast = forecast_usd(job.config, llm)
        if forecast is not None and limits.budget_usd is not None:
            forecast = min(forecast, limits.budget_usd)  # the gateway stops the run there
        if group.forecast_usd is not None:
            group.forecast_usd = None if forecast is None else group.forecast_usd + forecast
    return list(groups.values())


def _values(values: set[float | None] | set[int | None], unit: str = "") -> str:
    shown = sorted(
        ("none" if v is None else f"{unit}{v:,.2f}" if unit else f"{v:g}" for v in values),
    )
    return ", ".join(shown)


def cost_summary(jobs: Sequence[RunJob], settings: RunSettings | None) -> str:
    """The cost part of the dry run's summary line: the enforced ceiling, or why there is none."""
    from rexmle.runner.experiment import uses_llm

    if not any(uses_llm(job) for job in jobs):
        return "no LLM runs"
    _, batch = llm_settings(settings)
    ceiling, uncapped = cost_ceiling(jobs, batch)
    if ceiling is None:
        return f"cost ceiling: none ({uncapped} LLM run(s) have no USD cap; every call is metered)"
    return f"cost ceiling ${ceiling:,.2f} (sum of the USD caps the gateway enforces per run)"


def print_cost(jobs: Sequence[RunJob], settings: RunSettings | None) -> None:
    """The LLM cost table: per group the enforced caps and the forecast (see the module)."""
    from rexmle.runner.llm_cost import forecast_method

    llm, batch = llm_settings(settings)
    groups = cost_groups(jobs, llm, batch)
    if not groups:
        return
    table = Table(
        title="LLM cost per run: caps the gateway enforces, forecast", box=box.SIMPLE_HEAD
    )
    for column in (
        "condition",
        "agent",
        "model",
        "runs",
        "USD cap",
        "calls/min",
        "in flight",
        "forecast/run",
        "forecast",
    ):
        table.add_column(column, no_wrap=True)
    total: float | None = 0.0
    for group in groups:
        per_run = None if group.forecast_usd is None else group.forecast_usd / group.runs
        table.add_row(
            group.condition,
            group.agent,
            group.model,
            str(group.runs),
            _values(group.caps, "$"),
            _values(group.per_minute),
            _values(group.in_flight),
            "-" if per_run is None else f"${per_run:,.2f}",
            "-" if group.forecast_usd is None else f"${group.forecast_usd:,.2f}",
        )
        total = None if total is None or group.forecast_usd is None else total + group.forecast_usd
    out.print(table, width=max(out.width, 120))
    ceiling, uncapped = cost_ceiling(jobs, batch)
    shown = "none" if ceiling is None else f"${ceiling:,.2f}"
    out.print(
        f"true ceiling: {shown}"
        + (f" ({uncapped} run(s) without a USD cap, metered)" if uncapped else "")
        + ("" if total is None else f"; forecast ${total:,.2f} in total (an estimate)"),
        highlight=False,
        soft_wrap=True,
    )
    out.print(forecast_method(), highlight=False, soft_wrap=True)


def run_deviations(
    jobs: Sequence[RunJob], settings: RunSettings | None
) -> list[tuple[DeviationRecord, int]]:
    """Every deviation that applies to a run of ``jobs``, in table order, with the number of
    runs it applies to (its text from the first such run).
    """
    from rexmle.runner.deviations import DEVIATIONS, deviations_of
    from rexmle.runner.experiment import uses_llm
    from rexmle.runner.llm_cost import enforced_limits

    llm, batch = llm_settings(settings)
    problem = None
    if any(job.config.prompts == "study" for job in jobs):
        from rexmle.agents.study_texts import study_texts_problem

        problem = study_texts_problem()
    found: dict[str, tuple[DeviationRecord, int]] = {}
    for job in jobs:
        limits = enforced_limits(job.config, batch) if uses_llm(job) else None
        sandbox = None if settings is None else settings.sandbox
        records = deviations_of(
            job.config, limits, texts_problem=problem, sandbox=sandbox, llm_config=llm
        )
        for record in records:
            first, count = found.get(record.id, (record, 0))
            found[record.id] = (first, count + 1)
    order = [d.id for d in DEVIATIONS]
    return [found[i] for i in order if i in found]


def print_deviations(jobs: Sequence[RunJob], settings: RunSettings | None) -> None:
    """The "deviations from the study" section (each: what the study did, what we do, why)."""
    items = run_deviations(jobs, settings)
    if not items:
        out.print("deviations from the study: none apply (no run of the study's agents)")
        return
    out.print(f"deviations from the study ({len(items)} items):", highlight=False)
    for record, count in items:
        out.print(
            f"  [{record.id}] {record.item} ({count} of {len(jobs)} runs)\n"
            f"    study: {record.study}\n"
            f"    ours:  {record.ours}\n"
            f"    why:   {record.why}",
            highlight=False,
            soft_wrap=True,
            markup=False,
        )


def writeup_problems(jobs: Sequence[RunJob]) -> dict[str, str]:
    """Task -> why its solution-informed runs cannot get a write-up (none: they all can)."""
    from rexmle.errors import RexmleError
    from rexmle.runner.solution_writeups import render_writeup, writeup_source

    tasks = sorted({job.config.task for job in jobs if job.config.solution_informed})
    if not tasks:
        return {}
    try:
        source = writeup_source()
    except RexmleError as error:
        return dict.fromkeys(tasks, str(error))
    problems: dict[str, str] = {}
    for task in tasks:
        try:
            render_writeup(task, source(task))
        except (RexmleError, KeyError, ValueError, OSError) as error:
            problems[task] = f"{type(error).__name__}: {error}"
    return problems


def print_writeup_problems(jobs: Sequence[RunJob]) -> None:
    """Say which solution-informed runs would end ``infra_error`` for want of a write-up."""
    problems = writeup_problems(jobs)
    if not problems:
        return
    runs = sum(1 for job in jobs if job.config.solution_informed and job.config.task in problems)
    reasons = sorted(set(problems.values()))
    out.print(
        f"WARNING: {runs} solution-informed run(s) of {len(problems)} task(s) have no write-up "
        f"and would end infra_error: {'; '.join(reasons)}",
        highlight=False,
        soft_wrap=True,
        markup=False,
    )


def print_study_sections(jobs: Sequence[RunJob], settings: RunSettings | None) -> None:
    """Cost, then deviations (what ``rexmle run --dry-run`` prints after its run table), then
    solution-informed runs that would lack their write-up.
    """
    print_cost(jobs, settings)
    print_deviations(jobs, settings)
    print_writeup_problems(jobs)


def print_study_sections_of(
    experiment: Experiment, settings: RunSettings, recorded_name: str | None
) -> None:
    """:func:`print_study_sections` for every run of ``experiment`` (done ones included); when
    its runs cannot be built (an unknown agent or task), says why instead.
    """
    from rexmle.errors import RexmleError
    from rexmle.runner.experiment import experiment_jobs

    try:
        jobs = experiment_jobs(experiment, settings.runs_dir, recorded_name=recorded_name)
    except RexmleError as error:
        out.print(f"LLM cost and deviations unknown: {error}", highlight=False, soft_wrap=True)
        return
    print_study_sections(jobs, settings)
