"""The Slurm executor: runs as array jobs through plain ``sbatch``, one run per array task.

Submission writes a batch folder ``<runs>/.slurm/<batch>/`` holding ``batch.json`` (every run's
config, group and folder plus the shared settings, as plain JSON: nothing pickled) and the
``sbatch`` script, then submits one array job per distinct time limit (``--array=0-N%max``).
Each array task runs ``python -P -m rexmle.runner.executor_slurm_node BATCH_DIR`` with the
submitting interpreter (its venv, the data dir and the runs dir must be on storage the nodes
share). ``batch.json`` holds the whole :class:`~rexmle.runner.settings.RunSettings` (the LLM config
file is copied into the batch folder and the copy is named there); the node reads it back whole
and calls the same
:func:`rexmle.runner.executor.execute_run` as the local executor, so ``run.json`` stays the
source of truth and grading stays a separate process after the agent ends.

Resources per array task: ``--gpus`` (GPUs per run; Slurm sets ``CUDA_VISIBLE_DEVICES``),
``--cpus-per-task``, ``--mem``, ``--time`` = agent limit + grading time + margin (whole minutes,
rounded up), ``--signal=B:TERM@margin`` (the harness, the batch shell itself, gets SIGTERM before
the end), partition, account, qos and extra options as given.

Each run folder gets ``scheduled.json`` (the job id ``<array>_<index>``) at submission. From it:

- resume never resubmits a run whose job is still alive (pending, running, ...);
- a job that is no longer alive while its run has no final record (killed, node lost, out of
  memory) is *lost*: its record is written ``infra_error`` with the job's last known state;
- :func:`cancel_jobs` cancels a pending job in the queue (and records its run ``cancelled``) and
  sends a running one ``scancel --batch --signal=TERM``: only the harness gets SIGTERM, stops
  its agent or grader and records the run ``cancelled`` (not final: it runs again). A plain
  ``scancel``, preemption or the time-limit signal are recorded ``cancelled`` as well (see
  :mod:`rexmle.runner.executor`); with ``--requeue`` a requeued job runs its run again and
  ``run.json`` counts the restarts (``scheduler.restart_count``).
"""

from __future__ import annotations

import json
import math
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from rexmle.errors import RexmleError
from rexmle.records.runs import (
    FINAL_STATUSES,
    RunRecord,
    RunStatus,
    SchedulerRecord,
    read_record,
    write_record,
)
from rexmle.runner.executor import RunJob
from rexmle.runner.experiment import SlurmResources
from rexmle.runner.limits import module_argv
from rexmle.runner.settings import RunSettings
from rexmle.runner.status import ALIVE_JOB_STATES, SCHEDULED_JSON, scheduled_job

ALIVE_STATES = ALIVE_JOB_STATES
COMMAND_TIMEOUT_S = 60.0
"""Every Slurm client call is bounded: ``sinfo``/``squeue`` hang when slurmctld is down."""
BATCH_JSON = "batch.json"
PREVIOUS_RUN_JSON = "run.previous.json"
"""The record of a run's last attempt, moved aside when the run is submitted again."""


class SlurmError(RexmleError):
    """A Slurm command failed or is missing; the message holds its output."""


LLM_CONFIG_COPY = "llm_config.yaml"
"""The batch folder's copy of the LLM config file (the node reads this one)."""


@dataclass(frozen=True)
class SlurmSettings:
    """What every array task of a submission shares: the resources and the run settings."""

    resources: SlurmResources
    gpus_per_run: int
    run: RunSettings
    python: str = sys.executable
    job_name: str = "rexmle"


