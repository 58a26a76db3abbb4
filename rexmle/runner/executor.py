"""Execute runs: one run end to end (:func:`execute_run`) and a local pool (:func:`run_jobs`).

One run: record ``running`` -> fresh workspace -> validation server -> agent in the sandbox
under its time limit -> copy of ``submission/`` -> grading in a separate process
(``python -m rexmle.cli grade ... --json grade.json``) -> final record. Statuses:

- ``infra_error``: the harness failed (workspace, sandbox start, grader exit 2 or a grader crash);
  never the agent's fault, always retried with ``--retry-failed``.
- ``timeout``: the agent hit its limit; what ``submission/`` held then is still graded.
- ``agent_error``: the agent exited non-zero (its submission, if any, is still graded).
- ``invalid_submission``: the agent finished, the grader found the submission invalid
  (reasons in grade.json).
- ``completed``: the agent finished and its submission was graded.
- ``budget_exceeded``: the LLM gateway refused the run's calls (budget spent or rate cap) and
  the harness stopped the agent; what ``submission/`` held then is graded. A gateway that
  exits during the run makes it an ``infra_error``.
- ``cancelled``: the harness was stopped (Ctrl-C, SIGTERM, a Slurm ``scancel``, preemption or
  time-limit signal) while the agent ran or while it was graded; not final, the run runs again.
  A stop signal sent to a whole Slurm job reaches the agent and the grader too: a child that
  dies of it within a moment of the harness's stop is part of the stop, not a failure.

The pool runs up to ``concurrency`` runs at once in threads (each run's work happens in child
processes); with GPUs, each run holds one GPU slot and sees only it (CUDA_VISIBLE_DEVICES).
"""

from __future__ import annotations

import contextlib
import queue
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from rexmle.agents.llm_launch import OUTPUT_DIR as LLM_OUTPUT_DIR
from rexmle.agents.llm_launch import prepare_launch
from rexmle.agents.registry import AgentSpec
from rexmle.errors import RexmleError
from rexmle.grading.report import GradeReport, read_grade_report
from rexmle.llm.gateway import Gateway, RunLink, strip_provider_keys
from rexmle.processes import stop_process_group
from rexmle.records.runs import (
    DeviationRecord,
    GradeSummary,
    RunConfig,
    RunRecord,
    RunStatus,
    SandboxRecord,
    SchedulerRecord,
    hardware,
    package_versions,
    read_record,
    write_record,
)
from rexmle.runner.agent_code import (
    AGENT_DIR_VARIABLE,
    SNAPSHOT_DIR,
    AgentDirError,
    snapshot_note,
    take_snapshot,
)
from rexmle.runner.deviations import deviations_of
from rexmle.runner.leftovers import SocketDir, remove_stale_socket_dirs
from rexmle.runner.limits import limited_argv, module_argv
from rexmle.runner.llm_cost import enforced_limits
from rexmle.runner.run_lock import RunLocked, run_folder_lock
from rexmle.runner.run_texts import prepare_run_texts
from rexmle.runner.sandbox import (
    Relay,
    Sandbox,
    SandboxLimits,
    SandboxRequest,
    SandboxResult,
    recorded_limits,
)
from rexmle.runner.sandbox.cgroups import remove_stale_cgroups
from rexmle.runner.sandbox.shim import unix_bridge
from rexmle.runner.settings import RunSettings
from rexmle.runner.trees import strip_special_bits
from rexmle.runner.validation_server import ValidationServer
from rexmle.runner.workspace import agent_env, build_workspace, collect_submission, remove_tree

EXIT_NOT_IMPLEMENTED = 3
"""Exit code of ``python -m rexmle.agents.baseline`` for a task without a baseline solver."""
GRADE_INVALID = 1
HARNESS_PACKAGE_KINDS = frozenset({"baseline", "dummy", "llm", "command"})
"""Agent kinds the sandbox shows the harness package to, read-only: those whose programs import
``rexmle``, and command agents, whose ``data/score.py`` runs the grader's metric code from it.
The package holds code and public leaderboards only; the data and runs roots stay hidden."""
GRADE_HARNESS_ERROR = 2
GRADER_POLL_S = 0.2
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGKILL, signal.SIGHUP)
STOP_EXIT_CODES = frozenset({-int(n) for n in STOP_SIGNALS} | {128 + int(n) for n in STOP_SIGNALS})
"""Exit codes of a process killed by a stop signal (``-N`` from Python, ``128+N`` from a shell)."""
STOP_SIGNAL_GRACE_S = 2.0
"""How long a child's death by a stop signal waits for the harness's own stop (see
:func:`_harness_stopped`)."""


