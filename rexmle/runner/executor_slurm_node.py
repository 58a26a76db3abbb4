"""The node side of the Slurm executor: ``python -m rexmle.runner.executor_slurm_node PART_DIR``.

Started by an array task's batch script (it replaces the batch shell, so it receives
``--signal=B:TERM`` and ``scancel --batch``). Reads ``PART_DIR/batch.json`` (plain JSON written at
submission), picks the run of ``$SLURM_ARRAY_TASK_ID``, rebuilds the run settings and calls
:func:`rexmle.runner.executor.execute_run`, the same code as the local executor. SIGTERM stops the
agent and the run is recorded ``cancelled`` (it runs again). An LLM agent's run gets its own LLM
gateway on the node (the built-in LLM config, the run's budget; provider keys from the job's
environment). The GPUs are the ones Slurm gave the
job (``CUDA_VISIBLE_DEVICES``); the job id (``<array>_<index>``) and node go into run.json.

Exit status: 0 when the run ended with a result or was cancelled, 1 on ``infra_error``, 2 when the
batch file or the Slurm variables are unusable.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from types import FrameType

from rexmle.runner.executor import RunJob, RunOptions, execute_run, remove_leftovers
from rexmle.runner.executor_slurm import BATCH_JSON
from rexmle.runner.records import RunConfig, SchedulerRecord


def _job_from(part_dir: Path, index: int) -> tuple[RunJob, RunOptions]:
    from rexmle.runner.sandbox import choose_sandbox

    payload = json.loads((part_dir / BATCH_JSON).read_text(encoding="utf-8"))
    entry = payload["jobs"][index]
    settings = payload["settings"]
    job = RunJob(
        config=RunConfig.model_validate(entry["config"]),
        group=entry["group"],
        folder=Path(entry["folder"]),
        experiment=entry["experiment"],
    )
    options = RunOptions(
        runs_dir=Path(settings["runs_dir"]),
        data_dir=Path(settings["data_dir"]),
        sandbox=choose_sandbox(settings["sandbox"]),
        kill_grace_s=float(settings["kill_grace_s"]),
        grade_workers=settings["grade_workers"],
        keep_data=bool(settings["keep_data"]),
    )
    return job, options


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
        job, options = _job_from(Path(args[0]), int(index_text))
    except (OSError, ValueError, KeyError, IndexError, RuntimeError) as error:
        sys.stderr.write(f"cannot read the run of array task {index_text}: {error}\n")
        return 2

    def stop(_signum: int, _frame: FrameType | None) -> None:
        options.cancel.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    array_id = os.environ.get("SLURM_ARRAY_JOB_ID") or os.environ.get("SLURM_JOB_ID", "?")
    gpus = os.environ.get("CUDA_VISIBLE_DEVICES") or None
    scheduler = SchedulerRecord(
        kind="slurm",
        job_id=f"{array_id}_{index_text}",
        node=os.environ.get("SLURMD_NODENAME"),
        gpus=gpus,
    )
    from rich.console import Console

    from rexmle.errors import RexmleError
    from rexmle.llm.run_setup import plan_gateway, running_gateway

    remove_leftovers(Console(stderr=True))
    try:
        gateway = plan_gateway(job.config.agent, None, every_run=False)
        with running_gateway(gateway, [job], Console(stderr=True)) as started:
            options.gateway = started
            record = execute_run(job, options, gpu=gpus, scheduler=scheduler)
    except RexmleError as error:
        sys.stderr.write(f"the LLM gateway could not start: {error}\n")
        return 2
    sys.stdout.write(f"{job.label}: {record.status}\n")
    return 1 if record.status == "infra_error" else 0


if __name__ == "__main__":
    sys.exit(main())
