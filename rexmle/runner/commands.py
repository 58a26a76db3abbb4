"""The ``rexmle run``, ``demo``, ``status`` and ``cancel`` commands (added to the CLI by
:func:`register`).

``rexmle run`` builds one :class:`~rexmle.runner.experiment.Experiment` (from its flags, or from
``--experiment FILE``/preset, optionally narrowed by ``--condition``) and one
:class:`~rexmle.runner.settings.RunSettings`, plans the batch and hands both to the executor the
experiment names (:mod:`rexmle.runner.executors`). Every option has one role
(:data:`RUN_OPTION_ROLES`): ``study`` options shape the experiment and are refused by name beside
``--experiment`` (the file says them); ``settings`` options go into ``RunSettings`` (every run
gets them, on every executor, and run.json records them); ``invocation`` options only choose
what the command does and prints.
"""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from rexmle.config import resolve_runs_dir
from rexmle.errors import RexmleError
from rexmle.names import require_folder_names
from rexmle.runner.limits import DEFAULT_GRADE_MEMORY_BYTES, DEFAULT_VALIDATION_MEMORY_BYTES
from rexmle.terminal import console

RunsArgument = Annotated[
    Path | None,
    typer.Argument(
        help="Runs folder, or a group inside it (default: $REXMLE_RUNS_DIR or ./runs).",
        show_default=False,
    ),
]
"""The runs folder a reading command looks at (``rexmle.config.resolve_runs_dir`` when omitted)."""

if TYPE_CHECKING:
    from rexmle.runner.experiment import Experiment
    from rexmle.runner.settings import RunSettings

EXIT_INTERRUPTED = 130
"""Exit code of a command stopped by Ctrl-C or SIGTERM (as ``rexmle.runner.executors``)."""

out = console()
err = console(stderr=True)

SANDBOXES = ("auto", "bwrap", "local", "docker", "apptainer")
OptionRole = Literal["study", "settings", "invocation"]
RUN_OPTION_ROLES: dict[str, OptionRole] = {
    "agent": "study",
    "task": "study",
    "suite": "study",
    "seeds": "study",
    "time_limit": "study",
    "executor": "study",
    "mini": "study",
    "concurrency": "study",
    "gpus": "study",
    "group": "study",
    "agent_cmd": "study",
    "agent_name": "study",
    "agent_env": "study",
    "agent_dir": "study",
    "network": "study",
    "memory_limit_mb": "study",
    "model": "study",
    "steps": "study",
    "step_timeout": "study",
    "sandbox": "study",
    "slurm_arg": "study",
    "runs_dir": "settings",
    "data_dir": "settings",
    "kill_grace": "settings",
    "keep_data": "settings",
    "grade_memory_mb": "settings",
    "validation_memory_mb": "settings",
    "llm_config": "settings",
    "llm": "settings",
    "llm_budget_usd": "settings",
    "llm_max_calls_per_minute": "settings",
    "llm_shared_gateway": "settings",
    "experiment": "invocation",
    "condition": "invocation",
    "retry_failed": "invocation",
    "as_json": "invocation",
    "no_wait": "invocation",
    "poll": "invocation",
    "dry_run": "invocation",
    "force_config": "invocation",
}
"""The role of every ``rexmle run`` option (see the module docstring)."""


def _fail(error: Exception, code: int = 2) -> typer.Exit:
    err.print(f"[bold red]error:[/] {error}", highlight=False)
    return typer.Exit(code)


def _flag(name: str) -> str:
    return {"as_json": "--json"}.get(name, "--" + name.replace("_", "-"))


def _parse_gpus(gpus: str | None) -> list[str]:
    if not gpus:
        return []
    slots = [g.strip() for g in gpus.split(",") if g.strip()]
    if len(set(slots)) != len(slots):
        msg = f"--gpus lists a GPU twice: {gpus!r}"
        raise ValueError(msg)
    return slots


