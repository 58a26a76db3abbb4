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
from rexmle.names import require_folder_names
from rexmle.runner.limits import DEFAULT_GRADE_MEMORY_BYTES, DEFAULT_VALIDATION_MEMORY_BYTES
from rexmle.terminal import console

if TYPE_CHECKING:
    from rexmle.llm.gateway import Gateway
    from rexmle.runner.batch import Plan
    from rexmle.runner.executor import RunJob
    from rexmle.runner.executor_slurm import SlurmSettings
    from rexmle.runner.experiment import Experiment, RunKey
    from rexmle.runner.records import RunRecord
    from rexmle.runner.sandbox import Sandbox

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

    def handler(_signum: int, _frame: FrameType | None) -> None:
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
        str | None, typer.Option("--agent", help="Agent id (dummy, baseline, command) or YAML.")
    ] = None,
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
    sandbox: Annotated[
        str, typer.Option("--sandbox", help="auto, bwrap, local, docker or apptainer.")
    ] = "auto",
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
    experiment: Annotated[
        str | None,
        typer.Option("--experiment", help="Experiment file (YAML) or preset (paper-grid)."),
    ] = None,
    slurm_arg: Annotated[
        list[str] | None,
        typer.Option("--slurm-arg", help="Slurm: an sbatch option, e.g. --slurm-arg=--mem=32G."),
    ] = None,
    no_wait: Annotated[
        bool, typer.Option("--no-wait", help="Slurm: submit and return without waiting.")
    ] = False,
    poll: Annotated[
        float, typer.Option("--poll", min=0.1, help="Slurm: seconds between state checks.")
    ] = 5.0,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the runs, GPU-hours and cost; run nothing.")
    ] = False,
) -> None:
    """Run an agent on tasks (resumable): workspaces, sandbox, validation server, grading.

    Exit codes: 0 every run ended with a result; 2 a run ended in infra_error, a task could not
    run, or the command was wrong; 130 interrupted (unfinished runs run again next time).
    """
    if experiment is not None:
        flags = (("--agent", agent), ("--task", task), ("--suite", suite))
        given = [flag for flag, value in flags if value]
        if given:
            msg = f"--experiment describes the whole study; drop {', '.join(given)}"
            raise _fail(ValueError(msg))
        _run_experiment(
            experiment,
            runs_dir=runs_dir,
            data_dir=data_dir,
            dry_run=dry_run,
            retry_failed=retry_failed,
            kill_grace_s=kill_grace,
            keep_data=keep_data,
            wait=not no_wait,
            poll_s=poll,
        )
        return
    if agent is None:
        raise _fail(ValueError("give --agent AGENT (or --experiment FILE)"))
    from rexmle.agents.llm_launch import require_startable
    from rexmle.agents.registry import load_agent
    from rexmle.config import resolve_data_dir, resolve_runs_dir
    from rexmle.llm.run_setup import plan_gateway
    from rexmle.runner.batch import ensure_prepared, implemented_tasks, plan_runs, select_tasks
    from rexmle.runner.sandbox import choose_sandbox

    if executor not in ("local", "slurm"):
        msg = f"executor {executor!r} is not available; use --executor local or slurm"
        raise _fail(ValueError(msg))
    if sandbox not in ("auto", "bwrap", "local", "docker", "apptainer"):
        msg = f"unknown sandbox {sandbox!r}; use auto, bwrap, local, docker or apptainer"
        raise _fail(ValueError(msg))
    try:
        require_folder_names({"--group": group, "--agent-name": agent_name})
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
        if dry_run:
            _print_dry_run([*plan.jobs, *plan.done], plan.jobs, gpus_per_run=min(1, len(gpu_slots)))
            return
        if executor == "slurm":
            from rexmle.runner.executor_slurm import SlurmSettings
            from rexmle.runner.experiment import SlurmResources

            settings = SlurmSettings(
                resources=SlurmResources(extra_args=list(slurm_arg or [])),
                gpus_per_run=1,
                sandbox=sandbox,
                data_dir=data,
                runs_dir=runs,
                kill_grace_s=kill_grace,
                keep_data=keep_data,
                job_name=f"rexmle-{group}",
            )
            jobs = [*plan.jobs, *plan.done]
            _execute_slurm(
                jobs,
                settings,
                retry_failed=retry_failed,
                wait=not no_wait,
                poll_s=poll,
                had_problems=bool(problems),
            )
            return
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
    if concurrency is None:
        concurrency = max(1, len(gpu_slots))
    _execute_local(
        plan,
        chosen,
        runs_dir=runs,
        data_dir=data,
        where=runs / group,
        concurrency=concurrency,
        gpu_slots=gpu_slots,
        kill_grace_s=kill_grace,
        keep_data=keep_data,
        had_problems=bool(problems),
        as_json=as_json,
        gateway=gateway,
        llm_for_every_run=llm_wanted,
        grade_memory_mb=grade_memory_mb,
        validation_memory_mb=validation_memory_mb,
    )