@dataclass(frozen=True)
class RunJob:
    """One run to execute: its config, group and folder."""

    config: RunConfig
    group: str
    folder: Path
    experiment: str | None = None
    """The experiment file's name, when the run comes from one."""

    @property
    def label(self) -> str:
        """``task / agent / seed-k`` for progress lines."""
        return f"{self.config.task} / {self.config.agent.id} / seed-{self.config.seed}"


@dataclass
class RunOptions:
    """What the runs of one ``rexmle run`` share: the settings and the live objects."""

    settings: RunSettings
    sandbox: Sandbox
    cancel: threading.Event = field(default_factory=threading.Event)
    """Set when the harness is stopped (Ctrl-C, SIGTERM, a Slurm signal): the runs end
    ``cancelled``."""
    gateway: Gateway | None = None
    """The LLM gateway of this ``rexmle run``; runs that need LLMs get a token and a relay."""
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    """tmpfs sizes, process limit and log caps of every agent (recorded in run.json)."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


GRADE_PARTIAL = "grade.json.partial"
"""The grader writes here; the harness renames it to grade.json once the exit code agrees."""


class GradingStopped(Exception):
    """The harness was stopped while the grader ran: the grader is killed, the run cancelled."""


def _run_grader(argv: list[str], log_path: Path, options: RunOptions) -> int | None:
    """Run the grader in a session of its own; its exit code, None when it ran out of time.

    Its own session keeps a terminal's Ctrl-C away from it: the harness decides. When the
    harness is stopped (``options.cancel``) the grader gets SIGTERM, then SIGKILL after the kill
    grace, and :class:`GradingStopped` is raised.
    """
    deadline = time.monotonic() + options.settings.grade_timeout_s
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            limited_argv(argv, memory_bytes=options.settings.grade_memory_bytes),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            while True:
                try:
                    code = process.wait(timeout=GRADER_POLL_S)
                except subprocess.TimeoutExpired:
                    pass
                else:
                    if code != 0 and _harness_stopped(options, code):
                        raise GradingStopped
                    return code
                if options.cancel.is_set():
                    raise GradingStopped
                if time.monotonic() >= deadline:
                    return None
        finally:
            stop_process_group(process, options.settings.kill_grace_s)


def _harness_stopped(options: RunOptions, exit_code: int | None) -> bool:
    """Whether the harness was stopped: its cancel event is set, or is set within
    :data:`STOP_SIGNAL_GRACE_S` after a child died of a stop signal.

    A signal to a whole Slurm job (plain ``scancel``, preemption) reaches every process of the
    job at once: the agent or grader may die of it a moment before the harness's own handler
    runs. Such a death is the harness's stop, not the child's failure.
    """
    if options.cancel.is_set():
        return True
    if exit_code is None or exit_code not in STOP_EXIT_CODES:
        return False
    return options.cancel.wait(STOP_SIGNAL_GRACE_S)


def _grade(job: RunJob, options: RunOptions, submission: Path) -> tuple[GradeSummary, str | None]:
    """Grade in a separate process; returns the summary and a harness problem (or None).

    The grader runs under its own memory limit and is killed when this process dies
    (:mod:`rexmle.runner.limits`). It writes ``grade.json.partial``; only this process renames it
    to ``grade.json``, after checking it, so a grader outliving its harness never writes a grade.

    Raises:
        GradingStopped: the harness was stopped while the grader ran.
    """
    grade_json = job.folder / "grade.json"
    partial = job.folder / GRADE_PARTIAL
    grade_json.unlink(missing_ok=True)
    partial.unlink(missing_ok=True)
    argv = [
        *module_argv("rexmle.cli"),
        "grade",
        job.config.task,
        str(submission),
        "--data-dir",
        str(options.settings.data_dir),
        "--json",
        str(partial),
    ]
    if options.settings.grade_workers is not None:
        argv += ["--workers", str(options.settings.grade_workers)]
    code = _run_grader(argv, job.folder / "grade.log", options)
    if code is None:
        problem = f"grading took longer than {options.settings.grade_timeout_s:g} s"
        return GradeSummary(valid=False, grader_exit_code=None), problem
    report: GradeReport | None = None
    if partial.is_file():
        try:
            report = read_grade_report(partial)
        except RexmleError:
            report = None  # a grader that wrote no complete report failed: said below
    summary = GradeSummary(valid=False, grader_exit_code=code)
    expected_valid = {0: True, GRADE_INVALID: False}
    if code not in expected_valid or report is None or report.valid != expected_valid[code]:
        tail = (job.folder / "grade.log").read_text(encoding="utf-8", errors="replace")[-2000:]
        problem = f"the grader failed (exit {code}); grade.log ends with:\n{tail}"
        return summary, problem
    partial.replace(grade_json)
    if not report.valid:
        return summary, None
    return (
        GradeSummary(
            valid=True,
            grader_exit_code=code,
            headline_key=report.headline_key,
            headline_value=report.headline_value,
            percentile=report.ranking.percentile,
            medal=report.ranking.medal,
        ),
        None,
    )


def _write_overlays(job: RunJob, options: RunOptions, submission: Path) -> None:
    """Overlay images of a graded segmentation run, drawn from the private gold into the run
    folder (``overlays/``, never the workspace; :mod:`rexmle.report.overlays`). A failure is
    written to ``overlays/error.txt`` and leaves the run's status alone.
    """
    from rexmle.report.overlays import OVERLAY_DIR, write_overlays
    from rexmle.tasks.folders import task_dirs

    gold = task_dirs(job.config.task, options.settings.data_dir).gold
    try:
        write_overlays(job.config.task, submission, gold, job.folder)
    except (OSError, ValueError, KeyError, TypeError, IndexError, RexmleError) as error:
        # a valid submission the drawing code did not foresee: recorded, the grade stands
        target = job.folder / OVERLAY_DIR
        target.mkdir(exist_ok=True)
        (target / "error.txt").write_text(f"{type(error).__name__}: {error}\n", encoding="utf-8")


def _clean(folder: Path) -> None:
    for name in ("agent.stdout.log", "agent.stderr.log", "grade.json", GRADE_PARTIAL, "grade.log"):
        (folder / name).unlink(missing_ok=True)
    for name in ("submission", "workspace", LLM_OUTPUT_DIR, "overlays", SNAPSHOT_DIR):
        remove_tree(folder / name)


def _agent_command(
    job: RunJob,
    workspace: Path,
    validation_url: str,
    env: dict[str, str],
    texts: dict[str, object] | None = None,
) -> tuple[list[str], tuple[Path, ...], dict[str, str | None] | None]:
    """The agent's argv, extra read-only folders and ``agent_env`` record (llm agents).

    For an llm agent the adapter config is written into the workspace first (``texts``: the
    entries of :meth:`~rexmle.runner.run_texts.RunTexts.adapter_config`).
    """
    spec = job.config.agent
    if spec.kind != "llm":
        return spec.argv(), (), None
    launch = prepare_launch(
        spec,
        workspace,
        task_id=job.config.task,
        seed=job.config.seed,
        time_limit_s=job.config.time_limit_s,
        validation_url=validation_url,
        gpu_names=[str(g) for g in hardware().get("gpus", [])],  # type: ignore[attr-defined]
        cuda_visible_devices=env.get("CUDA_VISIBLE_DEVICES"),
        extra=texts,
    )
    return launch.argv, launch.readonly, launch.record.model_dump()


def _collect_agent_output(workspace: Path, folder: Path) -> None:
    """Move what an llm agent's adapter collected (logs, journal, code) into the run folder."""
    source = workspace / LLM_OUTPUT_DIR
    if source.is_dir() and not source.is_symlink():
        remove_tree(folder / LLM_OUTPUT_DIR)
        shutil.move(str(source), str(folder / LLM_OUTPUT_DIR))


def _agent_status(result: SandboxResult, kind: str) -> tuple[RunStatus | None, str | None]:
    """Status and note from how the agent ended (None: it finished normally)."""
    if result.error is not None:
        return "infra_error", result.error
    if result.timed_out:
        return "timeout", f"time limit reached after {result.seconds:.1f} s"
    if result.exit_code != 0:
        if kind == "baseline" and result.exit_code == EXIT_NOT_IMPLEMENTED:
            return "agent_error", "not implemented: the task has no baseline solver yet"
        return "agent_error", f"the agent exited with code {result.exit_code}"
    return None, None


def _needs_gateway(job: RunJob, options: RunOptions) -> bool:
    spec = job.config.agent
    return options.gateway is not None and (
        options.settings.llm_for_every_run or spec.kind == "llm" or spec.llm_gateway
    )


GATEWAY_SOCKET = "gateway.sock"
"""The unix socket in a run's socket folder that relays the sandbox's gateway port."""


@contextlib.contextmanager
def _llm_link(
    job: RunJob, options: RunOptions, socket_dir: Path
) -> Iterator[tuple[RunLink, Relay] | tuple[None, None]]:
    """The run's gateway link and the relay that bridges its port into the sandbox."""
    if options.gateway is None or not _needs_gateway(job, options):
        yield None, None
        return
    limits = enforced_limits(job.config, options.gateway.config.limits)
    with options.gateway.open_run(
        job.config.run_id(), job.folder, cancel=options.cancel, limits=limits
    ) as link:
        relay = Relay(link.port, socket_dir / GATEWAY_SOCKET)
        with unix_bridge(relay.socket, relay.port):
            yield link, relay


