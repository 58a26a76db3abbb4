"""The state of a runs folder: how many runs are in each status, and when the rest should end.

A run is counted by its ``run.json``; a run handed to a cluster scheduler that has not started
yet has only its ``scheduled.json`` (written at submission) and counts as ``queued``.

ETA: ``mean_s * ceil(left / max(1, running))`` seconds, where ``mean_s`` is the mean
``timings_s.total`` of the finished runs, ``left`` the runs queued or running, and ``running``
the runs running now (the parallelism the cluster gives today). None while no run has finished
or nothing is left.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from rexmle.runner.records import FINAL_STATUSES, RUN_JSON, RunRecord, read_record

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


def runs_status(runs_dir: Path) -> RunsStatus:
    """Count the runs under ``runs_dir`` per status and estimate the time left (module doc)."""
    status = RunsStatus()
    counts: Counter[str] = Counter()
    durations: list[float] = []
    for folder in run_folders(runs_dir):
        record: RunRecord | None = read_record(folder)
        if record is None:
            if (folder / RUN_JSON).is_file():
                status.unreadable.append(str(folder / RUN_JSON))
                continue
            counts["queued"] += 1
            continue
        counts[record.status] += 1
        if record.status in FINAL_STATUSES and "total" in record.timings_s:
            durations.append(record.timings_s["total"])
    status.counts = dict(counts)
    status.total = sum(counts.values())
    left = counts["queued"] + counts["running"] + counts["cancelled"]
    if durations:
        status.mean_run_s = sum(durations) / len(durations)
        if left:
            waves = math.ceil(left / max(1, counts["running"]))
            status.eta_s = status.mean_run_s * waves
    return status
