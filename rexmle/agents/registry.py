"""Agent declarations: YAML files in ``rexmle/agents/declarations/`` (or any path) as AgentSpec.

A declaration says how to start an agent, never how to grade it::

    id: baseline
    kind: baseline            # dummy | baseline | command | llm
    command: ["{python}", "-m", "rexmle.agents.baseline"]
    env: []                   # host variables passed through (API keys), by name
    time_limit_s: 3600        # wall-clock limit of one run
    network: false            # network inside the sandbox
    memory_limit_mb: null     # RLIMIT_AS of the agent process, none when null
    llm_gateway: false        # true: the agent calls LLMs through the gateway
    dir: null                 # the agent's own code (relative: to this file), read-only at
                              # $AGENT_DIR in the sandbox (rexmle.runner.agent_code)

``{python}`` in a command stands for the harness's own interpreter. A ``command`` agent has no
command of its own: it takes the shell command given with ``--agent-cmd``.

An ``llm`` agent (AIDE, ML-Master, R&D-Agent) has no command either: it names its adapter, its
locked environment (:mod:`rexmle.agents.environments`) and its settings (``llm:``, see
:class:`LlmSettings`); the harness starts the adapter program in that environment
(:mod:`rexmle.agents.llm_launch`). Its model is config: ``aide/gpt-5`` or ``--model gpt-5``.
"""

from __future__ import annotations

import functools
import hashlib
import sys
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from rexmle.declarations import describe_errors, parse_declaration
from rexmle.errors import SpecError
from rexmle.names import NAME_PATTERN

AgentKind = Literal["dummy", "baseline", "command", "llm"]
AdapterName = Literal["aide", "ml-master", "rdagent"]
SelectionPolicy = Literal["study", "best-valid"]
"""Which of an agent's submissions is graded: ``study`` (as the published study took it: AIDE
the last one written, ML-Master its ``best_submission/``, R&D-Agent its SOTA experiment's, none
of them checked) or ``best-valid`` (each candidate is checked with the validation server and the
best valid one by the agent's own metric is kept)."""
RdAgentScenario = Literal["data-science", "kaggle"]
"""R&D-Agent's scenario: ``data-science`` (DataScienceScen, MLE-data mode off) or ``kaggle``
(the study's KaggleScen with the MLE-data mode on and the metric direction given)."""
LlmRoute = Literal["openai", "native"]
"""How an adapter points the agent at the LLM gateway: ``openai`` (every model as its ``gw/``
alias through the agent's OpenAI-compatible path) or ``native`` (``claude-*`` and ``gemini-*``
models by their bare names through the agent's own Anthropic and Gemini back-ends and the
gateway's native routes, as the study ran them; other models stay aliases)."""
NATIVE_ROUTE_ADAPTERS: tuple[AdapterName, ...] = ("aide", "ml-master")
"""The adapters that have the ``native`` route (their agents have Anthropic and Gemini
back-ends of their own); R&D-Agent's has the ``openai`` route only."""
MODEL_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
FIXED_MODEL_ROLES = frozenset({"embedding"})
"""Roles that ``--model`` leaves as declared (an embedding model is not a chat model)."""

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