def _agent_code(job: RunJob, options: RunOptions, env: dict[str, str]) -> Path | None:
    """The read-only snapshot of the agent's own code, with ``$AGENT_DIR`` set in ``env``
    (None, and no ``$AGENT_DIR``, for an agent without one).

    Raises:
        AgentCodeChanged: the folder's content is not the planned one.
        AgentDirError: the folder cannot be shipped any more, or the sandbox cannot hold it
            read-only here.
    """
    env.pop(AGENT_DIR_VARIABLE, None)
    spec = job.config.agent
    if spec.dir is None:
        return None
    if spec.dir_sha256 is None:
        msg = f"agent {spec.id!r} has a code folder but no content hash (plan it with make_job)"
        raise AgentDirError(msg)
    problem = options.sandbox.agent_code_problem()
    if problem is not None:
        raise AgentDirError(problem)
    snapshot = take_snapshot(
        Path(spec.dir), job.folder / SNAPSHOT_DIR, expected_sha256=spec.dir_sha256
    )
    env[AGENT_DIR_VARIABLE] = options.sandbox.agent_dir_path(snapshot)
    return snapshot


def _run_deviations(
    job: RunJob, options: RunOptions, texts_problem: str | None
) -> list[DeviationRecord]:
    """How the run differs from the published study (:mod:`rexmle.runner.deviations`)."""
    limits = None
    if options.gateway is not None and _needs_gateway(job, options):
        limits = enforced_limits(job.config, options.gateway.config.limits)
    return deviations_of(
        job.config,
        limits,
        texts_problem=texts_problem,
        sandbox=options.sandbox.kind,
        llm_config=None if options.gateway is None else options.gateway.config,
    )


def _image_for(agent: AgentSpec, sandbox_kind: str) -> str | None:
    """The agent's image for the container sandboxes (None for the others)."""
    if sandbox_kind not in ("docker", "apptainer"):
        return None
    from rexmle.runner.sandbox.docker import agent_image

    adapter = agent.llm.adapter if agent.llm is not None else None
    return agent_image(agent.id, adapter, apptainer=sandbox_kind == "apptainer")


