"""Complete run records for synthetic run folders (what the runner writes as run.json)."""

from __future__ import annotations

import re
from pathlib import Path

from rexmle.records.runs import RunRecord, write_record
from rexmle.tasks.registry import all_tasks

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def run_record(folder: Path, fields: dict[str, object] | None = None) -> RunRecord:
    """The record of the run in ``<...>/<group>/<task>/<agent>/seed-<k>``: ``fields`` as given
    (``config``, ``sandbox`` and ``llm`` merged into complete entries), the rest as the runner
    writes it for a finished command-agent run of 600 s on mini data.
    """
    fields = dict(fields or {})
    task, agent, seed = folder.parent.parent.name, folder.parent.name, int(folder.name[5:])
    tasks = all_tasks()
    config: dict[str, object] = {
        "task": task,
        "task_spec_version": tasks[task].spec_version if task in tasks else 1,
        "agent": {
            "id": agent if _NAME.match(agent) else "agent",
            "kind": "command",
            "command": "python train.py",
        },
        "seed": seed,
        "time_limit_s": 600.0,
        "mini": True,
    }
    given = fields.pop("config", None)
    config |= given if isinstance(given, dict) else {}
    record: dict[str, object] = {
        "run_id": "0" * 16,
        "group": folder.parent.parent.parent.name,
        "task": task,
        "agent": agent,
        "seed": seed,
        "status": "completed",
        "config": config,
        "started_at": "2026-12-01T10:00:00+00:00",
    }
    sandbox = fields.pop("sandbox", None)
    if isinstance(sandbox, dict):
        record["sandbox"] = {"kind": "bwrap", "isolated": True, "network_isolated": True} | sandbox
    record |= fields
    return RunRecord.model_validate(record)


def write_run_json(folder: Path, fields: dict[str, object] | None = None) -> RunRecord:
    """Write :func:`run_record` as ``folder/run.json`` (creating the folder) and return it."""
    record = run_record(folder, fields)
    write_record(folder, record)
    return record
