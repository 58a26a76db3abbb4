"""The state of a runs folder: how many runs are in each status, and when the rest should end.

A run is counted by its ``run.json``; a run handed to a cluster scheduler that has not started
yet has only its ``scheduled.json`` (written at submission) and counts as ``queued``. Given the
scheduler's job states (``job_states``), a run the files call queued or running is counted by
what the scheduler says: ``cancelled`` when its job was cancelled before it could record
anything (a plain ``scancel`` of a queued job), ``lost`` when its job ended otherwise without a
final record (killed, out of memory, node lost; the next ``rexmle run`` records it).

ETA: ``mean_s * ceil(left / max(1, running))`` seconds, where ``mean_s`` is the mean
``timings_s.total`` of the finished runs, ``left`` the runs queued or running, and ``running``
the runs running now (the parallelism the cluster gives today). None while no run has finished
or nothing is left. Cancelled and lost runs are not left: they run again only when asked.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rexmle.records.runs import FINAL_STATUSES, RUN_JSON, RunRecord, read_record

SCHEDULED_JSON = "scheduled.json"
"""Written into a run folder when its job is submitted to a scheduler (see ``slurm.py``)."""


@dataclass
class RunsStatus:
    """Counts per status of the runs under one folder, and the ETA of the unfinished ones."""

    counts: dict[str, int] = field(default_factory=dict)
    total: int = 0
    mean_run_s: float | None = None
    eta_s: float | None = None
    unreadable: list[str] = field(default_factory=list)
    """run.json files that could not be read (torn or foreign), by path."""

    def as_json(self) -> dict[str, object]:
        """A plain dict for ``--json``."""
        return {
            "counts": dict(sorted(self.counts.items())),
            "total": self.total,
            "mean_run_s": self.mean_run_s,
            "eta_s": self.eta_s,
            "unreadable": self.unreadable,
        }


def run_folders(runs_dir: Path) -> list[Path]:
    """Every run folder under ``runs_dir`` (one holding run.json or scheduled.json), sorted."""
    found = {p.parent for p in runs_dir.rglob(RUN_JSON)}
    found |= {p.parent for p in runs_dir.rglob(SCHEDULED_JSON)}
    return sorted(found)


JobStates = Callable[[list[str]], dict[str, str]]
"""Job ids -> the scheduler's state of each job it knows (``executor_slurm.job_states``)."""
ALIVE_JOB_STATES = frozenset(
    {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "REQUEUE_HOLD",
     "REQUEUE_FED", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED"}
)  # fmt: skip
"""Slurm job states in which the job may still run (or is running) its run."""


def scheduled_job(folder: Path) -> str | None:
    """The scheduler's job id written into ``folder`` at submission, or None."""
    path = folder / SCHEDULED_JSON
    if not path.is_file():
        return None
    try:
        return str(json.loads(path.read_text(encoding="utf-8"))["job_id"])
    except (ValueError, KeyError, OSError):
        return None


def _unfinished_state(record: RunRecord | None, folder: Path, states: dict[str, str]) -> str:
    """The status of a run the files call queued (no record) or running, as the scheduler says."""
    local = "queued" if record is None else record.status
    job_id = scheduled_job(folder)
    if job_id is None or (record is not None and record.scheduler is None):
        return local  # not (or no longer) a scheduler's run
    state = states.get(job_id)
    if state in ALIVE_JOB_STATES:
        return local
    if record is None and state is not None and state.startswith("CANCELLED"):
        return "cancelled"
    return "lost"


def runs_status(runs_dir: Path, job_states: JobStates | None = None) -> RunsStatus:
    """Count the runs under ``runs_dir`` per status and estimate the time left (module doc)."""
    status = RunsStatus()
    counts: Counter[str] = Counter()
    durations: list[float] = []
    folders = run_folders(runs_dir)
    records = {folder: read_record(folder) for folder in folders}
    states: dict[str, str] | None = None
    if job_states is not None:
        unfinished = [
            job_id
            for folder, record in records.items()
            if (record is None or record.status == "running")
            and (job_id := scheduled_job(folder)) is not None
        ]
        states = job_states(unfinished) if unfinished else {}
    for folder in folders:
        record = records[folder]
        if record is None and (folder / RUN_JSON).is_file():
            status.unreadable.append(str(folder / RUN_JSON))
            continue
        if states is not None and (record is None or record.status == "running"):
            counts[_unfinished_state(record, folder, states)] += 1
            continue
        if record is None:
            counts["queued"] += 1
            continue
        counts[record.status] += 1
        if record.status in FINAL_STATUSES and "total" in record.timings_s:
            durations.append(record.timings_s["total"])
    status.counts = dict(counts)
    status.total = sum(counts.values())
    left = counts["queued"] + counts["running"]
    if durations:
        status.mean_run_s = sum(durations) / len(durations)
        if left:
            waves = math.ceil(left / max(1, counts["running"]))
            status.eta_s = status.mean_run_s * waves
    return status
