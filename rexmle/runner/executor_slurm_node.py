"""The node side of the Slurm executor: ``python -P -m rexmle.runner.executor_slurm_node PART_DIR``.

Started by an array task's batch script (it replaces the batch shell, so it receives
``--signal=B:TERM`` and ``scancel --batch``). Reads ``PART_DIR/batch.json`` (plain JSON written at
submission): the run of ``$SLURM_ARRAY_TASK_ID`` and the whole
:class:`~rexmle.runner.settings.RunSettings` of the submission (sandbox kind, kill grace, grading
and validation limits, validation caps, the LLM config file copied into the batch folder, budget
and rate cap), then calls :func:`rexmle.runner.executor.execute_run`, the same code as the local
executor. SIGTERM or SIGINT, to the harness alone or to the whole job (plain ``scancel``,
preemption, the time-limit signal), stops the agent or the grader and the run is recorded
``cancelled`` (it runs again). A run that needs LLMs gets its own gateway on the node, built from
the same settings (provider keys from the job's environment). The GPUs are the ones Slurm gave the
job (``CUDA_VISIBLE_DEVICES``); the job id (``<array>_<index>``), node and restart count
(``SLURM_RESTART_COUNT``, after a requeue) go into run.json.

Exit status: 0 when the run ended with a result or was cancelled, 1 on ``infra_error``, 2 when the
batch file or the Slurm variables are unusable, or the gateway cannot start.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from types import FrameType

from pydantic import ValidationError

from rexmle.records.runs import RunConfig, SchedulerRecord
from rexmle.runner.executor import RunJob, RunOptions, execute_run, remove_leftovers
from rexmle.runner.executor_slurm import BATCH_JSON
from rexmle.runner.settings import RunSettings


def read_batch_entry(part_dir: Path, index: int) -> tuple[RunJob, RunSettings]:
    """The run of array task ``index`` and the submission's settings, from ``batch.json``.

    Raises:
        OSError, ValueError, KeyError, IndexError: the file is missing or not a batch file.
    """
    payload = json.loads((part_dir / BATCH_JSON).read_text(encoding="utf-8"))
    entry = payload["jobs"][index]
    job = RunJob(
        config=RunConfig.model_validate(entry["config"]),
        group=entry["group"],
        folder=Path(entry["folder"]),
        experiment=entry["experiment"],
    )
    return job, RunSettings.model_validate(payload["settings"])


def scheduler_record(index: str) -> SchedulerRecord:
    """Where Slurm runs this array task: job id, node, GPUs and restart count."""
    array_id = os.environ.get("SLURM_ARRAY_JOB_ID") or os.environ.get("SLURM_JOB_ID", "?")
    return SchedulerRecord(
        kind="slurm",
        job_id=f"{array_id}_{index}",
        node=os.environ.get("SLURMD_NODENAME"),
        gpus=os.environ.get("CUDA_VISIBLE_DEVICES") or None,
        restart_count=int(os.environ.get("SLURM_RESTART_COUNT") or 0),
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point (see the module docstring)."""
    args = list(sys.argv[1:] if argv is None else argv)
    index_text = os.environ.get("SLURM_ARRAY_TASK_ID")
    if len(args) != 1 or index_text is None:
        sys.stderr.write(
            "usage: python -m rexmle.runner.executor_slurm_node PART_DIR "
            "(inside a Slurm array task: SLURM_ARRAY_TASK_ID must be set)\n"
        )
        return 2
    try:
        job, settings = read_batch_entry(Path(args[0]), int(index_text))
    except (OSError, ValueError, KeyError, IndexError, ValidationError) as error:
        sys.stderr.write(f"cannot read the run of array task {index_text}: {error}\n")
        return 2
    from rich.console import Console

    from rexmle.errors import RexmleError
    from rexmle.runner.executors import batch_gateway
    from rexmle.runner.gateway_setup import running_gateway
    from rexmle.runner.sandbox import choose_sandbox

    try:
        options = RunOptions(settings=settings, sandbox=choose_sandbox(settings.sandbox))
        gateway = batch_gateway([job], settings)
    except (RexmleError, RuntimeError) as error:
        sys.stderr.write(f"the run cannot start on this node: {error}\n")
        return 2

    def stop(_signum: int, _frame: FrameType | None) -> None:
        options.cancel.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    scheduler = scheduler_record(index_text)

    remove_leftovers(Console(stderr=True))
    try:
        with running_gateway(gateway, [job], Console(stderr=True)) as started:
            options.gateway = started
            record = execute_run(job, options, gpu=scheduler.gpus, scheduler=scheduler)
    except RexmleError as error:
        sys.stderr.write(f"the LLM gateway could not start: {error}\n")
        return 2
    sys.stdout.write(f"{job.label}: {record.status}\n")
    return 1 if record.status == "infra_error" else 0


if __name__ == "__main__":
    sys.exit(main())