def experiment_from_flags(study: dict[str, object]) -> "Experiment":
    """The experiment a flag run describes (``study``: the study options by parameter name).

    Raises:
        ValueError: a flag value the experiment refuses (the message names it).
        SpecError: an unknown suite or task.
    """
    from rexmle.runner.batch import select_tasks
    from rexmle.runner.experiment import AgentEntry, ExecutorSettings, Experiment, SlurmResources

    executor = study["executor"] or "local"
    if executor not in ("local", "slurm"):
        msg = f"executor {executor!r} is not available; use --executor local or slurm"
        raise ValueError(msg)
    sandbox = study["sandbox"] or "auto"
    if sandbox not in SANDBOXES:
        msg = f"unknown sandbox {sandbox!r}; use {', '.join(SANDBOXES)}"
        raise ValueError(msg)
    local_only = [n for n in ("concurrency", "gpus") if study[n] is not None]
    if executor == "slurm" and local_only:
        msg = f"{', '.join(map(_flag, local_only))}: local executor only (Slurm gives the GPUs)"
        raise ValueError(msg)
    if executor == "local" and study["slurm_arg"]:
        msg = "--slurm-arg applies to --executor slurm only"
        raise ValueError(msg)
    tasks, suite_is_mini = select_tasks(study["task"] or [], study["suite"])  # type: ignore[arg-type]
    gpus = _parse_gpus(study["gpus"])  # type: ignore[arg-type]
    model = study["model"]
    agent = str(study["agent"])
    if model is not None and "/" in agent and not agent.endswith((".yaml", ".yml")):
        msg = f"--agent {agent} names its model already: drop --model {model}, or give --agent "
        msg += f"{agent.partition('/')[0]} --model {model}"
        raise ValueError(msg)
    entry = AgentEntry(
        agent=agent,
        models=[] if model is None else [str(model)],
        memory_limit_mb=study["memory_limit_mb"],  # type: ignore[arg-type]
        network=study["network"],  # type: ignore[arg-type]
        command=study["agent_cmd"],  # type: ignore[arg-type]
        name=study["agent_name"],  # type: ignore[arg-type]
        env=list(study["agent_env"] or []),  # type: ignore[call-overload]
        steps=study["steps"],  # type: ignore[arg-type]
        step_timeout_s=study["step_timeout"],  # type: ignore[arg-type]
        dir=None if study["agent_dir"] is None else str(study["agent_dir"]),
    )
    group = str(study["group"] or "default")
    return Experiment(
        name=group,
        agents=[entry],
        tasks=[] if study["suite"] else tasks,
        suite=study["suite"],  # type: ignore[arg-type]
        seeds=list(range(int(study["seeds"] or 1))),  # type: ignore[call-overload]
        time_limit_s=study["time_limit"],  # type: ignore[arg-type]
        gpus_per_run=1 if executor == "slurm" or gpus else 0,
        mini=bool(study["mini"]) or suite_is_mini,
        sandbox=sandbox,  # type: ignore[arg-type]
        executor=ExecutorSettings(
            kind=executor,  # type: ignore[arg-type]
            concurrency=study["concurrency"],  # type: ignore[arg-type]
            gpus=gpus,
            slurm=SlurmResources(extra_args=list(study["slurm_arg"] or [])),  # type: ignore[call-overload]
        ),
    )


def settings_from_flags(given: dict[str, object], experiment: "Experiment") -> "RunSettings":
    """The run settings of the command (``given``: the settings options by parameter name).

    Raises:
        ValueError: an LLM config file that does not exist.
    """
    from rexmle.config import resolve_data_dir, resolve_runs_dir
    from rexmle.runner.settings import RunSettings, memory_bytes

    llm_config = given["llm_config"]
    if llm_config is not None and not Path(str(llm_config)).is_file():
        msg = f"--llm-config {llm_config}: no such file"
        raise ValueError(msg)
    return RunSettings(
        data_dir=resolve_data_dir(given["data_dir"]),  # type: ignore[arg-type]
        runs_dir=resolve_runs_dir(given["runs_dir"]),  # type: ignore[arg-type]
        sandbox=experiment.sandbox,
        kill_grace_s=float(given["kill_grace"]),  # type: ignore[arg-type]
        keep_data=bool(given["keep_data"]),
        grade_memory_bytes=memory_bytes(int(given["grade_memory_mb"])),  # type: ignore[call-overload]
        validation_memory_bytes=memory_bytes(int(given["validation_memory_mb"])),  # type: ignore[call-overload]
        llm_config=None if llm_config is None else Path(str(llm_config)).resolve(),
        llm_for_every_run=bool(given["llm"]) or llm_config is not None,
        llm_budget_usd=given["llm_budget_usd"],  # type: ignore[arg-type]
        llm_max_calls_per_minute=given["llm_max_calls_per_minute"],  # type: ignore[arg-type]
        llm_gateway_shared=bool(given["llm_shared_gateway"]),
    )