def _slurm(argv: list[str], *, env: dict[str, str] | None = None) -> str:
    """Run a Slurm client command (bounded in time); its stdout.

    Raises:
        SlurmError: the program is missing, timed out or exited non-zero.
    """
    exe = shutil.which(argv[0], path=None if env is None else env.get("PATH"))
    if exe is None:
        msg = (
            f"{argv[0]} is not on PATH: the slurm executor needs the Slurm client commands "
            "(sbatch, squeue, scancel) on the machine that runs rexmle"
        )
        raise SlurmError(msg)
    try:
        done = subprocess.run(
            [exe, *argv[1:]],
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired as error:
        msg = f"{' '.join(argv[:2])} did not answer in {COMMAND_TIMEOUT_S:g} s (is slurmctld up?)"
        raise SlurmError(msg) from error
    if done.returncode != 0:
        msg = f"{' '.join(argv)} failed (exit {done.returncode}): {done.stderr.strip()}"
        raise SlurmError(msg)
    return done.stdout


def job_time_minutes(time_limit_s: float, resources: SlurmResources) -> int:
    """``--time`` in whole minutes: agent limit + grading time + margin, rounded up."""
    return math.ceil((time_limit_s + resources.grading_time_s + resources.margin_s) / 60.0)


def sbatch_options(
    settings: SlurmSettings, *, n_runs: int, time_limit_s: float, batch_dir: Path
) -> list[str]:
    """The ``sbatch`` options of one array of ``n_runs`` runs with this agent time limit."""
    res = settings.resources
    throttle = f"%{res.max_parallel}" if res.max_parallel else ""
    options = [
        f"--job-name={settings.job_name}",
        f"--array=0-{n_runs - 1}{throttle}",
        f"--time={job_time_minutes(time_limit_s, res)}",
        f"--signal=B:TERM@{math.ceil(res.margin_s)}",
        f"--cpus-per-task={res.cpus_per_task}",
        f"--mem={math.ceil(res.mem_gb * 1024)}M",
        f"--output={batch_dir / 'slurm-%A_%a.out'}",
        "--open-mode=append",
    ]
    if settings.gpus_per_run:
        options.append(f"--gpus={settings.gpus_per_run}")
    for flag, value in (("partition", res.partition), ("account", res.account), ("qos", res.qos)):
        if value:
            options.append(f"--{flag}={value}")
    return [*options, *res.extra_args]


def batch_script(settings: SlurmSettings, part_dir: Path) -> str:
    """The array job's script: the harness replaces the batch shell (so it gets the signals).

    ``-P`` (:func:`~rexmle.runner.limits.module_argv`): the job's working folder (where
    ``sbatch`` ran) never shadows the installed package.
    """
    argv = [*module_argv("rexmle.runner.executor_slurm_node", settings.python), str(part_dir)]
    return (
        "#!/bin/sh\n"
        "# one rexmle run per array task; see rexmle/runner/executor_slurm.py\n"
        f"exec {shlex.join(argv)}\n"
    )


def _batch_payload(jobs: Sequence[RunJob], run: RunSettings) -> dict[str, object]:
    return {
        "settings": run.model_dump(mode="json"),
        "jobs": [
            {
                "config": job.config.model_dump(mode="json"),
                "group": job.group,
                "folder": str(job.folder),
                "experiment": job.experiment,
            }
            for job in jobs
        ],
    }


@dataclass(frozen=True)
class Submission:
    """The array jobs of one ``rexmle run``: their ids and each run's job id."""

    batch_dir: Path
    array_ids: list[str]
    job_ids: dict[Path, str]
    """Run folder -> ``<array id>_<index>``."""
    seconds: float
    """Wall time of the submission (writing the batch and calling sbatch)."""


def submit(
    jobs: Sequence[RunJob], settings: SlurmSettings, *, env: dict[str, str] | None = None
) -> Submission:
    """Submit ``jobs`` as array jobs (one per distinct time limit); write each run's
    ``scheduled.json``.

    Raises:
        SlurmError: sbatch is missing or refused the job (its message is kept).
    """
    started = time.perf_counter()
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    batch_dir = settings.run.runs_dir / ".slurm" / stamp
    batch_dir.mkdir(parents=True)
    run = settings.run
    if run.llm_config is not None:  # the node reads the copy: later edits change no running job
        copy = batch_dir / LLM_CONFIG_COPY
        shutil.copyfile(run.llm_config, copy)
        run = run.model_copy(update={"llm_config": copy})
    by_limit: dict[float, list[RunJob]] = {}
    for job in jobs:
        by_limit.setdefault(job.config.time_limit_s, []).append(job)
    array_ids: list[str] = []
    job_ids: dict[Path, str] = {}
    for part, (limit, part_jobs) in enumerate(sorted(by_limit.items())):
        part_dir = batch_dir / f"part-{part}"
        part_dir.mkdir(parents=True)
        (part_dir / BATCH_JSON).write_text(
            json.dumps(_batch_payload(part_jobs, run), indent=1), encoding="utf-8"
        )
        script = part_dir / "job.sh"
        script.write_text(batch_script(settings, part_dir), encoding="utf-8")
        options = sbatch_options(
            settings, n_runs=len(part_jobs), time_limit_s=limit, batch_dir=part_dir
        )
        out = _slurm(["sbatch", "--parsable", *options, str(script)], env=env)
        array_id = out.strip().split(";")[0]
        array_ids.append(array_id)
        submitted_at = datetime.now(UTC).isoformat(timespec="seconds")
        for index, job in enumerate(part_jobs):
            job_id = f"{array_id}_{index}"
            job_ids[job.folder] = job_id
            job.folder.mkdir(parents=True, exist_ok=True)
            previous = job.folder / "run.json"
            if previous.is_file():  # the old (failed or cancelled) record, kept beside the new
                previous.replace(job.folder / PREVIOUS_RUN_JSON)
            (job.folder / SCHEDULED_JSON).write_text(
                json.dumps(
                    {
                        "kind": "slurm",
                        "job_id": job_id,
                        "run_id": job.config.run_id(),
                        "batch": str(part_dir),
                        "submitted_at": submitted_at,
                    }
                ),
                encoding="utf-8",
            )
    return Submission(batch_dir, array_ids, job_ids, time.perf_counter() - started)


def job_states(job_ids: Iterable[str], *, env: dict[str, str] | None = None) -> dict[str, str]:
    """The Slurm state of each array task the controller still knows (``squeue -t all -r``)."""
    arrays = sorted({job_id.split("_")[0] for job_id in job_ids})
    if not arrays:
        return {}
    out = _slurm(
        ["squeue", "-h", "-r", "-t", "all", "-o", "%i %T", "-j", ",".join(arrays)], env=env
    )
    states: dict[str, str] = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2:
            states[parts[0]] = parts[1]
    return states


def _needs_attention(record: RunRecord | None, job_id: str) -> bool:
    """No record yet, or one left ``running`` by this very job (not by a local run)."""
    if record is None:
        return True
    scheduler = record.scheduler
    return record.status == "running" and scheduler is not None and scheduler.job_id == job_id


def mark_lost_jobs(folders: Iterable[Path], *, env: dict[str, str] | None = None) -> list[Path]:
    """Mark ``infra_error`` every run whose Slurm job is gone without a final record.

    A run counts as lost when its folder has ``scheduled.json``, its record is missing or still
    ``running``, and its job is not alive (unknown to the controller, or in a final state such
    as CANCELLED, FAILED, NODE_FAIL, OUT_OF_MEMORY, TIMEOUT). Returns the folders marked.
    """
    candidates = {}
    for folder in folders:
        job_id = scheduled_job(folder)
        if job_id is not None and _needs_attention(read_record(folder), job_id):
            candidates[folder] = job_id
    if not candidates:
        return []
    states = job_states(candidates.values(), env=env)
    lost: list[Path] = []
    for folder, job_id in candidates.items():
        state = states.get(job_id)
        if state in ALIVE_STATES:
            continue
        record = read_record(folder)  # read again: the job may have finished meanwhile
        if not _needs_attention(record, job_id):
            continue
        _write_lost(folder, job_id, state, record)
        lost.append(folder)
    return lost


def _write_lost(folder: Path, job_id: str, state: str | None, record: RunRecord | None) -> None:
    known = state or "no longer known to the controller"
    why = (
        f"the Slurm job {job_id} ended ({known}) without writing a final record: the job was "
        "killed, ran out of memory or time, or lost its node; see the job's slurm-*.out"
    )
    _write_ended(folder, job_id, "infra_error", why, record)


def _write_ended(
    folder: Path, job_id: str, status: RunStatus, why: str, record: RunRecord | None
) -> None:
    """Write the record of a run whose job ended without writing one (built from batch.json)."""
    from rexmle.records.runs import RunConfig

    now = datetime.now(UTC).isoformat(timespec="seconds")
    if record is None:
        batch = Path(json.loads((folder / SCHEDULED_JSON).read_text(encoding="utf-8"))["batch"])
        payload = json.loads((batch / BATCH_JSON).read_text(encoding="utf-8"))
        entry = next(j for j in payload["jobs"] if Path(j["folder"]) == folder)
        config = RunConfig.model_validate(entry["config"])
        record = RunRecord(
            run_id=config.run_id(),
            group=entry["group"],
            task=config.task,
            agent=config.agent.id,
            seed=config.seed,
            status=status,
            config=config,
            started_at=now,
            condition=config.condition,
            experiment=entry["experiment"],
            settings=RunSettings.model_validate(payload["settings"]).recorded(),
        )
    record.status = status
    record.error = why
    record.finished_at = now
    if record.scheduler is None:
        record.scheduler = SchedulerRecord(kind="slurm", job_id=job_id)
    write_record(folder, record)


def alive_folders(folders: Iterable[Path], *, env: dict[str, str] | None = None) -> set[Path]:
    """The run folders whose Slurm job is still alive (resume must not submit them again)."""
    scheduled = {folder: scheduled_job(folder) for folder in folders}
    known = {folder: job_id for folder, job_id in scheduled.items() if job_id is not None}
    if not known:
        return set()
    states = job_states(known.values(), env=env)
    return {folder for folder, job_id in known.items() if states.get(job_id) in ALIVE_STATES}


PENDING_STATES = frozenset({"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED"})
"""Alive states in which no harness runs yet (``scancel --batch`` never answers for them)."""


@dataclass(frozen=True)
class Cancelled:
    """What :func:`cancel_jobs` did: running jobs signalled, pending jobs removed."""

    signalled: list[str]
    """Running jobs whose harness got SIGTERM (it records its run ``cancelled``)."""
    removed: list[str]
    """Pending jobs cancelled in the queue (their runs recorded ``cancelled`` here)."""


def cancel_jobs(folders: Iterable[Path], *, env: dict[str, str] | None = None) -> Cancelled:
    """Cancel the alive jobs of ``folders``: pending and running ones alike, never hanging.

    A pending job is cancelled in the queue (``scancel --state=PENDING``, which leaves a job that
    started meanwhile alone) and its run is recorded ``cancelled`` here, as no harness will.
    A running job gets ``scancel --batch --signal=TERM``: only its harness gets SIGTERM, stops
    the agent or grader and records the run ``cancelled``. Cancelled runs run again.
    """
    scheduled = {f: job_id for f in folders if (job_id := scheduled_job(f)) is not None}
    states = job_states(scheduled.values(), env=env)
    alive = {f: j for f, j in scheduled.items() if states.get(j) in ALIVE_STATES}
    pending = {f: j for f, j in alive.items() if states.get(j) in PENDING_STATES}
    running = {f: j for f, j in alive.items() if f not in pending}
    removed: list[str] = []
    if pending:
        _slurm(["scancel", "--state=PENDING", *sorted(pending.values())], env=env)
        after = job_states(pending.values(), env=env)
        for folder, job_id in pending.items():
            if after.get(job_id) in ALIVE_STATES:  # it started in between: signal its harness
                running[folder] = job_id
                continue
            removed.append(job_id)
            record = read_record(folder)
            if _needs_attention(record, job_id):
                why = f"cancelled while queued (Slurm job {job_id}); this run will run again"
                _write_ended(folder, job_id, "cancelled", why, record)
    signalled = sorted(running.values())
    if signalled:
        _slurm(["scancel", "--batch", "--signal=TERM", *signalled], env=env)
    return Cancelled(signalled=signalled, removed=sorted(removed))


STUCK_REASONS = frozenset(
    {"PartitionConfig", "PartitionNodeLimit", "PartitionTimeLimit", "BadConstraints"}
)
"""Pending reasons that mean the job can never start as submitted (resources beyond any node)."""


def stuck_jobs(job_ids: Iterable[str], *, env: dict[str, str] | None = None) -> dict[str, str]:
    """Pending jobs that can never start as submitted, with Slurm's reason."""
    arrays = sorted({job_id.split("_")[0] for job_id in job_ids})
    if not arrays:
        return {}
    out = _slurm(["squeue", "-h", "-t", "PD", "-o", "%i %r", "-j", ",".join(arrays)], env=env)
    stuck = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1] in STUCK_REASONS:
            stuck[parts[0]] = parts[1]
    return stuck


