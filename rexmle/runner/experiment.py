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
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rexmle.declarations import parse_declaration
from rexmle.errors import SpecError
from rexmle.names import NAME_PATTERN

if TYPE_CHECKING:
    from rexmle.agents.registry import AgentSpec
    from rexmle.runner.executor import RunJob

PRESETS = ("paper-grid",)
"""Experiment files shipped with rexmle; ``--experiment paper-grid`` reads one by name."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AgentEntry(_Strict):
    """One agent of the study, with the LLMs it runs with."""

    agent: str
    """A built-in agent id or the path of an agent declaration (YAML)."""
    models: list[str] = []
    """LLM models of an ``llm`` agent, as the gateway's aliases without ``gw/`` (``gpt-5``);
    empty: the agent's declared models (or none, for agents without an LLM)."""
    budget_usd: float | None = Field(default=None, gt=0)
    """LLM spending cap of one run, in US dollars."""
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

    @model_validator(mode="after")
    def _distinct_models(self) -> AgentEntry:
        if len(set(self.models)) != len(self.models):
            msg = f"agent {self.agent!r} lists a model twice: {self.models}"
            raise ValueError(msg)
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
    gpus_per_run: int = Field(default=1, ge=0)
    mini: bool = False
    sandbox: Literal["auto", "bwrap", "local", "docker", "apptainer"] = "auto"
    executor: ExecutorSettings = ExecutorSettings()
    conditions: list[Condition] = []

    @model_validator(mode="after")
    def _consistent(self) -> Experiment:
        if bool(self.tasks) == (self.suite is not None):
            msg = "give either 'tasks' (a list of task ids) or 'suite' (mini or all), not both"
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
    """The condition ``name`` of a shipped preset (for ``rexmle run --condition`` with flags).

    Raises:
        SpecError: no preset declares it, or two declare different ones of that name.
    """
    found = {
        preset: chosen
        for preset in PRESETS
        if (chosen := _condition(load_experiment(preset), name)) is not None
    }
    if len({c.model_dump_json() for c in found.values()}) > 1:
        msg = f"condition {name!r} differs between presets {', '.join(found)}: use --experiment"
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


def time_limit_of(experiment: Experiment, condition: str | None) -> float | None:
    """The agent time limit of a condition's runs (None: each agent's own)."""
    chosen = _condition(experiment, condition)
    if chosen is not None and chosen.time_limit_s is not None:
        return chosen.time_limit_s
    return experiment.time_limit_s


def _condition(experiment: Experiment, name: str | None) -> Condition | None:
    return next((c for c in experiment.conditions if c.name == name), None)


def resolve_agents(experiment: Experiment) -> dict[tuple[str | None, str, str | None], AgentSpec]:
    """The agent declaration of every (condition, agent entry, model), overrides applied.

    Raises:
        SpecError: an agent is neither built in nor a readable declaration file.
    """
    from rexmle.agents.registry import load_agent

    resolved: dict[tuple[str | None, str, str | None], AgentSpec] = {}
    conditions: Sequence[str | None] = [c.name for c in experiment.conditions] or [None]
    for condition in conditions:
        chosen = _condition(experiment, condition)
        for entry in experiment.agents:
            base = load_agent(entry.agent)
            if base.llm is None and (entry.models or entry.budget_usd is not None):
                msg = (
                    f"agent {entry.agent!r} is not an llm agent: 'models' and 'budget_usd' "
                    "apply to llm agents only"
                )
                raise SpecError(msg)
            network = entry.network
            memory = entry.memory_limit_mb
            if chosen is not None:
                network = chosen.network if chosen.network is not None else network
                memory = chosen.memory_limit_mb or memory
            for model in _models_or_default(entry):
                resolved[(condition, entry.agent, model)] = base.with_overrides(
                    command=entry.command,
                    name=entry.name,
                    env=entry.env or None,
                    model=model,
                    steps=entry.steps,
                    step_timeout_s=entry.step_timeout_s,
                    time_limit_s=time_limit_of(experiment, condition),
                    network=network,
                    memory_limit_mb=memory,
                    code_dir=entry.dir,
                )
    return resolved


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

    agents = resolve_agents(experiment)
    budgets = {entry.agent: entry.budget_usd for entry in experiment.agents}
    mini = uses_mini_data(experiment)
    jobs: list[RunJob] = []
    for key in expand(experiment) if keys is None else keys:
        spec = agents[(key.condition, key.agent, key.model)]
        jobs.append(
            make_job(
                spec,
                key.task,
                key.seed,
                time_limit_s=spec.time_limit_s,
                mini=mini,
                runs_dir=runs_dir,
                group=group_of(experiment, key.condition),
                llm_budget_usd=budgets[key.agent],
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
    """Sum of the runs' LLM budgets; None when an LLM agent's run has no budget."""
    runs_without_budget: int


def dry_run_summary(jobs: Sequence[RunJob], *, gpus_per_run: int) -> DryRunSummary:
    """Counts, GPU-hours and cost ceiling of ``jobs`` (see :class:`DryRunSummary`)."""
    gpu_hours = sum(gpus_per_run * job.config.time_limit_s / 3600.0 for job in jobs)
    without = [j for j in jobs if uses_llm(j) and j.config.llm_budget_usd is None]
    ceiling = None
    if not without:
        ceiling = sum(job.config.llm_budget_usd or 0.0 for job in jobs)
    return DryRunSummary(
        n_runs=len(jobs),
        gpus_per_run=gpus_per_run,
        gpu_hours=gpu_hours,
        cost_ceiling_usd=ceiling,
        runs_without_budget=len(without),
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