def _execute_local(
    plan: Plan,
    chosen: Sandbox,
    *,
    runs_dir: Path,
    data_dir: Path,
    where: Path,
    concurrency: int,
    gpu_slots: list[str],
    kill_grace_s: float,
    keep_data: bool,
    had_problems: bool,
    as_json: bool = False,
    gateway: Gateway | None = None,
    llm_for_every_run: bool = False,
    grade_memory_mb: int = DEFAULT_GRADE_MEMORY_BYTES >> 20,
    validation_memory_mb: int = DEFAULT_VALIDATION_MEMORY_BYTES >> 20,
) -> None:
    """Run the plan's jobs in the local pool (with the LLM gateway when one is planned), print
    the summary, exit by the exit-code rules.
    """
    from rexmle.llm.run_setup import running_gateway
    from rexmle.runner.executor import RunOptions, run_jobs
    from rexmle.tasks.parallel import default_workers

    networks = {job.config.agent.network for job in plan.jobs} or {False}
    for network in sorted(networks):
        for warning in chosen.info(network=network).warnings:
            err.print(f"[bold red]WARNING:[/] {warning}", highlight=False)
    info = chosen.info(network=max(networks))
    err.print(
        f"{len(plan.jobs)} run(s) to do, {len(plan.done)} already done; sandbox {info.kind} "
        f"({'isolated' if info.isolated else 'NOT isolated'}); runs in {where}",
        highlight=False,
        soft_wrap=True,
    )
    options = RunOptions(
        runs_dir=runs_dir,
        data_dir=data_dir,
        sandbox=chosen,
        kill_grace_s=kill_grace_s,
        grade_workers=max(1, default_workers() // concurrency),
        keep_data=keep_data,
        llm_for_every_run=llm_for_every_run,
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
    if any(r.status == "infra_error" for r in records) or had_problems:
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


def _runnable_jobs(jobs: list[RunJob], data_dir: Path) -> tuple[list[RunJob], bool]:
    """``jobs`` without those whose task cannot run here (reasons printed); whether any could not.

    The same filters as a run given by flags: the task is implemented (and has a baseline solver
    for the baseline agent) and its data is prepared (mini data is prepared here).
    """
    from rexmle.runner.batch import ensure_prepared, implemented_tasks

    skipped: dict[str, str] = {}
    by_agent: dict[str, list[RunJob]] = {}
    for job in jobs:
        by_agent.setdefault(job.config.agent.id, []).append(job)
    for agent_jobs in by_agent.values():
        tasks = list(dict.fromkeys(j.config.task for j in agent_jobs))
        _, left_out = implemented_tasks(tasks, agent_jobs[0].config.agent)
        for task_id, why in left_out.items():
            skipped.setdefault(f"{task_id} ({agent_jobs[0].config.agent.id})", why)
    mini_kinds = {job.config.mini for job in jobs}
    problems: dict[str, str] = {}
    for mini in mini_kinds:
        tasks = list(dict.fromkeys(j.config.task for j in jobs if j.config.mini == mini))
        with err.status("checking prepared data…"):
            problems.update(ensure_prepared(tasks, data_dir, mini=mini))
    for what, why in skipped.items():
        err.print(f"[yellow]{what}:[/] skipped, {why}", highlight=False)
    for task_id, why in problems.items():
        err.print(f"[red]{task_id}:[/] skipped, {why}", highlight=False)
    kept = [
        job
        for job in jobs
        if job.config.task not in problems
        and f"{job.config.task} ({job.config.agent.id})" not in skipped
    ]
    return kept, bool(problems)


def _run_experiment(
    name_or_path: str,
    *,
    runs_dir: Path | None,
    data_dir: Path | None,
    dry_run: bool,
    retry_failed: bool,
    kill_grace_s: float,
    keep_data: bool,
    wait: bool,
    poll_s: float,
) -> None:
    """``rexmle run --experiment FILE``: expand, plan, then dry-run or execute (see ``run``)."""
    from rexmle.agents.llm_launch import require_startable
    from rexmle.config import resolve_data_dir, resolve_runs_dir
    from rexmle.runner.batch import split_done
    from rexmle.runner.experiment import (
        expand,
        experiment_gateway,
        experiment_jobs,
        load_experiment,
    )
    from rexmle.runner.sandbox import choose_sandbox

    try:
        study = load_experiment(name_or_path)
        runs = resolve_runs_dir(runs_dir)
        keys = expand(study)
        try:
            jobs = experiment_jobs(study, runs)
        except RexmleError as error:
            if not dry_run:
                raise
            _print_unresolved_dry_run(study, keys, str(error))
            return
        if dry_run:
            plan = split_done(jobs, retry_failed=retry_failed)
            _print_dry_run(jobs, plan.jobs, gpus_per_run=study.gpus_per_run)
            return
        data = resolve_data_dir(data_dir)
        for spec in {job.config.agent.id: job.config.agent for job in jobs}.values():
            require_startable(spec, hidden=(data, runs))
        runnable, had_problems = _runnable_jobs(jobs, data)
        if study.executor.kind == "slurm":
            from rexmle.runner.executor_slurm import SlurmSettings

            settings = SlurmSettings(
                resources=study.executor.slurm,
                gpus_per_run=study.gpus_per_run,
                sandbox=study.sandbox,
                data_dir=data,
                runs_dir=runs,
                kill_grace_s=kill_grace_s,
                keep_data=keep_data,
                job_name=f"rexmle-{study.name}",
            )
            _execute_slurm(
                runnable,
                settings,
                retry_failed=retry_failed,
                wait=wait,
                poll_s=poll_s,
                had_problems=had_problems,
            )
            return
        plan = split_done(runnable, retry_failed=retry_failed)
        chosen = choose_sandbox(study.sandbox)  # type: ignore[arg-type]
        gateway = experiment_gateway(runnable)
    except (RexmleError, ValueError, RuntimeError) as error:
        raise _fail(error) from error
    gpu_slots = list(study.executor.gpus)
    _execute_local(
        plan,
        chosen,
        runs_dir=runs,
        data_dir=data,
        where=runs,
        concurrency=study.executor.concurrency or max(1, len(gpu_slots)),
        gpu_slots=gpu_slots,
        kill_grace_s=kill_grace_s,
        keep_data=keep_data,
        had_problems=had_problems,
        gateway=gateway,
    )


def _execute_slurm(
    jobs: list[RunJob],
    settings: SlurmSettings,
    *,
    retry_failed: bool,
    wait: bool,
    poll_s: float,
    had_problems: bool,
) -> None:
    """Submit the runs that must run and are not alive in Slurm; wait and report as they end.

    Lost jobs (dead without a final record) are marked ``infra_error`` first, so they count as
    failed (rerun with ``--retry-failed``).
    """
    from rexmle.runner.batch import split_done
    from rexmle.runner.executor import describe_record
    from rexmle.runner.executor_slurm import alive_folders, mark_lost_jobs, submit, wait_for_runs

    for folder in mark_lost_jobs([job.folder for job in jobs]):
        err.print(f"[red]lost:[/] {folder} (its Slurm job died; now infra_error)", highlight=False)
    plan = split_done(jobs, retry_failed=retry_failed)
    alive = alive_folders([job.folder for job in plan.jobs])
    to_submit = [job for job in plan.jobs if job.folder not in alive]
    err.print(
        f"{len(to_submit)} run(s) to submit, {len(alive)} still queued or running in Slurm, "
        f"{len(plan.done)} already done; runs in {settings.runs_dir}",
        highlight=False,
        soft_wrap=True,
    )
    if to_submit:
        submission = submit(to_submit, settings)
        err.print(
            f"submitted array job(s) {', '.join(submission.array_ids)} "
            f"({submission.seconds:.2f} s); batch files in {submission.batch_dir}",
            highlight=False,
            soft_wrap=True,
        )
    if not wait or not plan.jobs:
        if had_problems:
            raise typer.Exit(2)
        return
    labels = {job.config.run_id(): job.label for job in plan.jobs}
    ended = [0]

    def show(record: RunRecord) -> None:
        ended[0] += 1
        label = labels.get(record.run_id, record.run_id)
        err.print(
            f"[{ended[0]}/{len(labels)}] {label}: {describe_record(record, None)}", highlight=False
        )

    def warn_stuck(stuck: dict[str, str]) -> None:
        shown = ", ".join(f"{job_id} ({why})" for job_id, why in sorted(stuck.items())[:5])
        err.print(
            f"[bold red]WARNING:[/] {len(stuck)} job(s) can never start as submitted: {shown}. "
            "They ask for more than a node or partition has (CPUs, memory, GPUs or time): "
            "`rexmle cancel RUNS_DIR`, then lower the resources (experiment `executor.slurm`, "
            "or --slurm-arg=--cpus-per-task=N --slurm-arg=--mem=M).",
            highlight=False,
            soft_wrap=True,
        )

    try:
        records = wait_for_runs(
            [j.folder for j in plan.jobs], poll_s=poll_s, on_done=show, on_stuck=warn_stuck
        )
    except KeyboardInterrupt:
        err.print(
            "[bold red]interrupted:[/] the jobs keep running in Slurm; "
            "`rexmle status RUNS_DIR` follows them, `rexmle cancel RUNS_DIR` stops them"
        )
        raise typer.Exit(EXIT_INTERRUPTED) from None
    _print_summary(records)
    if any(r.status == "infra_error" for r in records) or had_problems:
        raise typer.Exit(2)
    if any(r.status == "cancelled" for r in records):
        err.print("[yellow]cancelled runs run again the next time[/]")
        raise typer.Exit(1)


def cancel(
    runs_dir: Annotated[Path, typer.Argument(help="Runs folder (or a group inside it).")],
) -> None:
    """Cancel the Slurm jobs of the runs under RUNS_DIR: each run is recorded cancelled."""
    from rexmle.runner.executor_slurm import cancel_jobs
    from rexmle.runner.status import run_folders

    if not runs_dir.is_dir():
        raise _fail(ValueError(f"{runs_dir} is not a folder"))
    try:
        job_ids = cancel_jobs(run_folders(runs_dir))
    except RexmleError as error:
        raise _fail(error) from error
    out.print(f"signalled {len(job_ids)} job(s): {' '.join(job_ids) or '-'}", highlight=False)


def _print_dry_run(jobs: list[RunJob], to_do: list[RunJob], *, gpus_per_run: int) -> None:
    """The job table, the count, GPU-hours and the cost ceiling of ``jobs``."""
    from rexmle.runner.experiment import dry_run_summary, models_of, uses_llm

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
    summary = dry_run_summary(jobs, gpus_per_run=gpus_per_run)
    cost = (
        f"cost ceiling ${summary.cost_ceiling_usd:,.2f} (sum of per-run LLM budgets)"
        if summary.cost_ceiling_usd is not None
        else f"no cost ceiling: {summary.runs_without_budget} LLM run(s) have no budget"
    )
    if not any(uses_llm(job) for job in jobs):
        cost = "no LLM runs"
    out.print(
        f"{summary.n_runs} runs ({len(to_do)} to run), {summary.gpus_per_run} GPU per run, "
        f"{summary.gpu_hours:,.1f} GPU-hours at most; {cost}",
        highlight=False,
        soft_wrap=True,
    )


def _print_unresolved_dry_run(study: Experiment, keys: list[RunKey], problem: str) -> None:
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
    budgets = {entry.agent: entry.budget_usd for entry in study.agents}
    missing = sum(1 for k in keys if k.model is not None and budgets[k.agent] is None)
    cost = (
        f"cost ceiling ${sum(budgets[k.agent] or 0.0 for k in keys):,.2f}"
        if not missing
        else f"no cost ceiling: {missing} LLM run(s) have no budget"
    )
    extra = f" (+{unknown} run(s) at their agent's limit)" if unknown else ""
    out.print(
        f"{len(keys)} runs, {study.gpus_per_run} GPU per run, {hours:,.1f} GPU-hours at most"
        f"{extra}; {cost}",
        highlight=False,
        soft_wrap=True,
    )
    err.print(f"[yellow]run ids unknown:[/] {problem}", highlight=False, soft_wrap=True)


def status(
    runs_dir: Annotated[Path, typer.Argument(help="Runs folder (or a group inside it).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Runs per status under RUNS_DIR, with an ETA for the unfinished ones."""
    import json

    from rexmle.runner.status import runs_status

    if not runs_dir.is_dir():
        raise _fail(ValueError(f"{runs_dir} is not a folder"))
    state = runs_status(runs_dir)
    if as_json:
        out.print_json(json.dumps(state.as_json()))
        return
    table = Table(title=f"runs in {runs_dir}", box=box.SIMPLE_HEAD)
    table.add_column("status", no_wrap=True)
    table.add_column("runs", justify="right")
    for name, count in sorted(state.counts.items()):
        table.add_row(name, str(count))
    table.add_row("total", str(state.total))
    out.print(table)
    if state.eta_s is not None:
        out.print(f"ETA {_duration(state.eta_s)} (mean run {_duration(state.mean_run_s or 0)})")
    for path in state.unreadable:
        err.print(f"[yellow]unreadable:[/] {path}", highlight=False)


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


def _print_summary(records: list[RunRecord]) -> None:
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
    """Add ``run``, ``demo``, ``status`` and ``cancel`` to the ``rexmle`` CLI."""
    app.command("run")(run)
    app.command("demo")(demo)
    app.command("status")(status)
    app.command("cancel")(cancel)
