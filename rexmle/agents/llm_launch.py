"""Start an ``llm`` agent: its adapter program, in its environment, with a config of the run.

:func:`prepare_launch` writes ``<workspace>/.adapter/config.json`` and returns the sandbox
command, the folders the sandbox must show read-only (the agent's environment and its Python)
and what run.json records (``agent_env``). The config holds only paths relative to the workspace, the
validation URL, the run's limits and the agent's settings: no provider key, no host path
outside the workspace and the environment. The LLM gateway reaches the adapter through the
environment (``REXMLE_LLM_BASE_URL``, ``REXMLE_LLM_TOKEN``), set by the runner.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from rexmle.agents.environments import AgentEnv, check_cache_location, resolve_env
from rexmle.agents.registry import AgentSpec
from rexmle.errors import SpecError

ADAPTERS_DIR = Path(__file__).resolve().parent / "adapters"
ADAPTER_FILES = {"aide": "aide.py", "ml-master": "ml_master.py", "rdagent": "rdagent.py"}
CONFIG_PATH = Path(".adapter") / "config.json"
WORK_DIR = "agent"
OUTPUT_DIR = "agent_output"
"""Inside the workspace: the agent's own working folder, and what the adapter collects (moved
into the run folder after the run)."""
SYNC_INTERVAL_S = 2.0
"""Seconds between two looks at the agent's results (a look reads only changed files)."""


class EnvNotInstalled(SpecError):
    """An llm agent's locked environment is not installed (the message gives the command)."""


class AgentEnvRecord(BaseModel):
    """The ``agent_env`` entry of run.json: which locked environment ran the agent."""

    name: str
    variant: str
    lock_hash: str
    lock_file: str
    source: str | None = None


@dataclass(frozen=True)
class LlmLaunch:
    """What the runner needs to start an llm agent in a sandbox."""

    argv: list[str]
    readonly: tuple[Path, ...]
    record: AgentEnvRecord
    config: dict[str, object]


def hardware_sentence(gpu_names: list[str], cuda_visible_devices: str | None) -> str:
    """How the instructions describe the compute: ``1 NVIDIA H200 GPU`` or ``a CPU``."""
    if cuda_visible_devices is None or not gpu_names:
        return "a CPU (no GPU)"
    slots = [s for s in cuda_visible_devices.split(",") if s.strip()]
    names = sorted({gpu_names[0].split(",")[0].strip()})
    return f"{len(slots)} {names[0]} GPU" + ("s" if len(slots) != 1 else "")


def leaderboard_scores(task_id: str) -> list[float]:
    """The task's leaderboard values of its headline metric, best first.

    R&D-Agent's Kaggle scenario takes the metric's direction from such a list (first > last:
    higher is better), as the study gave it the human leaderboard.
    """
    from rexmle.tasks.leaderboard import load_leaderboard
    from rexmle.tasks.registry import get_task

    headline = get_task(task_id).headline
    values = [float(v) for v in load_leaderboard(task_id).column(headline.key)]
    return sorted(values, reverse=headline.higher_is_better)


def adapter_config(
    spec: AgentSpec,
    env: AgentEnv,
    *,
    task_id: str,
    seed: int,
    time_limit_s: float,
    validation_url: str,
    hardware: str,
    cuda_visible_devices: str | None,
    cpus: int,
) -> dict[str, object]:
    """The adapter config of one run (see the module docstring)."""
    if spec.llm is None:
        msg = f"agent {spec.id!r} is not an llm agent"
        raise SpecError(msg)
    llm = spec.llm
    return {
        "agent": spec.id,
        "adapter": llm.adapter,
        "task": task_id,
        "seed": seed,
        # relative to the workspace: the sandbox shows it at a path of its own (bwrap:
        # /workspace), and no host path of the runs root is written where the agent reads
        "workspace": ".",
        "data_dir": "data",
        "submission_dir": "submission",
        "instructions": "instructions.md",
        "work_dir": WORK_DIR,
        "output_dir": OUTPUT_DIR,
        "validation_url": validation_url,
        "time_limit_s": time_limit_s,
        "steps": llm.steps,
        "step_timeout_s": llm.step_timeout_s,
        "models": dict(llm.models),
        "temperatures": dict(llm.temperatures),
        "options": dict(llm.options),
        "selection": llm.selection,
        "scenario": llm.scenario,
        "llm_route": llm.llm_route,
        "leaderboard_scores": leaderboard_scores(task_id) if llm.scenario == "kaggle" else None,
        "hardware": hardware,
        "cuda_visible_devices": cuda_visible_devices,
        "cpus": cpus,
        "source_dir": str(env.source_dir) if env.source is not None else None,
        "sync_interval_s": SYNC_INTERVAL_S,
    }


def require_startable(spec: AgentSpec, *, hidden: Sequence[Path]) -> None:
    """Check before any run that ``spec`` can start: a command, or an installed environment.

    Raises:
        SpecError: no command (``command`` agent without ``--agent-cmd``), or an llm agent
            whose environment lies where the sandbox hides it.
        EnvNotInstalled: an llm agent whose environment is not installed.
    """
    if spec.llm is None:
        spec.argv()
        return
    env = resolve_env(spec.llm.environment)
    check_cache_location(env.root.parent, hidden)
    if not env.is_installed():
        msg = (
            f"the environment of {spec.id} is not installed ({env.root}): run "
            f"`rexmle agents install {spec.llm.environment}` first"
        )
        raise EnvNotInstalled(msg)


def prepare_launch(
    spec: AgentSpec,
    workspace: Path,
    *,
    task_id: str,
    seed: int,
    time_limit_s: float,
    validation_url: str,
    gpu_names: list[str],
    cuda_visible_devices: str | None,
    env: AgentEnv | None = None,
    extra: dict[str, object] | None = None,
) -> LlmLaunch:
    """Write the adapter config into ``workspace`` and return the launch of ``spec``.

    ``extra``: further config entries of the run (workspace-relative paths only: the study's
    texts, the score.py usage, the solution write-up; see :mod:`rexmle.runner.run_texts`).

    Raises:
        SpecError: not an llm agent, or its environment is not installed (the message gives the
            ``rexmle agents install`` command).
    """
    if spec.llm is None:
        msg = f"agent {spec.id!r} is not an llm agent"
        raise SpecError(msg)
    env = env or resolve_env(spec.llm.environment)
    if not env.is_installed():
        msg = (
            f"the environment of {spec.id} is not installed ({env.root}): run "
            f"`rexmle agents install {spec.llm.environment}` first"
        )
        raise SpecError(msg)
    config = adapter_config(
        spec,
        env,
        task_id=task_id,
        seed=seed,
        time_limit_s=time_limit_s,
        validation_url=validation_url,
        hardware=hardware_sentence(gpu_names, cuda_visible_devices),
        cuda_visible_devices=cuda_visible_devices,
        cpus=len(os.sched_getaffinity(0)),
    )
    config.update(extra or {})
    path = workspace / CONFIG_PATH
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    (workspace / WORK_DIR).mkdir(exist_ok=True)
    (workspace / OUTPUT_DIR).mkdir(exist_ok=True)
    script = ADAPTERS_DIR / ADAPTER_FILES[spec.llm.adapter]
    record = AgentEnvRecord(
        name=env.name,
        variant=env.variant,
        lock_hash=env.lock_hash,
        lock_file=f"rexmle/agents/envs/{env.name}/{env.lock_file.name}",
        source=env.source,
    )
    return LlmLaunch(
        argv=[str(env.python), str(script), str(path)],
        readonly=env.readonly_mounts(),
        record=record,
        config=config,
    )
