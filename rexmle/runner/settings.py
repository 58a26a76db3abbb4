"""``RunSettings``: how the runs of one ``rexmle run`` execute, one value for every executor.

The study (which agents, tasks, seeds, conditions) is the :class:`~rexmle.runner.experiment.
Experiment`; everything else a run needs to execute and be graded is here: the data and runs
folders, the sandbox kind, the kill grace, the grader's and the validation checks' limits, the
validation server's caps and the LLM gateway's config file, per-run budget and rate cap. The local
executor builds the runs' :class:`~rexmle.runner.executor.RunOptions` from it; the Slurm executor
writes it whole into ``batch.json`` (:meth:`RunSettings.model_dump_json`) and the node reads it
back whole (:meth:`RunSettings.model_validate`), so both run with the same value. The part that
can change a result goes into every ``run.json`` (:meth:`RunSettings.recorded`, field
``settings``).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from rexmle.records.runs import SettingsRecord
from rexmle.runner.limits import DEFAULT_GRADE_MEMORY_BYTES, DEFAULT_VALIDATION_MEMORY_BYTES
from rexmle.runner.sandbox import SandboxKind
from rexmle.runner.validation_server import (
    DEFAULT_MAX_REQUESTS_PER_MINUTE,
    DEFAULT_MAX_UPLOAD_BYTES,
)

NOT_RECORDED = frozenset({"data_dir", "runs_dir"})
"""Settings that change where a run lives, not what it computes (run.json has its folder)."""
DEFAULT_GRADE_TIMEOUT_S = 6 * 3600.0
"""Longest a grader process may run before the run is an ``infra_error``."""


class RunSettings(BaseModel):
    """The execution settings shared by every run of one ``rexmle run`` (see the module)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    data_dir: Path
    runs_dir: Path
    sandbox: SandboxKind = "auto"
    kill_grace_s: float = Field(default=5.0, ge=0)
    """Seconds from SIGTERM to SIGKILL when an agent is stopped."""
    keep_data: bool = False
    """Keep each workspace's data/ after the run (removed by default)."""
    grade_workers: int | None = Field(default=None, gt=0)
    """Worker processes of each grader (None: the grader's default)."""
    grade_memory_bytes: int | None = Field(default=DEFAULT_GRADE_MEMORY_BYTES, gt=0)
    """Address-space limit of each grader process (None: none)."""
    validation_memory_bytes: int | None = Field(default=DEFAULT_VALIDATION_MEMORY_BYTES, gt=0)
    """Address-space limit of each validation check (None: none)."""
    grade_timeout_s: float = Field(default=DEFAULT_GRADE_TIMEOUT_S, gt=0)
    max_upload_bytes: int = Field(default=DEFAULT_MAX_UPLOAD_BYTES, gt=0)
    """Largest upload the validation server takes."""
    max_requests_per_minute: int = Field(default=DEFAULT_MAX_REQUESTS_PER_MINUTE, gt=0)
    """Validation requests per run and minute."""
    llm_config: Path | None = None
    """The LLM gateway config file (YAML); None: the built-in config."""
    llm_for_every_run: bool = False
    """Every run gets the gateway, not only agents that declare LLM use."""
    llm_budget_usd: float | None = Field(default=None, ge=0)
    """LLM budget of each run without one of its own (an experiment agent's ``budget_usd``)."""
    llm_max_calls_per_minute: int | None = Field(default=None, gt=0)
    """LLM calls per run and minute (None: the LLM config's)."""
    llm_gateway_shared: bool = False
    """The runs use the node's shared gateway (:mod:`rexmle.llm.node_gateway`), started by the
    first of this user's rexmle processes with the same config and keys (within one Slurm job),
    stopped after the last; otherwise this command (or Slurm array task) starts its own."""

    def recorded(self) -> SettingsRecord:
        """The settings that can change a result, for ``run.json``.

        Raises:
            OSError: the LLM config file cannot be read (it is hashed).
            SpecError: it is not a valid LLM config (its ``gemini_openai_route`` is recorded).
        """
        from rexmle.llm.config import load_llm_config

        digest = None
        if self.llm_config is not None:
            digest = hashlib.sha256(self.llm_config.read_bytes()).hexdigest()
        fields = self.model_dump(mode="json", exclude=set(NOT_RECORDED))
        route = load_llm_config(self.llm_config).gemini_openai_route
        return SettingsRecord.model_validate(
            {**fields, "llm_config_sha256": digest, "llm_gemini_openai_route": route}
        )


def memory_bytes(megabytes: int) -> int | None:
    """A ``--...-memory-mb`` flag as bytes; 0 means no limit (None)."""
    return (megabytes << 20) or None