def _given_study_flags(study: dict[str, object]) -> list[str]:
    return [_flag(name) for name, value in study.items() if value not in (None, False, [])]


def run(
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            help="Agent: dummy, baseline, command (with --agent-cmd), the LLM agents aide, "
            "ml-master, rdagent (aide/MODEL: with that model), or a declaration's YAML path.",
        ),
    ] = None,
    task: Annotated[list[str] | None, typer.Option("--task", help="Task id (repeatable).")] = None,
    suite: Annotated[
        str | None,
        typer.Option("--suite", help="mini (every task, mini data) or all (every task)."),
    ] = None,
    seeds: Annotated[
        int | None, typer.Option("--seeds", min=1, help="Seeds 0..N-1 per task (default 1).")
    ] = None,
    time_limit: Annotated[
        float | None,
        typer.Option("--time-limit", min=1, help="Seconds per run (default: the agent's own)."),
    ] = None,
    executor: Annotated[
        str | None, typer.Option("--executor", help="local (default) or slurm.")
    ] = None,
    runs_dir: Annotated[
        Path | None,
        typer.Option("--runs-dir", help="Runs dir (default: $REXMLE_RUNS_DIR or ./runs)."),
    ] = None,
    data_dir: Annotated[
        Path | None,
        typer.Option("--data-dir", help="Data dir (default: $REXMLE_DATA_DIR or ~/.cache/rexmle)."),
    ] = None,
    mini: Annotated[
        bool, typer.Option("--mini", help="Run on the mini data (prepared here when missing).")
    ] = False,
    concurrency: Annotated[
        int | None,
        typer.Option("--concurrency", min=1, help="Local runs at once (default: 1, or per GPU)."),
    ] = None,
    gpus: Annotated[
        str | None, typer.Option("--gpus", help="Local GPU ids, e.g. 0,1: one per run at a time.")
    ] = None,
    retry_failed: Annotated[
        bool, typer.Option("--retry-failed", help="Rerun agent_error and infra_error runs.")
    ] = False,
    group: Annotated[
        str | None, typer.Option("--group", help="Runs sub-folder (default: default).")
    ] = None,
    agent_cmd: Annotated[
        str | None, typer.Option("--agent-cmd", help="Shell command of a 'command' agent.")
    ] = None,
    agent_name: Annotated[
        str | None, typer.Option("--agent-name", help="Folder name of the agent's runs.")
    ] = None,
    agent_env: Annotated[
        list[str] | None,
        typer.Option(
            "--agent-env",
            help="Host variable passed into the sandbox (repeatable; provider keys refused).",
        ),
    ] = None,
    agent_dir: Annotated[
        Path | None,
        typer.Option(
            "--agent-dir",
            help="Folder of the agent's own code: a read-only copy at $AGENT_DIR in the sandbox "
            "(/agent; local sandbox: the copy's path), its content hash in the run config.",
        ),
    ] = None,
    network: Annotated[
        bool | None,
        typer.Option(
            "--network/--no-network",
            help="Network for the agent, outbound only (default: as its declaration says).",
        ),
    ] = None,
    memory_limit_mb: Annotated[
        int | None,
        typer.Option(
            "--memory-limit-mb",
            min=1,
            help="Memory of the agent's run in MiB (its cgroup; RLIMIT_AS where none can be made).",
        ),
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="LLM agents: the model of every role.")
    ] = None,
    steps: Annotated[
        int | None, typer.Option("--steps", min=1, help="LLM agents: search steps or loops.")
    ] = None,
    step_timeout: Annotated[
        float | None,
        typer.Option("--step-timeout", min=1, help="LLM agents: seconds per executed script."),
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
        str | None,
        typer.Option("--sandbox", help="auto (default), bwrap, local, docker or apptainer."),
    ] = None,
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
        typer.Option(
            "--llm-config",
            help="LLM gateway config (YAML: providers, models, prices, limits); every run gets "
            "the gateway.",
        ),
    ] = None,
    llm: Annotated[
        bool, typer.Option("--llm", help="Every run gets the gateway, built-in LLM config.")
    ] = False,
    llm_budget_usd: Annotated[
        float | None,
        typer.Option(
            "--llm-budget-usd",
            min=0.0,
            help="LLM spending cap of each run in USD (default: the LLM config's); once spent, "
            "the run stops (budget_exceeded).",
        ),
    ] = None,
    llm_max_calls_per_minute: Annotated[
        int | None,
        typer.Option(
            "--llm-max-calls-per-minute",
            min=1,
            help="LLM calls one run may make in any 60 s (default: the LLM config's); one more "
            "stops the run (budget_exceeded).",
        ),
    ] = None,
    llm_shared_gateway: Annotated[
        bool,
        typer.Option(
            "--llm-shared-gateway",
            help="Share one LLM gateway with this user's other rexmle processes on the node "
            "(same config and keys); each run keeps its own token, budget and usage log.",
        ),
    ] = False,
    experiment: Annotated[
        str | None,
        typer.Option(
            "--experiment",
            help="Experiment file (YAML) or a shipped preset: paper-grid, paper-grid-3day.",
        ),
    ] = None,
    condition: Annotated[
        str | None,
        typer.Option(
            "--condition", help="Only this condition of the experiment (flags: a preset's)."
        ),
    ] = None,
    slurm_arg: Annotated[
        list[str] | None,
        typer.Option("--slurm-arg", help="Slurm: an sbatch option, e.g. --slurm-arg=--mem=32G."),
    ] = None,
    no_wait: Annotated[
        bool, typer.Option("--no-wait", help="Slurm: submit and return without waiting.")
    ] = False,
    poll: Annotated[
        float | None,
        typer.Option("--poll", min=0.1, help="Slurm: seconds between state checks (default 5)."),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the runs, GPU-hours and cost; run nothing.")
    ] = False,
    force_config: Annotated[
        bool,
        typer.Option(
            "--force-config",
            help="Replace runs whose folder holds another config (e.g. the agent's code "
            "changed): they run again and their results are overwritten.",
        ),
    ] = False,
) -> None:
    """Run an agent on tasks (resumable): workspaces, sandbox, validation server, grading.

    Exit codes: 0 every run ended with a result; 1 some runs were cancelled (they run again);
    2 a run ended in infra_error, a task could not run, or the command was wrong; 130
    interrupted (unfinished runs run again next time).
    """
    given = dict(locals())
    study = {name: given[name] for name, role in RUN_OPTION_ROLES.items() if role == "study"}
    settings_flags = {n: given[n] for n, role in RUN_OPTION_ROLES.items() if role == "settings"}
    from rexmle.runner.dry_run import print_study_sections_of
    from rexmle.runner.executors import EXECUTORS, Invocation, plan
    from rexmle.runner.experiment import load_experiment, preset_condition, with_condition
    from rexmle.runner.preflight import preflight
    from rexmle.runner.run_tables import print_dry_run, print_unresolved_dry_run

    try:
        require_folder_names({"--group": group, "--agent-name": agent_name})
        if experiment is not None:
            conflicting = _given_study_flags(study)
            if conflicting:
                msg = (
                    f"--experiment describes the whole study; drop {', '.join(conflicting)} "
                    "(or write them into the experiment file)"
                )
                raise ValueError(msg)
            chosen = load_experiment(experiment)
            if condition is not None:
                chosen = chosen.only_condition(condition)
        else:
            if agent is None:
                msg = "give --agent AGENT (or --experiment FILE)"
                raise ValueError(msg)
            chosen = experiment_from_flags(study)
            if condition is not None:
                chosen = with_condition(chosen, preset_condition(condition))
        kind = chosen.executor.kind
        if kind != "slurm" and (no_wait or poll is not None):
            wrong = [f for f, v in (("--no-wait", no_wait), ("--poll", poll)) if v]
            msg = f"{', '.join(wrong)}: for the slurm executor only"
            raise ValueError(msg)
        settings = settings_from_flags(settings_flags, chosen)
        recorded_name = chosen.name if experiment is not None else None
        preflight(
            chosen,
            settings,
            experiment=experiment,
            recorded_name=recorded_name,
            force_config=force_config,
        )
        if dry_run:
            try:
                batch = plan(
                    chosen,
                    settings,
                    retry_failed=retry_failed,
                    recorded_name=recorded_name,
                    prepare=False,
                    force_config=force_config,
                )
            except RexmleError as error:
                from rexmle.agents.llm_launch import EnvNotInstalled

                # a study by flags shows its runs before its agents are installed, as a file's
                if experiment is None and not isinstance(error, EnvNotInstalled):
                    raise
                from rexmle.runner.experiment import expand

                print_unresolved_dry_run(chosen, expand(chosen), str(error))
                print_study_sections_of(chosen, settings, recorded_name)
                return
            print_dry_run(
                batch.all_jobs, batch.jobs, gpus_per_run=chosen.gpus_per_run, settings=settings
            )
            print_study_sections_of(chosen, settings, recorded_name)
            return
        with err.status("checking prepared data…"):
            batch = plan(
                chosen,
                settings,
                retry_failed=retry_failed,
                recorded_name=recorded_name,
                force_config=force_config,
            )
    except (RexmleError, ValueError, RuntimeError) as error:
        raise _fail(error) from error
    for what, why in batch.not_implemented.items():
        err.print(f"[yellow]{what}:[/] skipped, {why}", highlight=False)
    for what, why in batch.not_prepared.items():
        err.print(f"[red]{what}:[/] skipped, {why}", highlight=False)
    how = Invocation(wait=not no_wait, poll_s=poll or 5.0, as_json=as_json)
    try:
        code = EXECUTORS[kind](batch, settings, how, err)
    except (RexmleError, ValueError, RuntimeError) as error:
        raise _fail(error) from error
    if code:
        raise typer.Exit(code)