def wait_for_runs(
    folders: Sequence[Path],
    *,
    poll_s: float = 5.0,
    env: dict[str, str] | None = None,
    on_done: Callable[[RunRecord], None] | None = None,
    on_stuck: Callable[[dict[str, str]], None] | None = None,
) -> list[RunRecord]:
    """Wait until every run in ``folders`` has ended (final or cancelled); their records.

    Every poll marks lost jobs (:func:`mark_lost_jobs`); ``on_done`` is called once per run as it
    ends, in the order they end; ``on_stuck`` once, with the jobs that can never start (job id ->
    Slurm's reason), when there are any.
    """
    ended: dict[Path, RunRecord] = {}
    warned = False
    while len(ended) < len(folders):
        left = [f for f in folders if f not in ended]
        mark_lost_jobs(left, env=env)
        if not warned and on_stuck is not None:
            ids = [job_id for f in left if (job_id := scheduled_job(f))]
            stuck = stuck_jobs(ids, env=env)
            if stuck:
                on_stuck(stuck)
                warned = True
        requeued = alive_folders(
            [f for f in left if (r := read_record(f)) is not None and r.status == "cancelled"],
            env=env,
        )
        for folder in left:
            record = read_record(folder)
            if record is None or folder in requeued:  # requeued: it runs again in this job
                continue
            if record.status in FINAL_STATUSES or record.status == "cancelled":
                ended[folder] = record
                if on_done is not None:
                    on_done(record)
        if len(ended) < len(folders):
            time.sleep(poll_s)
    return [ended[f] for f in folders]
