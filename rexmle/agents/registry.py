"""Agent declarations: YAML files in ``rexmle/agents/declarations/`` (or any path) as AgentSpec.

A declaration says how to start an agent, never how to grade it::

    id: baseline
    kind: baseline            # dummy | baseline | command
    command: ["{python}", "-m", "rexmle.agents.baseline"]
    env: []                   # host variables passed through (API keys), by name
    time_limit_s: 3600        # wall-clock limit of one run
    network: false            # network inside the sandbox
    memory_limit_mb: null     # RLIMIT_AS of the agent process, none when null

``{python}`` in a command stands for the harness's own interpreter. A ``command`` agent has no
command of its own: it takes the shell command given with ``--agent-cmd``.
"""

from __future__ import annotations

import functools
import hashlib
import sys
from importlib import resources
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from rexmle.errors import SpecError

AgentKind = Literal["dummy", "baseline", "command"]

AGENT_ENV_VARS = (
    "DATA_DIR",
    "SUBMISSION_DIR",
    "INSTRUCTIONS",
    "TIME_LIMIT_SECS",
    "VALIDATION_URL",
    "TASK_ID",
    "SEED",
)
"""Variables every agent gets: public data, submission folder, instructions file, its time limit
in seconds, the validation server's URL, the task id and the run's seed."""


class AgentSpec(BaseModel):
    """One agent, as declared in its YAML file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    """Name of the agent; also its folder under ``runs/<group>/<task>/``."""
    kind: AgentKind
    description: str = ""
    command: list[str] | str | None = None
    """Argument list (``{python}`` = the harness interpreter) or a shell command string."""
    env: list[str] = []
    """Names of host environment variables passed through (values are never recorded)."""
    time_limit_s: float = Field(default=3600.0, gt=0)
    network: bool = False
    memory_limit_mb: int | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _command_when_needed(self) -> AgentSpec:
        if self.kind != "command" and not self.command:
            msg = f"agent {self.id!r} of kind {self.kind!r} needs a 'command'"
            raise ValueError(msg)
        return self

    def argv(self) -> list[str]:
        """The command as an argument list (a string runs under ``/bin/sh -c``).

        Raises:
            SpecError: the agent has no command (a ``command`` agent without ``--agent-cmd``).
        """
        if not self.command:
            msg = f"agent {self.id!r} has no command; give one with --agent-cmd '...'"
            raise SpecError(msg)
        if isinstance(self.command, str):
            return ["/bin/sh", "-c", self.command]
        return [part.replace("{python}", sys.executable) for part in self.command]

    def with_overrides(
        self,
        *,
        command: str | None = None,
        name: str | None = None,
        time_limit_s: float | None = None,
        network: bool | None = None,
        memory_limit_mb: int | None = None,
        env: list[str] | None = None,
    ) -> AgentSpec:
        """A copy with the given fields replaced (CLI options win over the declaration).

        A shell ``command`` given without ``name`` names the agent ``<id>-<8 hex of the command>``,
        so two different commands never share a run folder.
        """
        update: dict[str, object] = {}
        if command is not None:
            update["command"] = command
            if name is None:
                digest = hashlib.sha256(command.encode("utf-8")).hexdigest()[:8]
                update["id"] = f"{self.id}-{digest}"
        if name is not None:
            update["id"] = name
        if time_limit_s is not None:
            update["time_limit_s"] = time_limit_s
        if network is not None:
            update["network"] = network
        if memory_limit_mb is not None:
            update["memory_limit_mb"] = memory_limit_mb
        if env is not None:
            update["env"] = [*self.env, *(e for e in env if e not in self.env)]
        return AgentSpec.model_validate({**self.model_dump(), **update})


def _load(text: str, where: str) -> AgentSpec:
    try:
        return AgentSpec.model_validate(yaml.safe_load(text))
    except (yaml.YAMLError, ValidationError) as err:
        msg = f"{where}: {err}"
        raise SpecError(msg) from err


@functools.cache
def all_agents() -> dict[str, AgentSpec]:
    """Every built-in agent, by id, sorted.

    Raises:
        SpecError: a declaration is malformed, its file name differs from its id, or an id repeats.
    """
    found: dict[str, AgentSpec] = {}
    folder = resources.files("rexmle.agents").joinpath("declarations")
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if not entry.name.endswith(".yaml"):
            continue
        where = f"rexmle/agents/declarations/{entry.name}"
        spec = _load(entry.read_text(encoding="utf-8"), where)
        if entry.name != f"{spec.id}.yaml":
            msg = f"{where}: file name must be {spec.id}.yaml"
            raise SpecError(msg)
        if spec.id in found:
            msg = f"agent id {spec.id!r} is declared twice"
            raise SpecError(msg)
        found[spec.id] = spec
    return dict(sorted(found.items()))


def load_agent(name_or_path: str) -> AgentSpec:
    """A built-in agent by id, or a declaration read from a YAML file path.

    Raises:
        SpecError: unknown id (the message lists the known ones) or a malformed file.
    """
    agents = all_agents()
    if name_or_path in agents:
        return agents[name_or_path]
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") and path.is_file():
        return _load(path.read_text(encoding="utf-8"), str(path))
    msg = f"unknown agent {name_or_path!r}; built-in agents: {', '.join(agents)} (or a YAML path)"
    raise SpecError(msg)