def execute_run(
    job: RunJob,
    options: RunOptions,
    *,
    gpu: str | None = None,
    scheduler: SchedulerRecord | None = None,
) -> RunRecord:
    """Run one agent on one task and seed, grade it, and write its record (see module doc).

    The run folder is locked for the whole run (:mod:`rexmle.runner.run_lock`): when another
    process runs the same job, nothing is touched and the record on disk comes back with
    ``error`` saying the run was skipped. ``scheduler`` says which cluster job runs it (recorded
    in run.json), when one does.
    """
    try:
        with run_folder_lock(job.folder):
            return _execute_locked(job, options, gpu=gpu, scheduler=scheduler)
    except RunLocked as locked:
        record = read_record(job.folder) or _new_record(job, options, scheduler)
        record.error = f"skipped: {locked}"
        return record


def _new_record(
    job: RunJob, options: RunOptions, scheduler: SchedulerRecord | None = None
) -> RunRecord:
    config = job.config
    sandbox_info = options.sandbox.info(network=config.agent.network)
    return RunRecord(
        run_id=config.run_id(),
        group=job.group,
        task=config.task,
        agent=config.agent.id,
        seed=config.seed,
        status="running",
        config=config,
        started_at=_now(),
        sandbox=SandboxRecord(
            kind=sandbox_info.kind,
            isolated=sandbox_info.isolated,
            network_isolated=sandbox_info.network_isolated,
            warnings=sandbox_info.warnings,
            network=sandbox_info.network,
            limits=recorded_limits(options.limits, sandbox_info.kind),
        ),
        hardware=hardware(),
        versions=package_versions(),
        scheduler=scheduler,
        condition=config.condition,
        experiment=job.experiment,
        settings=options.settings.recorded(),
        selection=None if config.agent.llm is None else config.agent.llm.selection,
    )


