"""The ``rexmle run`` and ``rexmle demo`` commands (added to the CLI by :func:`register`)."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.table import Table

from rexmle.errors import RexmleError
from rexmle.runner.limits import DEFAULT_GRADE_MEMORY_BYTES, DEFAULT_VALIDATION_MEMORY_BYTES
from rexmle.terminal import console

if TYPE_CHECKING:
    from rexmle.runner.executor import RunJob
    from rexmle.runner.records import RunRecord

out = console()
err = console(stderr=True)

EXIT_INTERRUPTED = 130


def _fail(error: Exception, code: int = 2) -> typer.Exit:
    err.print(f"[bold red]error:[/] {error}", highlight=False)
    return typer.Exit(code)


@contextlib.contextmanager
def _interrupt_on_sigterm() -> Iterator[None]:
    """SIGTERM behaves like Ctrl-C inside the block, so running agents are stopped on the way out.

    The previous handler comes back afterwards. Off the main thread (where handlers cannot be
    set) nothing changes.
    """

    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _parse_gpus(gpus: str | None) -> list[str]:
    if not gpus:
        return []
    slots = [g.strip() for g in gpus.split(",") if g.strip()]
    if len(set(slots)) != len(slots):
        msg = f"--gpus lists a GPU twice: {gpus!r}"
        raise ValueError(msg)
    return slots


def run(
    agent: Annotated[
        str, typer.Option("--agent", help="Agent id (dummy, baseline, command) or YAML.")
    ],
    task: Annotated[list[str] | None, typer.Option("--task", help="Task id (repeatable).")] = None,
    suite: Annotated[
        str | None, typer.Option("--suite", help="mini (20 mini tasks) or all.")
    ] = None,
    seeds: Annotated[int, typer.Option("--seeds", min=1, help="Seeds 0..N-1 per task.")] = 1,
    time_limit: Annotated[
        float | None, typer.Option("--time-limit", min=1, help="Seconds per run (agent default).")
    ] = None,
    executor: Annotated[str, typer.Option("--executor", help="Only 'local' here.")] = "local",
    runs_dir: Annotated[Path | None, typer.Option("--runs-dir", help="Default ./runs.")] = None,
    data_dir: Annotated[Path | None, typer.Option("--data-dir", help="Data dir.")] = None,
    mini: Annotated[
        bool, typer.Option("--mini", help="Run on the mini data (prepared here).")
    ] = False,
    concurrency: Annotated[
        int | None,
        typer.Option("--concurrency", min=1, help="Runs at once (default: 1, or one per GPU)."),
    ] = None,
    gpus: Annotated[
        str | None, typer.Option("--gpus", help="GPU ids, e.g. 0,1: one per run at a time.")
    ] = None,
    retry_failed: Annotated[
        bool, typer.Option("--retry-failed", help="Rerun agent_error and infra_error runs.")
    ] = False,
    group: Annotated[str, typer.Option("--group", help="Runs sub-folder.")] = "default",
    agent_cmd: Annotated[
        str | None, typer.Option("--agent-cmd", help="Shell command of a 'command' agent.")
    ] = None,
    agent_name: Annotated[
        str | None, typer.Option("--agent-name", help="Folder name of the agent's runs.")
    ] = None,
    agent_env: Annotated[
        list[str] | None, typer.Option("--agent-env", help="Host variable to pass (repeatable).")
    ] = None,
    network: Annotated[
        bool | None, typer.Option("--network/--no-network", help="Override the agent's network.")
    ] = None,
    memory_limit_mb: Annotated[
        int | None, typer.Option("--memory-limit-mb", min=1, help="RLIMIT_AS of the agent.")
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="LLM agents: the model of every role.")
    ] = None,
    steps: Annotated[
        int | None, typer.Option("--steps", min=1, help="LLM agents: search steps or loops.")
    ] = None,
    step_timeout: Annotated[
        float | None, typer.Option("--step-timeout", min=1, help="LLM agents: s per script.")
    ] = None,
    grade_memory_mb: Annotated[
        int,
        typer.Option(
            "--grade-memory-mb", min=0, help="RLIMIT_AS of each grader process (0: none)."
        ),
    ] = DEFAULT_GRADE_MEMORY_BYTES >> 20,
    validation_memory_mb: Annotated[
        int,
        typer.Option(
            "--validation-memory-mb", min=0, help="RLIMIT_AS of each validation check (0: none)."
        ),
    ] = DEFAULT_VALIDATION_MEMORY_BYTES >> 20,
    sandbox: Annotated[str, typer.Option("--sandbox", help="auto, bwrap or local.")] = "auto",
    kill_grace: Annotated[
        float, typer.Option("--kill-grace", min=0, help="Seconds from SIGTERM to SIGKILL.")
    ] = 5.0,
    keep_data: Annotated[
        bool, typer.Option("--keep-data", help="Keep each workspace's data/ after the run.")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print every run's record (run.json) as JSON.")
    ] = False,
    llm_config: Annotated[
        Path | None,
        typer.Option("--llm-config", help="LLM gateway config (YAML); every run gets the gateway."),
    ] = None,
    llm: Annotated[
        bool, typer.Option("--llm", help="Every run gets the gateway, built-in LLM config.")
    ] = False,
    llm_budget_usd: Annotated[
        float | None, typer.Option("--llm-budget-usd", min=0.0, help="USD per run (LLM calls).")
    ] = None,
    llm_max_calls_per_minute: Annotated[
        int | None, typer.Option("--llm-max-calls-per-minute", min=1, help="LLM calls per run.")
    ] = None,
) -> None:
    """Run an agent on tasks (resumable): workspaces, sandbox, validation server, grading."""
    from rexmle.agents.llm_launch import require_startable
    from rexmle.agents.registry import load_agent
    from rexmle.config import resolve_data_dir, resolve_runs_dir
    from rexmle.grading.parallel import default_workers
    from rexmle.llm.run_setup import plan_gateway, running_gateway
    from rexmle.runner.batch import ensure_prepared, implemented_tasks, plan_runs, select_tasks
    from rexmle.runner.executor import RunOptions, run_jobs
    from rexmle.runner.sandbox import choose_sandbox

    if executor != "local":
        msg = f"executor {executor!r} is not available; use --executor local"
        raise _fail(ValueError(msg))
    if sandbox not in ("auto", "bwrap", "local"):
        msg = f"unknown sandbox {sandbox!r}; use auto, bwrap or local"
        raise _fail(ValueError(msg))
    try:
        gpu_slots = _parse_gpus(gpus)
        spec = load_agent(agent).with_overrides(
            command=agent_cmd,
            name=agent_name,
            time_limit_s=time_limit,
            network=network,
            memory_limit_mb=memory_limit_mb,
            env=agent_env,
            model=model,
            steps=steps,
            step_timeout_s=step_timeout,
        )
        task_ids, suite_is_mini = select_tasks(task or [], suite)
        use_mini = mini or suite_is_mini
        data = resolve_data_dir(data_dir)
        runs = resolve_runs_dir(runs_dir)
        require_startable(spec, hidden=(data, runs))
        runnable, left_out = implemented_tasks(task_ids, spec)
        for task_id, why in left_out.items():
            err.print(f"[yellow]{task_id}:[/] skipped, {why}", highlight=False)
        with err.status("checking prepared data…"):
            problems = ensure_prepared(runnable, data, mini=use_mini)
        for task_id, why in problems.items():
            err.print(f"[red]{task_id}:[/] skipped, {why}", highlight=False)
        plan = plan_runs(
            spec,
            [t for t in runnable if t not in problems],
            seeds=seeds,
            time_limit_s=spec.time_limit_s,
            mini=use_mini,
            runs_dir=runs,
            group=group,
            retry_failed=retry_failed,
        )
        chosen = choose_sandbox(sandbox)  # type: ignore[arg-type]
        llm_wanted = llm or llm_config is not None
        gateway = plan_gateway(
            spec,
            llm_config,
            every_run=llm_wanted,
            budget_usd=llm_budget_usd,
            max_calls_per_minute=llm_max_calls_per_minute,
            log_path=runs / group / "llm_gateway.log",
        )
    except (RexmleError, ValueError, RuntimeError) as error:
        raise _fail(error) from error
    info = chosen.info(network=spec.network)
    for warning in info.warnings:
        err.print(f"[bold red]WARNING:[/] {warning}", highlight=False)
    err.print(
        f"{len(plan.jobs)} run(s) to do, {len(plan.done)} already done; sandbox {info.kind} "
        f"({'isolated' if info.isolated else 'NOT isolated'}); runs in {runs / group}",
        highlight=False,
        soft_wrap=True,
    )
    if concurrency is None:
        concurrency = max(1, len(gpu_slots))
    options = RunOptions(
        runs_dir=runs,
        data_dir=data,
        sandbox=chosen,
        kill_grace_s=kill_grace,
        grade_workers=max(1, default_workers() // concurrency),
        keep_data=keep_data,
        llm_for_every_run=llm_wanted,
        grade_memory_bytes=(grade_memory_mb << 20) or None,
        validation_memory_bytes=(validation_memory_mb << 20) or None,
    )
    try:
        with _interrupt_on_sigterm(), running_gateway(gateway, plan.jobs, err) as started:
            options.gateway = started
            records = run_jobs(
                plan.jobs, options, concurrency=concurrency, gpus=gpu_slots, console=err
            )
    except RexmleError as error:
        raise _fail(error) from error
    except KeyboardInterrupt:
        err.print("[bold red]interrupted:[/] unfinished runs will run again next time")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    if as_json:
        _print_records_json(plan.all_jobs)
    else:
        _print_summary(records)
    if any(r.status == "infra_error" for r in records) or problems:
        raise typer.Exit(2)


def _print_records_json(jobs: list[RunJob]) -> None:
    """Every run of the batch (this time's and those already done) as a JSON list of records."""
    import json
    import sys

    from rexmle.runner.records import read_record

    payload = []
    for job in jobs:
        record = read_record(job.folder)
        if record is not None:
            payload.append({"folder": str(job.folder), **record.model_dump(mode="json")})
    sys.stdout.write(json.dumps(payload, indent=2) + "\n")


def _print_summary(records: list[RunRecord]) -> None:
    if not records:
        return
    table = Table(title="runs")
    for column in ("task", "agent", "seed", "status", "headline", "value", "percentile"):
        table.add_column(column)
    for record in records:
        grade = record.grade
        valid = grade is not None and grade.valid
        table.add_row(
            record.task,
            record.agent,
            str(record.seed),
            record.status,
            (grade.headline_key or "-") if valid else "-",
            f"{grade.headline_value:.4g}" if valid else "-",
            f"{grade.percentile:.3f}" if valid else "-",
        )
    out.print(table)


def demo(
    demo_dir: Annotated[
        Path, typer.Option("--dir", help="Demo folder (data/, runs/, report files).")
    ] = Path("rexmle-demo"),
    task: Annotated[
        list[str] | None, typer.Option("--task", help="Only these tasks (repeatable).")
    ] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Runs at once.")] = 2,
    time_limit: Annotated[
        float, typer.Option("--time-limit", min=1, help="Seconds per run.")
    ] = 600,
    sandbox: Annotated[str, typer.Option("--sandbox", help="auto, bwrap or local.")] = "auto",
) -> None:
    """The whole flow on the mini suite: prepare, run the baseline, grade, rank, report."""
    from rexmle.runner.demo import run_demo

    if sandbox not in ("auto", "bwrap", "local"):
        msg = f"unknown sandbox {sandbox!r}; use auto, bwrap or local"
        raise _fail(ValueError(msg))
    try:
        with _interrupt_on_sigterm():
            result = run_demo(
                demo_dir,
                tasks=task,
                concurrency=concurrency,
                time_limit_s=time_limit,
                sandbox=sandbox,  # type: ignore[arg-type]
                console=err,
            )
    except KeyboardInterrupt:
        err.print("[bold red]interrupted:[/] rerun `rexmle demo` to finish")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except (RexmleError, RuntimeError) as error:
        raise _fail(error) from error
    table = Table(title="ReX-MLE demo: baseline agent on the mini suite", box=box.SIMPLE_HEAD)
    width = max((len(row.task) for row in result.rows), default=4)
    table.add_column("task", no_wrap=True, min_width=width)
    table.add_column("headline metric", no_wrap=True)
    table.add_column("value", justify="right")
    table.add_column("percentile", justify="right")
    table.add_column("sample", justify="right")
    table.add_column("status", no_wrap=True)
    for row in result.rows:
        arrow = "↑" if row.higher_is_better else "↓"
        table.add_row(
            row.task,
            f"{row.headline_key} {arrow}",
            "-" if row.value is None else f"{row.value:.4g}",
            "-" if row.percentile is None else f"{row.percentile:.3f}",
            "-" if row.sample_value is None else f"{row.sample_value:.4g}",
            row.status,
        )
    out.print(table, width=max(out.width, 96))
    from rexmle.report.render import MINI_BANNER

    out.print(f"[bold yellow]{MINI_BANNER.format(n=len(result.rows))}[/]", highlight=False)
    for path in result.report_files:
        out.print(f"wrote {path}")
    if any(r.status not in ("completed", "not implemented") for r in result.rows):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``run`` and ``demo`` to the ``rexmle`` CLI."""
    app.command("run")(run)
    app.command("demo")(demo)
