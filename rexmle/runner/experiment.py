"""Experiment files: a whole study in one YAML file, expanded to runs deterministically.

An experiment names agents (each with its LLM models and per-run budget), tasks or a suite,
an explicit list of seeds, the time limit, GPUs per run, the sandbox, the executor with its
resources, and conditions (named sets of overrides, e.g. a 24 h and a 3-day time limit)::

    name: my-study
    agents:
      - {agent: aide, models: [gpt-5, claude-sonnet-4-5], budget_usd: 50}
      - {agent: baseline}
    tasks: [isles22, seg_a]        # or: suite: all
    seeds: [0, 1, 2]
    time_limit_s: 86400
    gpus_per_run: 1
    sandbox: auto
    executor: {kind: slurm, slurm: {partition: gpu, max_parallel: 20}}
    conditions:
      - {name: 24h}
      - {name: 3day, time_limit_s: 259200}
      - name: paper                  # what a condition may change, all optional
        prompts: study               # study | rexmle: the texts the agents read
        selection: study             # study | best-valid: which submission is graded
        solution_informed: false     # the task's winning-solution write-up in the instructions
        budget_usd: none             # USD per run, or none (no cap, still metered)
        agents: {aide: {steps: 2000, step_timeout_s: 32400, llm_route: native}}
                                     # per agent, also time/budget/selection/scenario

Expansion order is conditions x agents x models x tasks x seeds, each in file order, so the same
file always gives the same runs in the same order. A run of an experiment is the same run (same
folder, same run id) as the one ``rexmle run`` builds from flags with the same agent, task, seed,
time limit and data kind, and ``--group`` equal to the experiment's group: the run folder is
``<runs>/<group>/<task>/<agent>/seed-<k>``, where ``<group>`` is the experiment's ``group`` (default
its name), followed by ``-<condition>`` when the experiment declares conditions, and ``<agent>`` is
the agent's id followed by ``-<model>`` when a model is given: a model entry of an ``llm`` agent is
the same as ``--agent <agent>/<model>`` (every chat role of the agent uses that model).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rexmle.agents.registry import LlmRoute, RdAgentScenario, SelectionPolicy
from rexmle.declarations import parse_declaration
from rexmle.errors import SpecError
from rexmle.names import NAME_PATTERN

if TYPE_CHECKING:
    from rexmle.agents.registry import AgentSpec
    from rexmle.runner.executor import RunJob
    from rexmle.runner.settings import RunSettings

PRESETS = ("paper-grid", "paper-grid-3day")
"""Experiment files shipped with rexmle; ``--experiment paper-grid`` reads one by name."""

_T = TypeVar("_T")
PromptSet = Literal["study", "rexmle"]
"""Which texts the agents read: ``rexmle`` (ReX-MLE's own rules and task descriptions) or
``study`` (the published study's texts, fetched and pinned by :mod:`rexmle.agents.study_texts`,
composed per agent as the study composed them, with ``score.py`` handed over as the study
handed over its grading script)."""
NO_CAP = "none"
"""``budget_usd: none``: the run has no USD cap (as the study), and is still metered."""
Budget = float | Literal["none"]
"""A per-run LLM budget in US dollars, or ``none`` (no cap, metered all the same)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AgentEntry(_Strict):
    """One agent of the study, with the LLMs it runs with."""

    agent: str
    """A built-in agent id or the path of an agent declaration (YAML)."""
    models: list[str] = []
    """LLM models of an ``llm`` agent, as the gateway's aliases without ``gw/`` (``gpt-5``);
    empty: the agent's declared models (or none, for agents without an LLM)."""
    budget_usd: Budget | None = None
    """LLM spending cap of one run, in US dollars, or ``none`` (no cap, still metered); unset:
    the batch's (``--llm-budget-usd``, else the LLM config's)."""
    memory_limit_mb: int | None = Field(default=None, gt=0)
    network: bool | None = None
    command: str | None = None
    """The shell command of a ``command`` agent (``--agent-cmd``)."""
    name: str | None = None
    """The agent's folder name (``--agent-name``)."""
    env: list[str] = []
    """Host variables passed into the sandbox (``--agent-env``)."""
    steps: int | None = Field(default=None, gt=0)
    """LLM agents: search steps or loops (``--steps``)."""
    step_timeout_s: float | None = Field(default=None, gt=0)
    """LLM agents: seconds per script (``--step-timeout``)."""
    dir: str | None = None
    """The folder of the agent's own code (``--agent-dir``; relative: to the experiment file)."""
    time_limit_s: float | None = Field(default=None, gt=0)
    """This agent's wall-clock limit per run (wins over the experiment's)."""
    selection: SelectionPolicy | None = None
    """LLM agents: which submission is graded (``study`` or ``best-valid``)."""
    scenario: RdAgentScenario | None = None
    """R&D-Agent: its scenario (``kaggle``: the study's KaggleScen; ``data-science``)."""
    llm_route: LlmRoute | None = None
    """AIDE, ML-Master: how the agent reaches the gateway (``openai`` or ``native``, see
    :data:`rexmle.agents.registry.LlmRoute`)."""

    @model_validator(mode="after")
    def _distinct_models(self) -> AgentEntry:
        if len(set(self.models)) != len(self.models):
            msg = f"agent {self.agent!r} lists a model twice: {self.models}"
            raise ValueError(msg)
        base, slash, named = self.agent.partition("/")
        if self.models and slash and not self.agent.endswith((".yaml", ".yml")):
            msg = (
                f"agent {self.agent!r} names its model ({named}) and models lists "
                f"{self.models}: give the model once (agent {base!r} with models, or "
                f"{self.agent!r} alone)"
            )
            raise ValueError(msg)
        _check_budget(self.budget_usd, f"agent {self.agent!r}")
        return self


def _check_budget(value: Budget | None, where: str) -> None:
    if isinstance(value, float | int) and value <= 0:
        msg = f"{where}: budget_usd must be > 0 US dollars or 'none' (no cap), got {value}"
        raise ValueError(msg)


class AgentOverride(_Strict):
    """What a condition changes for one agent of the study (None: as the agent entry says)."""

    steps: int | None = Field(default=None, gt=0)
    step_timeout_s: float | None = Field(default=None, gt=0)
    time_limit_s: float | None = Field(default=None, gt=0)
    selection: SelectionPolicy | None = None
    budget_usd: Budget | None = None
    scenario: RdAgentScenario | None = None
    """R&D-Agent only: its scenario under this condition."""
    llm_route: LlmRoute | None = None
    """AIDE, ML-Master only: the LLM route under this condition (``native``: Claude and Gemini
    through the agent's own Anthropic and Gemini back-ends, as the study ran them)."""

    @model_validator(mode="after")
    def _budget(self) -> AgentOverride:
        _check_budget(self.budget_usd, "agent override")
        return self


class Condition(_Strict):
    """A named variant of the study: its overrides apply to every run of it.

    Its runs live in ``<group>-<name>`` and carry ``condition: <name>`` in their config (so in
    their run id). Each field is one override, None meaning "as the study says"; a new kind of
    override is a new optional field here plus its use in :func:`resolve_agents` (it then reaches
    every run through the agent declaration or the run config, like the ones below).
    ``rexmle run --condition NAME`` runs one condition of an experiment, or applies a shipped
    preset's condition to a run given by flags.
    """

    name: str = Field(pattern=NAME_PATTERN)
    description: str = ""
    time_limit_s: float | None = Field(default=None, gt=0)
    network: bool | None = None
    memory_limit_mb: int | None = Field(default=None, gt=0)
    prompts: PromptSet | None = None
    """The texts the agents read (see :data:`PromptSet`)."""
    selection: SelectionPolicy | None = None
    """Which submission of every LLM agent is graded."""
    solution_informed: bool | None = None
    """True: the instructions (and every agent's prompt) carry the task's winning-solution
    write-up with its sources."""
    budget_usd: Budget | None = None
    """Every LLM run's USD cap, or ``none``."""
    agents: dict[str, AgentOverride] = {}
    """Per agent (its entry's ``agent``): steps, step timeout, time limit, selection, budget,
    scenario, LLM route."""

    @model_validator(mode="after")
    def _budget(self) -> Condition:
        _check_budget(self.budget_usd, f"condition {self.name!r}")
        return self


class SlurmResources(_Strict):
    """What each array task asks Slurm for, and how the array is throttled."""

    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    cpus_per_task: int = Field(default=8, gt=0)
    mem_gb: float = Field(default=64.0, gt=0)
    max_parallel: int | None = Field(default=None, gt=0)
    """At most this many runs of the array at once (``--array=...%N``)."""
    grading_time_s: float = Field(default=3600.0, ge=0)
    """Time reserved after the agent's limit for copying the submission and grading."""
    margin_s: float = Field(default=300.0, ge=60)
    """Seconds before the job's end at which Slurm sends SIGTERM to the harness (``--signal``).

    At least 60: Slurm may send the signal up to a minute early."""
    extra_args: list[str] = []
    """More ``sbatch`` options, passed as given (e.g. ``--constraint=h100``)."""


class ExecutorSettings(_Strict):
    """Where the runs execute."""

    kind: Literal["local", "slurm"] = "local"
    concurrency: int | None = Field(default=None, gt=0)
    """Local runs at once (default one per GPU, else 1)."""
    gpus: list[str] = []
    """Local GPU ids, one per running run."""
    slurm: SlurmResources = SlurmResources()


class Experiment(_Strict):
    """The typed content of an experiment file (see the module docstring)."""

    name: str = Field(pattern=NAME_PATTERN)
    description: str = ""
    group: str | None = Field(default=None, pattern=NAME_PATTERN)
    """The runs sub-folder; default the experiment's name."""
    agents: list[AgentEntry] = Field(min_length=1)
    tasks: list[str] = []
    suite: Literal["mini", "all"] | None = None
    seeds: list[int] = Field(min_length=1)
    time_limit_s: float | None = Field(default=None, gt=0)
    """The agent's wall-clock limit per run; default each agent's own."""
    prompts: PromptSet = "rexmle"
    """The texts the agents read (see :data:`PromptSet`); a condition may change it."""
    solution_informed: bool = False
    """The instructions carry the task's winning-solution write-up (a condition may change it)."""
    gpus_per_run: int = Field(default=1, ge=0)
    mini: bool = False
    sandbox: Literal["auto", "bwrap", "local", "docker", "apptainer"] = "auto"
    executor: ExecutorSettings = ExecutorSettings()
    conditions: list[Condition] = []

    @model_validator(mode="after")
    def _consistent(self) -> Experiment:
        if bool(self.tasks) == (self.suite is not None):
            both = ", not both" if self.tasks else ""
            msg = f"give either 'tasks' (a list of task ids) or 'suite' (mini or all){both}"
            raise ValueError(msg)
        named: tuple[tuple[str, list[str]], ...] = (
            ("seeds", [str(s) for s in self.seeds]),
            ("tasks", list(self.tasks)),
            ("conditions", [c.name for c in self.conditions]),
        )
        for label, values in named:
            repeated = sorted({v for v in values if values.count(v) > 1})
            if repeated:
                msg = f"{label} repeat: {', '.join(repeated)}"
                raise ValueError(msg)
        if any(seed < 0 for seed in self.seeds):
            msg = f"seeds must be >= 0, got {self.seeds}"
            raise ValueError(msg)
        entries = {entry.agent for entry in self.agents} | {
            entry.agent.partition("/")[0] for entry in self.agents
        }
        for condition in self.conditions:
            unknown = sorted(set(condition.agents) - entries)
            if unknown:
                msg = (
                    f"condition {condition.name!r} overrides agents the study does not run: "
                    f"{', '.join(unknown)} (its agents: {', '.join(sorted(entries))})"
                )
                raise ValueError(msg)
        return self

    @property
    def base_group(self) -> str:
        """The runs sub-folder before any condition suffix."""
        return self.group or self.name

    def only_condition(self, name: str) -> Experiment:
        """The same study reduced to its condition ``name``.

        Raises:
            SpecError: the experiment has no condition of that name (the message lists them).
        """
        chosen = _condition(self, name)
        if chosen is None:
            known = ", ".join(c.name for c in self.conditions) or "none"
            msg = f"experiment {self.name!r} has no condition {name!r} (its conditions: {known})"
            raise SpecError(msg)
        return self.model_copy(update={"conditions": [chosen]})


def preset_condition(name: str) -> Condition:
    """The condition ``name`` of a shipped preset (for ``rexmle run --condition`` with flags);
    ``PRESET/NAME`` picks one preset's.

    Raises:
        SpecError: no preset declares it, or two declare different ones of that name.
    """
    preset_name, _, condition_name = name.rpartition("/")
    if preset_name and preset_name not in PRESETS:
        msg = f"no preset {preset_name!r} (presets: {', '.join(PRESETS)})"
        raise SpecError(msg)
    found = {
        preset: chosen
        for preset in ([preset_name] if preset_name else PRESETS)
        if (chosen := _condition(load_experiment(preset), condition_name)) is not None
    }
    if len({c.model_dump_json() for c in found.values()}) > 1:
        msg = (
            f"condition {name!r} differs between presets {', '.join(found)}: name one, e.g. "
            f"--condition {next(iter(found))}/{name}"
        )
        raise SpecError(msg)
    if not found:
        known = sorted({c.name for p in PRESETS for c in load_experiment(p).conditions})
        msg = (
            f"no preset declares a condition {name!r} (preset conditions: "
            f"{', '.join(known) or 'none'}); for your own, write an experiment file"
        )
        raise SpecError(msg)
    return next(iter(found.values()))


@dataclass(frozen=True)
class RunKey:
    """One run of an experiment, before its agent declaration is read."""

    condition: str | None
    agent: str
    model: str | None
    task: str
    seed: int


def agent_folder(agent_id: str, model: str | None) -> str:
    """The agent's folder name: its id, plus ``-<model>`` when a model is given."""
    return agent_id if model is None else f"{agent_id}-{model}"


def load_experiment(name_or_path: str | Path) -> Experiment:
    """An experiment from a YAML file, or a shipped preset by name (``paper-grid``).

    Raises:
        SpecError: the file is missing, not YAML, or does not match the model (the message says
            which field and why).
    """
    text: str
    where = str(name_or_path)
    if str(name_or_path) in PRESETS:
        folder = resources.files("rexmle.runner").joinpath("experiment_presets")
        text = folder.joinpath(f"{name_or_path}.yaml").read_text(encoding="utf-8")
        where = f"preset {name_or_path}"
    else:
        path = Path(name_or_path)
        if not path.is_file():
            msg = f"experiment file {path} does not exist (presets: {', '.join(PRESETS)})"
            raise SpecError(msg)
        text = path.read_text(encoding="utf-8")
    experiment = parse_declaration(text, Experiment, where, what="experiment")
    if str(name_or_path) in PRESETS:
        return experiment
    base = Path(name_or_path).parent
    agents = [
        e
        if e.dir is None
        else e.model_copy(update={"dir": str((base / Path(e.dir).expanduser()).absolute())})
        for e in experiment.agents
    ]
    return experiment.model_copy(update={"agents": agents})


def _models_or_default(entry: AgentEntry) -> list[str | None]:
    """The entry's models; ``[None]`` (the agent's default model) when it names none."""
    return list(entry.models) or [None]


def task_ids(experiment: Experiment) -> list[str]:
    """The experiment's tasks, in file order (a suite: every registered task).

    Raises:
        SpecError: an unknown task id.
    """
    from rexmle.runner.batch import select_tasks

    tasks, _ = select_tasks(experiment.tasks, experiment.suite)
    return tasks


def uses_mini_data(experiment: Experiment) -> bool:
    """Whether the runs use the mini data (``mini: true`` or the mini suite)."""
    return experiment.mini or experiment.suite == "mini"


def expand(experiment: Experiment) -> list[RunKey]:
    """Every run of the experiment, in expansion order (see the module docstring).

    Raises:
        SpecError: an unknown task id.
    """
    conditions: Sequence[str | None] = [c.name for c in experiment.conditions] or [None]
    tasks = task_ids(experiment)
    return [
        RunKey(condition=condition, agent=entry.agent, model=model, task=task, seed=seed)
        for condition in conditions
        for entry in experiment.agents
        for model in _models_or_default(entry)
        for task in tasks
        for seed in experiment.seeds
    ]


def group_of(experiment: Experiment, condition: str | None) -> str:
    """The runs sub-folder of a condition's runs."""
    return experiment.base_group if condition is None else f"{experiment.base_group}-{condition}"


def time_limit_of(
    experiment: Experiment, condition: str | None, agent: str | None = None
) -> float | None:
    """The agent time limit of a condition's runs (None: the agent's own).

    Precedence: the condition's override for ``agent``, the condition's limit, the agent
    entry's, the experiment's.
    """
    chosen = _condition(experiment, condition)
    entry = next((e for e in experiment.agents if e.agent == agent), None)
    override = _override_for(chosen, agent) if agent is not None else AgentOverride()
    for value in (
        override.time_limit_s,
        None if chosen is None else chosen.time_limit_s,
        None if entry is None else entry.time_limit_s,
    ):
        if value is not None:
            return value
    return experiment.time_limit_s


def _condition(experiment: Experiment, name: str | None) -> Condition | None:
    return next((c for c in experiment.conditions if c.name == name), None)


def _override_for(
    chosen: Condition | None, agent: str, agent_id: str | None = None
) -> AgentOverride:
    """The condition's override of an agent entry: by the entry's ``agent`` as written, its id
    before ``/<model>``, or its declaration's id; an empty override when there is none.
    """
    if chosen is None:
        return AgentOverride()
    for key in (agent, agent.partition("/")[0], agent_id):
        if key is not None and key in chosen.agents:
            return chosen.agents[key]
    return AgentOverride()


def with_condition(experiment: Experiment, condition: Condition) -> Experiment:
    """A study given by flags with a preset's condition applied (``rexmle run --condition``):
    the condition's per-agent overrides are kept for the study's agents only.
    """
    names = {e.agent for e in experiment.agents} | {
        e.agent.partition("/")[0] for e in experiment.agents
    }
    kept = {name: value for name, value in condition.agents.items() if name in names}
    narrowed = condition.model_copy(update={"agents": kept})
    return experiment.model_copy(update={"conditions": [narrowed]})


@dataclass(frozen=True)
class ResolvedEntry:
    """One (condition, agent entry, model) of a study with every override applied."""

    spec: AgentSpec
    budget_usd: Budget | None
    """The run's own USD cap, ``none`` (no cap), or None (the batch's)."""
    prompts: PromptSet
    solution_informed: bool


def _first(*values: _T | None) -> _T | None:
    """The first value that is not None (None when all are)."""
    return next((v for v in values if v is not None), None)


def resolve_entries(
    experiment: Experiment,
) -> dict[tuple[str | None, str, str | None], ResolvedEntry]:
    """Every (condition, agent entry, model) of the study, overrides applied.

    A condition wins over the agent entry, the entry over the experiment, the experiment over
    the agent's declaration; within a condition its per-agent override wins over its general
    fields.

    Raises:
        SpecError: an agent is neither built in nor a readable declaration file, or an LLM-only
            setting is given for an agent without an LLM.
    """
    from rexmle.agents.registry import load_agent

    resolved: dict[tuple[str | None, str, str | None], ResolvedEntry] = {}
    conditions: Sequence[str | None] = [c.name for c in experiment.conditions] or [None]
    for condition in conditions:
        chosen = _condition(experiment, condition)
        for entry in experiment.agents:
            base = load_agent(entry.agent)
            override = _override_for(chosen, entry.agent, base.id)
            budget: Budget | None = _first(
                override.budget_usd, None if chosen is None else chosen.budget_usd, entry.budget_usd
            )
            llm_only = {
                "models": entry.models,
                "budget_usd": entry.budget_usd if base.llm is None else None,
                "steps": entry.steps or override.steps,
                "step_timeout_s": entry.step_timeout_s or override.step_timeout_s,
                "selection": entry.selection or override.selection,
                "scenario": entry.scenario or override.scenario,
                "llm_route": entry.llm_route or override.llm_route,
            }
            given = [name for name, value in llm_only.items() if value]
            if base.llm is None and given:
                msg = (
                    f"agent {entry.agent!r} is not an llm agent: {', '.join(given)} apply to "
                    "llm agents only"
                )
                raise SpecError(msg)
            network = entry.network
            memory = entry.memory_limit_mb
            if chosen is not None:
                network = chosen.network if chosen.network is not None else network
                memory = chosen.memory_limit_mb or memory
            selection: SelectionPolicy | None = _first(
                override.selection, None if chosen is None else chosen.selection, entry.selection
            )
            prompts: PromptSet = (
                chosen.prompts if chosen is not None and chosen.prompts else experiment.prompts
            )
            informed = _first(
                None if chosen is None else chosen.solution_informed, experiment.solution_informed
            )
            for model in _models_or_default(entry):
                spec = base.with_overrides(
                    command=entry.command,
                    name=entry.name,
                    env=entry.env or None,
                    model=model,
                    steps=override.steps or entry.steps,
                    step_timeout_s=override.step_timeout_s or entry.step_timeout_s,
                    time_limit_s=time_limit_of(experiment, condition, entry.agent),
                    network=network,
                    memory_limit_mb=memory,
                    code_dir=entry.dir,
                    selection=selection if base.llm is not None else None,
                    scenario=override.scenario or entry.scenario,
                    llm_route=override.llm_route or entry.llm_route,
                )
                resolved[(condition, entry.agent, model)] = ResolvedEntry(
                    spec=spec,
                    budget_usd=budget if base.llm is not None else None,
                    prompts=prompts,
                    solution_informed=bool(informed),
                )
    return resolved


def resolve_agents(experiment: Experiment) -> dict[tuple[str | None, str, str | None], AgentSpec]:
    """The agent declaration of every (condition, agent entry, model), overrides applied.

    Raises:
        SpecError: see :func:`resolve_entries`.
    """
    return {key: value.spec for key, value in resolve_entries(experiment).items()}


def experiment_jobs(
    experiment: Experiment,
    runs_dir: Path,
    keys: Sequence[RunKey] | None = None,
    *,
    recorded_name: str | None = None,
) -> list[RunJob]:
    """Every run of the experiment as a job (config, group, folder), in expansion order.

    ``keys``: the expansion, when the caller has it already. ``recorded_name``: the name
    ``run.json`` gives as ``experiment`` (the file's name; None for a study given by flags).

    Raises:
        SpecError: an unknown task or agent.
    """
    from rexmle.runner.batch import make_job

    entries = resolve_entries(experiment)
    mini = uses_mini_data(experiment)
    jobs: list[RunJob] = []
    for key in expand(experiment) if keys is None else keys:
        entry = entries[(key.condition, key.agent, key.model)]
        jobs.append(
            make_job(
                entry.spec,
                key.task,
                key.seed,
                time_limit_s=entry.spec.time_limit_s,
                mini=mini,
                runs_dir=runs_dir,
                group=group_of(experiment, key.condition),
                llm_budget_usd=entry.budget_usd
                if isinstance(entry.budget_usd, float | int)
                else None,
                llm_uncapped=entry.budget_usd == NO_CAP,
                prompts=entry.prompts,
                solution_informed=entry.solution_informed,
                condition=key.condition,
                experiment=recorded_name,
            )
        )
    return jobs


@dataclass(frozen=True)
class DryRunSummary:
    """What an experiment (or a batch given by flags) asks for, before anything runs."""

    n_runs: int
    gpus_per_run: int
    gpu_hours: float
    """Sum over runs of ``gpus_per_run * time_limit_s / 3600``: the allocation it may use."""
    cost_ceiling_usd: float | None
    """Sum of the USD caps the gateway enforces on the LLM runs; None when one has no cap."""
    runs_without_budget: int
    """LLM runs without a USD cap (metered all the same)."""


def dry_run_summary(
    jobs: Sequence[RunJob], *, gpus_per_run: int, settings: RunSettings | None = None
) -> DryRunSummary:
    """Counts, GPU-hours and the enforced cost ceiling of ``jobs`` under ``settings`` (None:
    the built-in LLM config, no batch flags); see :mod:`rexmle.runner.llm_cost`.
    """
    from rexmle.runner.dry_run import cost_ceiling, llm_settings

    gpu_hours = sum(gpus_per_run * job.config.time_limit_s / 3600.0 for job in jobs)
    ceiling: float | None = 0.0
    uncapped = 0
    if any(uses_llm(job) for job in jobs):
        _, batch = llm_settings(settings)
        ceiling, uncapped = cost_ceiling(jobs, batch)
    return DryRunSummary(
        n_runs=len(jobs),
        gpus_per_run=gpus_per_run,
        gpu_hours=gpu_hours,
        cost_ceiling_usd=ceiling,
        runs_without_budget=uncapped,
    )


def uses_llm(job: RunJob) -> bool:
    """Whether the run's agent calls an LLM (an ``llm`` agent)."""
    return job.config.agent.llm is not None


def models_of(job: RunJob) -> str:
    """The run's LLM models (``-`` for agents without one), for tables."""
    llm = job.config.agent.llm
    if llm is None:
        return "-"
    return ",".join(dict.fromkeys(llm.models.values()))