def _execute_locked(
    job: RunJob, options: RunOptions, *, gpu: str | None, scheduler: SchedulerRecord | None
) -> RunRecord:
    config = job.config
    started = time.perf_counter()
    record = _new_record(job, options, scheduler)
    job.folder.mkdir(parents=True, exist_ok=True)
    job.folder.chmod(0o700)  # other users never reach what the agent left there
    _clean(job.folder)
    write_record(job.folder, record)
    timings: dict[str, float] = {}
    claimed_socket_dir = SocketDir()
    socket_dir = claimed_socket_dir.path
    try:
        from rexmle.tasks.folders import require_prepared, task_dirs

        dirs = task_dirs(config.task, options.settings.data_dir)
        require_prepared(config.task, dirs)
        server = ValidationServer(
            config.task,
            data_dir=options.settings.data_dir,
            socket_dir=socket_dir,
            max_upload_bytes=options.settings.max_upload_bytes,
            max_requests_per_minute=options.settings.max_requests_per_minute,
            memory_bytes=options.settings.validation_memory_bytes,
        )
        with server:
            workspace = build_workspace(
                job.folder / "workspace",
                task_id=config.task,
                public_dir=dirs.public,
                time_limit_s=config.time_limit_s,
                validation={
                    "url": server.url,
                    "max_upload_bytes": options.settings.max_upload_bytes,
                    "max_requests_per_minute": options.settings.max_requests_per_minute,
                },
                data_mode="link" if options.sandbox.kind == "bwrap" else "copy",
            )
            record.data_mode = workspace.data_mode
            texts = prepare_run_texts(workspace.root, workspace.instructions, config)
            record.deviations = _run_deviations(job, options, texts.texts_problem)
            write_record(job.folder, record)
            timings["workspace"] = time.perf_counter() - started
            env = agent_env(
                workspace,
                task_id=config.task,
                seed=config.seed,
                time_limit_s=config.time_limit_s,
                validation_url=server.url,
                pass_env=config.agent.env,
                cuda_visible_devices=gpu,
            )
            strip_provider_keys(env, options.gateway)
            agent_code = _agent_code(job, options, env)
            socket_path = server.socket_path
            relays = [] if socket_path is None else [Relay(server.port, socket_path)]
            with _llm_link(job, options, socket_dir) as (link, gateway_relay):
                if link is not None and gateway_relay is not None:
                    env.update(link.env)
                    relays.append(gateway_relay)
                argv, readonly, record.agent_env = _agent_command(
                    job, workspace.root, server.url, env, texts.adapter_config()
                )
                request = SandboxRequest(
                    argv=argv,
                    readonly=readonly,
                    env=env,
                    workspace=workspace.root,
                    stdout_path=job.folder / "agent.stdout.log",
                    stderr_path=job.folder / "agent.stderr.log",
                    time_limit_s=config.time_limit_s,
                    memory_limit_mb=config.agent.memory_limit_mb,
                    network=config.agent.network,
                    hidden=(options.settings.data_dir, options.settings.runs_dir),
                    shared_writable=(socket_dir,),
                    relays=tuple(relays),
                    kill_grace_s=options.settings.kill_grace_s,
                    cancel=options.cancel if link is None else link.stop,
                    limits=options.limits,
                    harness_package=config.agent.kind in HARNESS_PACKAGE_KINDS,
                    image=_image_for(config.agent, options.sandbox.kind),
                    agent_code=agent_code,
                )
                result = options.sandbox.run(request)
                llm_stop = None if link is None else link.stopped_reason()
                llm_failure = None if link is None else link.check_gateway()
                if link is not None:
                    record.llm = link.totals()
            record.validation_requests = server.n_requests
        strip_special_bits(workspace.root)
        if agent_code is not None and record.sandbox is not None:
            note = snapshot_note(agent_code, str(config.agent.dir_sha256))
            record.sandbox.warnings += [note] if note else []
        timings["agent"] = result.seconds
        record.exit_code = result.exit_code
        record.killed_processes = result.killed_processes
        if result.limits is not None and record.sandbox is not None:
            record.sandbox.limits = {**(record.sandbox.limits or {}), **result.limits}
        stopped = result.cancelled or _harness_stopped(options, result.exit_code)
        if stopped and llm_stop is None:
            return _write_cancelled(job, record, timings, started, "while the agent ran")
        record.submission_notes = collect_submission(
            workspace.submission, job.folder / "submission"
        )
        _collect_agent_output(workspace.root, job.folder)
        remove_tree(workspace.submission)
        if not options.settings.keep_data:
            remove_tree(workspace.data)
        status, note = _agent_status(result, config.agent.kind)
        if llm_stop is not None:
            status, note = "budget_exceeded", f"stopped by the LLM gateway: {llm_stop}"
        if llm_failure is not None:
            status, note = "infra_error", llm_failure
        has_csv = (job.folder / "submission" / "submission.csv").exists()
        if status != "infra_error" and (status is None or has_csv):
            grade_started = time.perf_counter()
            try:
                record.grade, problem = _grade(job, options, job.folder / "submission")
            except GradingStopped:
                return _write_cancelled(job, record, timings, started, "while grading")
            timings["grade"] = time.perf_counter() - grade_started
            if problem is None and record.grade.valid:
                _write_overlays(job, options, job.folder / "submission")
            if problem is not None:
                status, note = "infra_error", problem
            elif status is None:
                status = "completed" if record.grade.valid else "invalid_submission"
        record.status = status or "completed"
        record.error = note
    except (OSError, RexmleError, subprocess.SubprocessError) as error:
        if options.cancel.is_set():  # a helper died of the stop signal the harness also got
            return _write_cancelled(job, record, timings, started, f"({type(error).__name__})")
        record.status = "infra_error"
        record.error = f"{type(error).__name__}: {error}"
    finally:
        claimed_socket_dir.release()
        remove_tree(job.folder / SNAPSHOT_DIR)
    return _finish(job, record, timings, started)


def _finish(job: RunJob, record: RunRecord, timings: dict[str, float], started: float) -> RunRecord:
    """Write the run's last record (total time, end time) and return it."""
    timings["total"] = time.perf_counter() - started
    record.timings_s = {k: round(v, 3) for k, v in timings.items()}
    record.finished_at = _now()
    write_record(job.folder, record)
    return record


def _write_cancelled(
    job: RunJob, record: RunRecord, timings: dict[str, float], started: float, when: str
) -> RunRecord:
    """Record the run ``cancelled``: the harness was stopped (it runs again; no grade kept)."""
    record.status = "cancelled"
    record.grade = None
    record.error = f"cancelled {when}: the harness was stopped; this run will run again"
    (job.folder / "grade.json").unlink(missing_ok=True)
    (job.folder / GRADE_PARTIAL).unlink(missing_ok=True)
    return _finish(job, record, timings, started)