class LlmSettings(BaseModel):
    """What an LLM agent's adapter maps onto the agent's own arguments."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    adapter: AdapterName
    """The adapter program (``rexmle/agents/adapters/<adapter>.py``)."""
    environment: str
    """The agent's locked environment (``rexmle/agents/envs/<environment>/``)."""
    models: dict[str, str]
    """Model per role (``code``, ``feedback``, ``chat``), as the gateway's alias without ``gw/``."""
    temperatures: dict[str, float] = {}
    """Sampling temperature per role."""
    steps: int | None = Field(default=None, gt=0)
    """Search steps (AIDE, ML-Master) or loops (R&D-Agent); None: the agent's own default."""
    step_timeout_s: float | None = Field(default=None, gt=0)
    """Time limit of one executed script (AIDE, ML-Master ``exec.timeout``)."""
    options: dict[str, int | float | str | bool] = {}
    """Further agent arguments passed as given (e.g. ``agent.search.num_drafts``)."""
    selection: SelectionPolicy = "best-valid"
    """Which submission is graded (see :data:`SelectionPolicy`)."""
    scenario: RdAgentScenario | None = None
    """R&D-Agent only: its scenario (see :data:`RdAgentScenario`); None elsewhere."""
    llm_route: LlmRoute = "openai"
    """How the agent reaches the gateway (see :data:`LlmRoute`)."""

    @model_validator(mode="after")
    def _names(self) -> LlmSettings:
        import re

        if not self.models:
            msg = "llm.models needs a model for at least one role"
            raise ValueError(msg)
        for role, model in self.models.items():
            if not re.match(MODEL_PATTERN, model):
                msg = f"llm.models.{role}: {model!r} is not a model name (letters, digits, ._-)"
                raise ValueError(msg)
        unknown = set(self.temperatures) - set(self.models)
        if unknown:
            msg = f"llm.temperatures names roles without a model: {sorted(unknown)}"
            raise ValueError(msg)
        if (self.adapter == "rdagent") != (self.scenario is not None):
            msg = (
                "llm.scenario (data-science or kaggle) is required for the rdagent adapter "
                "and only there"
            )
            raise ValueError(msg)
        if self.llm_route == "native" and self.adapter not in NATIVE_ROUTE_ADAPTERS:
            msg = (
                f"llm.llm_route native is for the {' and '.join(NATIVE_ROUTE_ADAPTERS)} adapters "
                f"(their agents' own Anthropic and Gemini back-ends); the {self.adapter} adapter "
                "has the openai route only"
            )
            raise ValueError(msg)
        return self


