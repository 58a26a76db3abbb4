"""The one run path: an :class:`Experiment` is planned into a :class:`Batch`, which an executor
of :data:`EXECUTORS` runs with one :class:`~rexmle.runner.settings.RunSettings`.

``rexmle run`` with flags, ``rexmle run --experiment FILE`` (or a preset) and ``rexmle demo`` all
build an :class:`~rexmle.runner.experiment.Experiment` and go through :func:`plan` (the only
expansion) and the executor its ``executor.kind`` names:

- ``local``: a pool of runs on this machine (:func:`rexmle.runner.executor.run_jobs`);
- ``slurm``: array jobs (:mod:`rexmle.runner.executor_slurm`), the settings written whole into
  the batch file and read back whole on the node.

Each executor returns the exit code of the command: 0 every run ended with a result; 1 some runs
were cancelled (Slurm: they run again next time); 2 a run ended in ``infra_error`` or a task
could not run; 130 interrupted.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import TYPE_CHECKING

from rich.console import Console

from rexmle.runner.experiment import Experiment, RunKey

if TYPE_CHECKING:
    from rexmle.llm.gateway import Gateway
    from rexmle.records.runs import RunRecord
    from rexmle.runner.executor import RunJob
    from rexmle.runner.settings import RunSettings

EXIT_CANCELLED = 1
EXIT_PROBLEMS = 2
EXIT_INTERRUPTED = 130


@dataclass
class Batch:
    """The runs of one study: to run, already done, and what could not run (label -> why)."""

    experiment: Experiment
    keys: list[RunKey]
    retry_failed: bool
    force_config: bool = False
    """Runs of another config in the run folders are replaced (``--force-config``)."""
    jobs: list[RunJob] = field(default_factory=list)
    done: list[RunJob] = field(default_factory=list)
    not_implemented: dict[str, str] = field(default_factory=dict)
    """Tasks without code (or without a baseline solver): left out, not a failure."""
    not_prepared: dict[str, str] = field(default_factory=dict)
    """Tasks whose data is not prepared here: left out, the command exits 2."""

    @property
    def all_jobs(self) -> list[RunJob]:
        """Every run of the batch, done or not, in expansion order."""
        return [*self.jobs, *self.done]


def plan(
    experiment: Experiment,
    settings: RunSettings,
    *,
    retry_failed: bool,
    recorded_name: str | None,
    prepare: bool = True,
    force_config: bool = False,
) -> Batch:
    """Expand ``experiment`` once, keep the runs that can run here, split done from to do.

    Mini data is prepared here (``prepare``); full data must be prepared already. A task without
    code, or without a baseline solver for the baseline agent, is left out.

    Raises:
        SpecError: an unknown task or agent, or an agent that cannot start.
        RunConflict: a run folder holds a run with another config.
    """
    from rexmle.agents.llm_launch import require_startable
    from rexmle.runner.batch import ensure_prepared, implemented_tasks, split_done
    from rexmle.runner.experiment import expand, experiment_jobs

    keys = expand(experiment)
    jobs = experiment_jobs(experiment, settings.runs_dir, keys, recorded_name=recorded_name)
    batch = Batch(
        experiment=experiment, keys=keys, retry_failed=retry_failed, force_config=force_config
    )
    hidden = (settings.data_dir, settings.runs_dir)
    agents = {job.config.agent.id: job.config.agent for job in jobs}
    for spec in agents.values():
        require_startable(spec, hidden=hidden)

    def label(job: RunJob) -> str:
        return job.config.task if len(agents) == 1 else f"{job.config.task} ({job.config.agent.id})"

    for spec in agents.values():
        tasks = list(dict.fromkeys(j.config.task for j in jobs if j.config.agent.id == spec.id))
        _, left_out = implemented_tasks(tasks, spec)
        for job in jobs:
            if job.config.agent.id == spec.id and job.config.task in left_out:
                batch.not_implemented[label(job)] = left_out[job.config.task]
    if prepare:
        for mini in sorted({job.config.mini for job in jobs}):
            tasks = list(dict.fromkeys(j.config.task for j in jobs if j.config.mini == mini))
            batch.not_prepared.update(ensure_prepared(tasks, settings.data_dir, mini=mini))
    kept = [
        job
        for job in jobs
        if label(job) not in batch.not_implemented and job.config.task not in batch.not_prepared
    ]
    split = split_done(kept, retry_failed=retry_failed, replace_other_config=force_config)
    batch.jobs, batch.done = split.jobs, split.done
    return batch


def batch_gateway(jobs: Sequence[RunJob], settings: RunSettings) -> Gateway | None:
    """The (not started) LLM gateway the runs need under ``settings``, or None.

    Every run that needs LLMs gets it (an ``llm`` agent, one that declares ``llm_gateway``, or
    every run with ``llm_for_every_run``); its config is ``settings.llm_config`` (None: the
    built-in one) with the batch's budget and rate cap; a run's own budget (an experiment
    agent's ``budget_usd``, in its config) wins over the batch's.

    Raises:
        SpecError: an invalid LLM config, or an agent passing provider keys into its sandbox.
    """
    from rexmle.runner.gateway_setup import plan_gateway

    groups = {job.group for job in jobs}
    # the log lives with the runs it served: their group's folder when they share one
    log_dir = settings.runs_dir / groups.pop() if len(groups) == 1 else settings.runs_dir
    gateway: Gateway | None = None
    for spec in {job.config.agent.id: job.config.agent for job in jobs}.values():
        planned = plan_gateway(
            spec,
            settings.llm_config,
            every_run=settings.llm_for_every_run,
            budget_usd=settings.llm_budget_usd,
            max_calls_per_minute=settings.llm_max_calls_per_minute,
            log_path=log_dir / "llm_gateway.log",
            shared=settings.llm_gateway_shared,
        )
        gateway = gateway or planned
    return gateway


@dataclass(frozen=True)
class Invocation:
    """How the command waits and prints (nothing here changes a result)."""

    wait: bool = True
    """Slurm: wait for the runs to end (else submit and return)."""
    poll_s: float = 5.0
    """Slurm: seconds between state checks."""
    as_json: bool = False
    """Print every run's record as JSON instead of the summary table."""
    summary: bool = True
    """Print the summary table (the demo prints its own)."""


@contextlib.contextmanager
def interrupt_on_sigterm() -> Iterator[None]:
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


def run_local(batch: Batch, settings: RunSettings, how: Invocation, err: Console) -> int:
    """Run the batch in the local pool (with the LLM gateway when the runs need it)."""
    from rexmle.errors import RexmleError
    from rexmle.runner.executor import RunOptions, run_jobs
    from rexmle.runner.gateway_setup import running_gateway
    from rexmle.runner.sandbox import choose_sandbox
    from rexmle.tasks.parallel import default_workers

    executor = batch.experiment.executor
    gpus = list(executor.gpus)
    concurrency = executor.concurrency or max(1, len(gpus))
    if settings.grade_workers is None:
        workers = max(1, default_workers() // concurrency)
        settings = settings.model_copy(update={"grade_workers": workers})
    chosen = choose_sandbox(settings.sandbox)
    gateway = batch_gateway(batch.jobs, settings)
    networks = {job.config.agent.network for job in batch.jobs} or {False}
    for network in sorted(networks):
        for warning in chosen.info(network=network).warnings:
            err.print(f"[bold red]WARNING:[/] {warning}", highlight=False)
    info = chosen.info(network=max(networks))
    err.print(
        f"{len(batch.jobs)} run(s) to do, {len(batch.done)} already done; sandbox {info.kind} "
        f"({'isolated' if info.isolated else 'NOT isolated'}); runs in {settings.runs_dir}",
        highlight=False,
        soft_wrap=True,
    )
    options = RunOptions(settings=settings, sandbox=chosen)
    try:
        with interrupt_on_sigterm(), running_gateway(gateway, batch.jobs, err) as started:
            options.gateway = started
            records = run_jobs(batch.jobs, options, concurrency=concurrency, gpus=gpus, console=err)
    except KeyboardInterrupt:
        err.print("[bold red]interrupted:[/] unfinished runs will run again next time")
        return EXIT_INTERRUPTED
    except RexmleError as error:
        err.print(f"[bold red]error:[/] {error}", highlight=False)
        return EXIT_PROBLEMS
    _report(batch, records, how)
    return _exit_code(batch, records)


def run_slurm(batch: Batch, settings: RunSettings, how: Invocation, err: Console) -> int:
    """Submit the runs that must run and are not alive in Slurm; wait and report as they end.

    Lost jobs (dead without a final record) are marked ``infra_error`` first, so they count as
    failed (rerun with ``--retry-failed``).
    """
    from rexmle.runner.batch import split_done
    from rexmle.runner.executor import describe_record
    from rexmle.runner.executor_slurm import (
        SlurmSettings,
        alive_folders,
        mark_lost_jobs,
        submit,
        wait_for_runs,
    )

    study = batch.experiment
    jobs = batch.all_jobs
    for folder in mark_lost_jobs([job.folder for job in jobs]):
        err.print(f"[red]lost:[/] {folder} (its Slurm job died; now infra_error)", highlight=False)
    split = split_done(  # again: lost runs changed
        jobs, retry_failed=batch.retry_failed, replace_other_config=batch.force_config
    )
    todo, done = split.jobs, split.done
    alive = alive_folders([job.folder for job in todo])
    to_submit = [job for job in todo if job.folder not in alive]
    err.print(
        f"{len(to_submit)} run(s) to submit, {len(alive)} still queued or running in Slurm, "
        f"{len(done)} already done; runs in {settings.runs_dir}",
        highlight=False,
        soft_wrap=True,
    )
    if to_submit:
        batch_gateway(to_submit, settings)  # the LLM config is checked here, not on the node
        slurm = SlurmSettings(
            resources=study.executor.slurm,
            gpus_per_run=study.gpus_per_run,
            run=settings,
            job_name=f"rexmle-{study.base_group}",
        )
        submission = submit(to_submit, slurm)
        err.print(
            f"submitted array job(s) {', '.join(submission.array_ids)} "
            f"({submission.seconds:.2f} s); batch files in {submission.batch_dir}",
            highlight=False,
            soft_wrap=True,
        )
    if not how.wait or not todo:
        return EXIT_PROBLEMS if batch.not_prepared else 0
    labels = {job.config.run_id(): job.label for job in todo}
    ended = [0]

    def show(record: RunRecord) -> None:
        ended[0] += 1
        label = labels.get(record.run_id, record.run_id)
        err.print(
            f"[{ended[0]}/{len(labels)}] {label}: {describe_record(record, None)}", highlight=False
        )

    try:
        records = wait_for_runs(
            [j.folder for j in todo],
            poll_s=how.poll_s,
            on_done=show,
            on_stuck=lambda stuck: _warn_stuck(stuck, err),
        )
    except KeyboardInterrupt:
        err.print(
            "[bold red]interrupted:[/] the jobs keep running in Slurm; "
            "`rexmle status RUNS_DIR` follows them, `rexmle cancel RUNS_DIR` stops them"
        )
        return EXIT_INTERRUPTED
    _report(batch, records, how)
    code = _exit_code(batch, records)
    if code == EXIT_CANCELLED:
        err.print("[yellow]cancelled runs run again the next time[/]")
    return code


def _warn_stuck(stuck: dict[str, str], err: Console) -> None:
    shown = ", ".join(f"{job_id} ({why})" for job_id, why in sorted(stuck.items())[:5])
    err.print(
        f"[bold red]WARNING:[/] {len(stuck)} job(s) can never start as submitted: {shown}. "
        "They ask for more than a node or partition has (CPUs, memory, GPUs or time): "
        "`rexmle cancel RUNS_DIR`, then lower the resources (experiment `executor.slurm`, "
        "or --slurm-arg=--cpus-per-task=N --slurm-arg=--mem=M).",
        highlight=False,
        soft_wrap=True,
    )


def _exit_code(batch: Batch, records: Sequence[RunRecord]) -> int:
    if any(r.status == "infra_error" for r in records) or batch.not_prepared:
        return EXIT_PROBLEMS
    if any(r.status == "cancelled" for r in records):
        return EXIT_CANCELLED
    return 0


def _report(batch: Batch, records: Sequence[RunRecord], how: Invocation) -> None:
    from rexmle.runner.run_tables import print_records_json, print_summary

    if how.as_json:
        print_records_json(batch.all_jobs)
    elif how.summary:
        print_summary(records)


Executor = Callable[[Batch, "RunSettings", Invocation, Console], int]
EXECUTORS: dict[str, Executor] = {"local": run_local, "slurm": run_slurm}
"""The executors by ``executor.kind``."""