def describe_record(record: RunRecord, folder: Path | None = None) -> str:
    """The status of a finished run with its headline value or its error, for progress lines."""
    colour = {"completed": "green", "invalid_submission": "yellow", "timeout": "yellow"}.get(
        record.status, "red"
    )
    text = f"[{colour}]{record.status}[/]"
    grade = record.grade
    if grade is not None and grade.valid and grade.headline_key is not None:
        text += f"  {grade.headline_key}={grade.headline_value:.4g}  pct={grade.percentile:.3f}"
    if record.error and record.status != "completed":
        text += f"  ({record.error.splitlines()[0]})"
    if folder is not None:
        text += _failure_note(record, folder)
    return text


def _failure_note(record: RunRecord, folder: Path) -> str:
    """Why an invalid or crashed run failed: the first grader reason, or the crash class."""
    from rich.markup import escape

    if record.status == "invalid_submission":
        grade = load_grade(folder)
        reasons = [] if grade is None else grade.reasons
        if reasons:
            more = f" (+{len(reasons) - 1} more in grade.json)" if len(reasons) > 1 else ""
            return f"  reason: {escape(str(reasons[0]).splitlines()[0][:300])}{more}"
    if record.status == "agent_error":
        from rexmle.analysis.taxonomy import crash_class, stderr_tail

        kind, line = crash_class(stderr_tail(folder))
        return f"  crash: {escape(kind)}" + (f" — {escape(line)}" if line else "")
    return ""


def remove_leftovers(console: Console) -> None:
    """Remove what killed harnesses left behind (socket folders, run cgroups, the sandbox's
    copies of the environment), saying so.
    """
    from rexmle.runner.sandbox.neutral_env import remove_stale_env_copies

    leftovers = [*remove_stale_socket_dirs(), *remove_stale_cgroups(), *remove_stale_env_copies()]
    for stale in leftovers:
        console.print(f"removed the leftover {stale} of a killed run", highlight=False)


def run_jobs(
    jobs: Sequence[RunJob],
    options: RunOptions,
    *,
    concurrency: int = 1,
    gpus: Sequence[str] = (),
    console: Console | None = None,
    on_done: Callable[[RunRecord], None] | None = None,
) -> list[RunRecord]:
    """Execute ``jobs`` in a local pool; returns their records in the order given.

    With ``gpus``, at most one run per GPU at a time. Ctrl-C (KeyboardInterrupt) stops every
    running agent, leaves their records ``running`` (they run again next time) and re-raises.
    """
    console = console or Console(stderr=True)
    remove_leftovers(console)
    slots: queue.Queue[str | None] = queue.Queue()
    if gpus:
        concurrency = min(concurrency, len(gpus))
        for gpu in gpus:
            slots.put(gpu)
    else:
        for _ in range(concurrency):
            slots.put(None)
    records: dict[int, RunRecord] = {}
    progress = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )

    def work(index: int, job: RunJob, overall: TaskID) -> RunRecord:
        slot = slots.get()
        row = progress.add_task(
            f"  running {job.label}" + (f" [gpu {slot}]" if slot else ""), total=None
        )
        try:
            record = execute_run(job, options, gpu=slot)
        finally:
            slots.put(slot)
            progress.remove_task(row)
        records[index] = record
        progress.advance(overall)
        progress.console.print(
            f"{job.label}: {describe_record(record, job.folder)}", highlight=False
        )
        if on_done is not None:
            on_done(record)
        return record

    with progress, ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        overall = progress.add_task("runs", total=len(jobs))
        futures: list[Future[RunRecord]] = [
            pool.submit(work, i, job, overall) for i, job in enumerate(jobs)
        ]
        pending = set(futures)
        try:
            while pending:
                _, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
        except KeyboardInterrupt:
            options.cancel.set()
            for future in futures:
                future.cancel()
            wait(futures)
            raise
        for future in futures:
            future.result()
    return [records[i] for i in range(len(jobs))]


def load_grade(folder: Path) -> GradeReport | None:
    """The run's grade.json, or None when there is none or it is not a grade report."""
    path = folder / "grade.json"
    if not path.is_file():
        return None
    try:
        return read_grade_report(path)
    except RexmleError:
        return None