def cancel(
    runs_dir: RunsArgument = None,
) -> None:
    """Cancel the Slurm jobs of the runs under RUNS_DIR, queued or running: each run is recorded
    cancelled and runs again the next time.
    """
    from rexmle.runner.executor_slurm import cancel_jobs
    from rexmle.runner.status import run_folders

    runs_dir = resolve_runs_dir(runs_dir)
    if not runs_dir.is_dir():
        raise _fail(ValueError(f"{runs_dir} is not a folder"))
    try:
        done = cancel_jobs(run_folders(runs_dir))
    except RexmleError as error:
        raise _fail(error) from error
    out.print(
        f"signalled {len(done.signalled)} running job(s): {' '.join(done.signalled) or '-'}; "
        f"removed {len(done.removed)} queued job(s): {' '.join(done.removed) or '-'}",
        highlight=False,
        soft_wrap=True,
    )


def status(
    runs_dir: RunsArgument = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Runs per status under RUNS_DIR, with an ETA for the unfinished ones.

    Runs handed to Slurm are counted by what Slurm says of their jobs (a job cancelled in the
    queue: cancelled; one that ended without a record: lost).
    """
    import json

    from rexmle.runner.status import runs_status

    runs_dir = resolve_runs_dir(runs_dir)
    if not runs_dir.is_dir():
        raise _fail(ValueError(f"{runs_dir} is not a folder"))
    from rexmle.runner.executor_slurm import SlurmError, job_states

    def slurm_states(job_ids: list[str]) -> dict[str, str]:
        try:
            return job_states(job_ids)
        except SlurmError as error:
            err.print(f"[yellow]Slurm not asked:[/] {error}", highlight=False, soft_wrap=True)
            return {job_id: "RUNNING" for job_id in job_ids}  # as the files say

    state = runs_status(runs_dir, slurm_states)
    if as_json:
        out.print_json(json.dumps(state.as_json()))
        return
    from rich import box
    from rich.table import Table

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
        from rexmle.runner.executors import interrupt_on_sigterm

        with interrupt_on_sigterm():
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
    from rich import box
    from rich.table import Table

    table = Table(
        title="ReX-MLE demo: baseline agent on the mini suite",
        caption="sample sub.: the headline value the task's sample submission scores",
        box=box.SIMPLE_HEAD,
    )
    width = max((len(row.task) for row in result.rows), default=4)
    table.add_column("task", no_wrap=True, min_width=width)
    table.add_column("headline metric", no_wrap=True)
    table.add_column("value", justify="right")
    table.add_column("percentile", justify="right")
    table.add_column("sample sub.", justify="right")
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
    from rexmle.grading.report import MINI_BANNER

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