class AgentSpec(BaseModel):
    """One agent, as declared in its YAML file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=NAME_PATTERN)
    """Name of the agent; also its folder under ``runs/<group>/<task>/``."""
    kind: AgentKind
    description: str = ""
    command: list[str] | str | None = None
    """Argument list (``{python}`` = the harness interpreter) or a shell command string."""
    env: list[str] = []
    """Names of host environment variables passed through (values are never recorded; provider
    keys are refused: agents reach LLMs through the gateway)."""
    time_limit_s: float = Field(default=3600.0, gt=0)
    network: bool = False
    memory_limit_mb: int | None = Field(default=None, gt=0)
    llm: LlmSettings | None = None
    """Adapter, environment and settings of an ``llm`` agent (only there)."""
    llm_gateway: bool = False
    """The agent calls LLMs: its runs get the gateway (``REXMLE_LLM_BASE_URL``, ...)."""
    dir: str | None = None
    """The folder of the agent's own code (``--agent-dir``): every run sees a read-only snapshot
    of it at ``$AGENT_DIR`` (:mod:`rexmle.runner.agent_code`); a relative path in a declaration
    file is relative to that file's folder."""
    dir_sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    """The content hash of ``dir`` the runs were planned with (set by the harness; a declaration
    may pin it, and a folder with another content is then refused)."""

    @model_validator(mode="after")
    def _command_when_needed(self) -> AgentSpec:
        if (self.kind == "llm") != (self.llm is not None):
            msg = f"agent {self.id!r}: 'llm' settings are required for kind llm and only there"
            raise ValueError(msg)
        if self.kind == "llm" and self.command:
            msg = f"agent {self.id!r} of kind llm takes no 'command' (its adapter starts it)"
            raise ValueError(msg)
        if self.kind not in ("command", "llm") and not self.command:
            msg = f"agent {self.id!r} of kind {self.kind!r} needs a 'command'"
            raise ValueError(msg)
        if self.dir is not None and self.kind == "llm":
            msg = (
                f"agent {self.id!r} of kind llm takes no 'dir' (--agent-dir): its code is its "
                "locked environment; --agent-dir is for command agents"
            )
            raise ValueError(msg)
        if self.dir_sha256 is not None and self.dir is None:
            msg = f"agent {self.id!r}: 'dir_sha256' pins the content of 'dir', which is not given"
            raise ValueError(msg)
        return self

    def argv(self) -> list[str]:
        """The command as an argument list (a string runs under ``/bin/sh -c``).

        Raises:
            SpecError: the agent has no command (a ``command`` agent without ``--agent-cmd``).
        """
        if self.kind == "llm":
            msg = f"agent {self.id!r} is started by its adapter (rexmle.agents.llm_launch)"
            raise SpecError(msg)
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
        model: str | None = None,
        steps: int | None = None,
        step_timeout_s: float | None = None,
        selection: SelectionPolicy | None = None,
        scenario: RdAgentScenario | None = None,
        code_dir: str | Path | None = None,
        llm_route: LlmRoute | None = None,
    ) -> AgentSpec:
        """A copy with the given fields replaced (CLI options win over the declaration).

        ``code_dir`` (``--agent-dir``) becomes the absolute ``dir`` (relative: to the current
        folder), its content hash unset until the runs are planned.

        A shell ``command`` given without ``name`` names the agent ``<id>-<8 hex of the command>``,
        so two different commands never share a run folder. A ``model`` (llm agents: every role
        uses it) names the agent ``<id>-<model>``.

        Raises:
            SpecError: ``model``, ``steps``, ``step_timeout_s``, ``selection``, ``scenario``
                or ``llm_route`` given for a non-llm agent, or the result is not a valid
                declaration.
        """
        update: dict[str, object] = {}
        llm_update: dict[str, object] = {}
        if model is not None:
            current = self.llm.models if self.llm else {}
            llm_update["models"] = {
                role: value if role in FIXED_MODEL_ROLES else model
                for role, value in current.items()
            }
            if name is None:
                update["id"] = f"{self.id}-{model}"
        if steps is not None:
            llm_update["steps"] = steps
        if step_timeout_s is not None:
            llm_update["step_timeout_s"] = step_timeout_s
        if selection is not None:
            llm_update["selection"] = selection
        if scenario is not None:
            llm_update["scenario"] = scenario
        if llm_route is not None:
            llm_update["llm_route"] = llm_route
        if llm_update:
            if self.llm is None:
                msg = (
                    f"agent {self.id!r} is not an llm agent: --model, --steps, --step-timeout, "
                    "the selection policy, the scenario and the LLM route apply to llm agents only"
                )
                raise SpecError(msg)
            update["llm"] = {**self.llm.model_dump(), **llm_update}
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
        if code_dir is not None:
            update["dir"] = str(Path(code_dir).expanduser().absolute())
            update["dir_sha256"] = None
        try:
            return AgentSpec.model_validate({**self.model_dump(), **update})
        except ValidationError as err:
            msg = "; ".join(describe_errors(err.errors(), AgentSpec, {}))
            raise SpecError(msg) from err


def _load(text: str, where: str) -> AgentSpec:
    return parse_declaration(text, AgentSpec, where, what="agent declaration")


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
    base, _, model = name_or_path.partition("/")
    if model and base in agents and agents[base].kind == "llm":
        try:
            return agents[base].with_overrides(model=model)
        except ValidationError as err:
            msg = f"agent {name_or_path!r}: {err}"
            raise SpecError(msg) from err
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") and path.is_file():
        spec = _load(path.read_text(encoding="utf-8"), str(path))
        if spec.dir is not None:  # relative to the declaration's folder
            folder = (path.parent / Path(spec.dir).expanduser()).absolute()
            return spec.model_copy(update={"dir": str(folder)})
        return spec
    msg = f"unknown agent {name_or_path!r}; built-in agents: {', '.join(agents)} (or a YAML path)"
    raise SpecError(msg)
