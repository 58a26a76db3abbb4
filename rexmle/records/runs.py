"""Run records: where a run lives, its id, its ``run.json``, and whether it must run again.

A run's folder is ``<runs>/<group>/<task>/<agent>/seed-<k>/`` and holds ``run.json``,
``agent.stdout.log``, ``agent.stderr.log``, ``submission/`` (a copy taken when the agent ended),
``grade.json`` and ``grade.log``. The run id is a hash of the run's config (task, its spec
version, the agent declaration, seed, time limit, mini or full data): the same config always
has the same id, and a different config never silently reuses a folder.

``run.json`` is written when the run starts (status ``running``) and again when it ends. A run
whose record has a final status is skipped by ``rexmle run``; one left ``running`` (the harness
was killed) runs again; ``--retry-failed`` also reruns ``agent_error`` and ``infra_error`` runs.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ValidationError

from rexmle import __version__
from rexmle.agents.registry import AgentSpec
from rexmle.errors import RexmleError
from rexmle.llm.usage import LlmTotals
from rexmle.names import require_folder_names

RunStatus = Literal[
    "running",
    "completed",
    "timeout",
    "agent_error",
    "infra_error",
    "invalid_submission",
    "budget_exceeded",
    "cancelled",
]
FINAL_STATUSES: frozenset[str] = frozenset(
    {"completed", "timeout", "agent_error", "infra_error", "invalid_submission", "budget_exceeded"}
)
FAILED_STATUSES: frozenset[str] = frozenset({"agent_error", "infra_error"})
"""``cancelled`` (the harness was stopped on purpose) is not final: the run runs again."""
RUN_JSON = "run.json"
VERSIONED_PACKAGES = (
    "numpy",
    "scipy",
    "pandas",
    "pydantic",
    "nibabel",
    "SimpleITK",
    "scikit-image",
    "tifffile",
    "pillow",
)


OPTIONAL_CONFIG_FIELDS = (
    "llm_budget_usd",
    "condition",
    "llm_uncapped",
    "prompts",
    "solution_informed",
)
OPTIONAL_AGENT_FIELDS = ("dir", "dir_sha256")
"""Agent fields left out of the hashed config when unset (as ``OPTIONAL_CONFIG_FIELDS``)."""


class RunConflict(RexmleError):
    """A run folder holds a run of another config (another time limit, command, ...)."""


class RunConfig(BaseModel):
    """Everything that decides what a run computes; its hash is the run id."""

    task: str
    task_spec_version: int
    agent: AgentSpec
    seed: int
    time_limit_s: float
    mini: bool
    llm_budget_usd: float | None = None
    """The run's LLM spending cap in US dollars, when one is set."""
    condition: str | None = None
    """The experiment condition (a named set of overrides) the run belongs to."""
    llm_uncapped: bool | None = None
    """True: the run has no USD cap (as the published study), metered all the same; None: the
    run's or the batch's cap holds."""
    prompts: Literal["study"] | None = None
    """``study``: the agents read the published study's texts; None: ReX-MLE's own."""
    solution_informed: bool | None = None
    """True: the instructions carry the task's winning-solution write-up; None: they do not."""

    def run_id(self) -> str:
        """16 hex digits of the SHA-256 of the config as canonical JSON.

        Optional fields that are unset are left out, so configs written before they existed keep
        their ids.
        """
        fields = self.model_dump(mode="json")
        for name in OPTIONAL_CONFIG_FIELDS:
            if fields.get(name) is None:
                fields.pop(name, None)
        for name in OPTIONAL_AGENT_FIELDS:
            if fields["agent"].get(name) is None:
                fields["agent"].pop(name, None)
        text = json.dumps(fields, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class SandboxRecord(BaseModel):
    """The sandbox a run used and the isolation it gave."""

    kind: str
    isolated: bool
    network_isolated: bool
    warnings: list[str] = []
    network: str | None = None
    """``off``, ``isolated-outbound`` (bwrap) or ``host`` (local)."""
    limits: dict[str, int | str | None] | None = None
    """The caps that held: memory, processes, tmpfs bytes, log bytes (None: not enforced), what
    held each (``memory_held_by``: ``cgroup-v2``, ``cgroup-v1``, ``rlimit-as`` or ``docker``;
    ``max_processes_held_by`` likewise, or ``rlimit-nproc``), why no cgroup could be made
    (``cgroup_problem``), and the run's peak memory and OOM kills where a cgroup measured them."""


class GradeSummary(BaseModel):
    """The grade in short (the full report is grade.json)."""

    valid: bool
    grader_exit_code: int | None
    headline_key: str | None = None
    headline_value: float | None = None
    percentile: float | None = None
    medal: str | None = None


class SchedulerRecord(BaseModel):
    """Where a cluster scheduler ran the run (absent for local runs)."""

    kind: str
    """The scheduler: ``slurm``."""
    job_id: str
    """The scheduler's id of the run's job (for a Slurm array task: ``<array id>_<index>``)."""
    node: str | None = None
    """The node the job ran on."""
    gpus: str | None = None
    """The GPUs the scheduler gave the job (its ``CUDA_VISIBLE_DEVICES``)."""
    restart_count: int = 0
    """How often the scheduler requeued the job before this attempt (``SLURM_RESTART_COUNT``:
    preemption or a lost node with ``--requeue``)."""


class SettingsRecord(BaseModel):
    """The run settings that can change a result, as this run got them (``RunSettings``)."""

    sandbox: str
    """The sandbox asked for (``auto`` included); the one used is ``sandbox.kind``."""
    kill_grace_s: float
    grade_workers: int | None
    grade_memory_bytes: int | None
    """Address-space limit of each grader process (None: none)."""
    validation_memory_bytes: int | None
    """Address-space limit of each validation check (None: none)."""
    grade_timeout_s: float
    max_upload_bytes: int
    max_requests_per_minute: int
    """Validation server caps."""
    llm_config: str | None
    """The LLM gateway config file the run got (None: the built-in one)."""
    llm_config_sha256: str | None
    llm_for_every_run: bool
    llm_budget_usd: float | None
    """The per-run LLM budget given for the whole batch (a run's own is ``config``'s)."""
    llm_max_calls_per_minute: int | None
    llm_gateway_shared: bool = False
    """The runs shared the node's gateway with other rexmle processes (own token and limits)."""
    llm_gemini_openai_route: str | None = None
    """How the gateway served Gemini's OpenAI-compatible route (the LLM config's
    ``gemini_openai_route``: ``google``, forwarded to Google's own OpenAI-compatible endpoint;
    ``litellm``, translated to ``generateContent``); None in records written before it."""
    keep_data: bool


class DeviationRecord(BaseModel):
    """One way a run differs from the published study: id, what the study did, what this run
    does, and why.
    """

    id: str
    item: str
    study: str
    ours: str
    why: str


class RunRecord(BaseModel):
    """The content of ``run.json``."""

    run_id: str
    group: str
    task: str
    agent: str
    seed: int
    status: RunStatus
    config: RunConfig
    started_at: str
    finished_at: str | None = None
    timings_s: dict[str, float] = {}
    exit_code: int | None = None
    killed_processes: int = 0
    sandbox: SandboxRecord | None = None
    data_mode: str | None = None
    validation_requests: int = 0
    submission_notes: list[str] = []
    """Entries of the agent's submission/ left out of the graded copy (links, special files)."""
    grade: GradeSummary | None = None
    error: str | None = None
    """Why a run is ``agent_error`` or ``infra_error`` (when the harness knows)."""
    hardware: dict[str, object] = {}
    versions: dict[str, str] = {}
    agent_env: dict[str, str | None] | None = None
    """The locked environment of an llm agent: name, torch variant, lock hash, lock file, source."""
    llm: LlmTotals | None = None
    """Calls, tokens and cost through the LLM gateway (runs that had it)."""
    rexmle_version: str = __version__
    scheduler: SchedulerRecord | None = None
    condition: str | None = None
    """The experiment condition of the run (as in its config)."""
    experiment: str | None = None
    """The name of the experiment file the run came from."""
    settings: SettingsRecord | None = None
    """The run settings that can change a result (absent in records written before them)."""
    selection: str | None = None
    """Which of the agent's submissions was graded (``study`` or ``best-valid``; None for
    agents without a selection policy)."""
    deviations: list[DeviationRecord] = []
    """How this run differs from the published study's (see :mod:`rexmle.runner.deviations`)."""


def run_dir(runs_dir: Path, group: str, task: str, agent: str, seed: int) -> Path:
    """``<runs>/<group>/<task>/<agent>/seed-<seed>``, always inside ``runs_dir``.

    Raises:
        ValueError: the group, task or agent is not a folder name (:mod:`rexmle.names`).
    """
    require_folder_names({"group": group, "task": task, "agent": agent})
    return runs_dir / group / task / agent / f"seed-{seed}"


def read_record(folder: Path) -> RunRecord | None:
    """The run's record, or None when there is none or it cannot be read (a torn write)."""
    path = folder / RUN_JSON
    if not path.is_file():
        return None
    try:
        return RunRecord.model_validate_json(path.read_text(encoding="utf-8"))
    except (ValidationError, ValueError, OSError):
        return None


def write_record(folder: Path, record: RunRecord) -> None:
    """Write ``run.json`` atomically (temporary file, then rename)."""
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{RUN_JSON}.{os.getpid()}.tmp"
    tmp.write_text(record.model_dump_json(indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, folder / RUN_JSON)


def needs_run(
    folder: Path, config: RunConfig, *, retry_failed: bool, replace_other_config: bool = False
) -> bool:
    """Whether the run in ``folder`` must (re)run: no final record, or failed with retry asked,
    or (``replace_other_config``, ``--force-config``) a run of another config to replace.

    Raises:
        RunConflict: the folder holds a run with another config (another run id).
    """
    record = read_record(folder)
    if record is None:
        return True
    if record.run_id != config.run_id() and replace_other_config:
        return True
    if record.run_id != config.run_id():
        msg = (
            f"{folder} holds run {record.run_id} with another config than this one "
            f"({config.run_id()}): --force-config replaces it, or keep both with another "
            "--agent-name, --group or --runs-dir"
        )
        raise RunConflict(msg)
    if record.status not in FINAL_STATUSES:
        return True
    return retry_failed and record.status in FAILED_STATUSES


@functools.cache
def hardware() -> dict[str, object]:
    """CPU, memory and GPU of this machine (GPU names from nvidia-smi when present)."""
    info: dict[str, object] = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpus": os.cpu_count() or 0,
    }
    with contextlib.suppress(ValueError, OSError):
        info["memory_gb"] = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9, 1)
    smi = shutil.which("nvidia-smi")
    gpus: list[str] = []
    if smi is not None:
        try:
            done = subprocess.run(
                [smi, "--query-gpu=name,memory.total", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=20,
                check=False,
            )
            if done.returncode == 0:
                gpus = [line.strip() for line in done.stdout.splitlines() if line.strip()]
        except (OSError, subprocess.TimeoutExpired):
            pass
    info["gpus"] = gpus
    return info


@functools.cache
def package_versions() -> dict[str, str]:
    """Python and the versions of rexmle and the libraries that decide scores."""
    versions = {"python": sys.version.split()[0], "rexmle": __version__}
    for name in VERSIONED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions
