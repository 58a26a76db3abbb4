"""How a run differs from the published study: one typed table, each item with an id.

The study is the authors' reference scripts (rajpurkarlab/ReX-MLE at 477c834, ``rex-mle/``) and
its published text. Each :class:`Deviation` says what the study did, what ReX-MLE does and
why, and when it applies to a run (:attr:`Deviation.applies`). Deviations concern the study's
agents only (``llm`` agents: AIDE, ML-Master, R&D-Agent); other agents were not part of it.
Some choices must not be copied (a validation server scoring against the private answers leaks
them; open internet reaches the public labels of our test split): they stay ReX-MLE's and are
stated here. :func:`deviations_of` gives the items of one run, with the run's own values in
the ``ours`` text; ``run.json`` records them (``deviations``) and the dry run prints them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from rexmle.agents.adapters.native_llm import native_backend
from rexmle.agents.registry import NATIVE_ROUTE_ADAPTERS
from rexmle.llm.config import Limits, LlmConfig, load_llm_config
from rexmle.records.runs import DeviationRecord, RunConfig

STUDY_TIME_LIMITS_S = (43200.0, 259200.0)
"""The scripts' wall-clock limits: 12 h (``timeout`` in ``aide/start.sh``, ``ML-Master/start.sh``,
R&D-Agent ``config.yaml``) and 72 h (the ``config_3_days.yaml`` ablation)."""
STUDY_STEPS = {"aide": (2000, 10000), "ml-master": (5000,)}
"""Steps of the scripts: AIDE 2000 (``aide/config.yaml``; 10000 in ``config_3_days.yaml``),
ML-Master 5000 (``ML-Master/config.yaml``)."""
STUDY_STEP_TIMEOUTS_S = {"aide": 32400.0, "ml-master": 43200.0}
"""Seconds per executed script: AIDE ``exec.timeout`` 32400, ML-Master 43200."""


@dataclass(frozen=True)
class RunFacts:
    """What a deviation's test and text need of one run."""

    config: RunConfig
    limits: Limits | None
    """The LLM limits the gateway enforces for the run (None: no gateway)."""
    texts_problem: str | None = None
    """Why the study's texts cannot be used (None: they can, or the run does not ask)."""
    sandbox: str | None = None
    """The sandbox kind (``auto``, ``bwrap``, ``local``, ...); None: not known."""
    llm_config: LlmConfig | None = None
    """The LLM config whose providers serve the run's models (None: the built-in one)."""


def _llm(facts: RunFacts) -> bool:
    return facts.config.agent.llm is not None


def _adapter(facts: RunFacts) -> str | None:
    llm = facts.config.agent.llm
    return None if llm is None else llm.adapter


def _hours(seconds: float) -> str:
    return f"{seconds:g} s ({seconds / 3600:g} h)"


@dataclass(frozen=True)
class Deviation:
    """One item of the table: the study's choice, ours, why, and when it applies."""

    id: str
    item: str
    study: str
    ours: Callable[[RunFacts], str]
    why: str
    applies: Callable[[RunFacts], bool]

    def record(self, facts: RunFacts) -> DeviationRecord:
        """The item as run.json records it for ``facts``' run."""
        return DeviationRecord(
            id=self.id, item=self.item, study=self.study, ours=self.ours(facts), why=self.why
        )


def _fixed(text: str) -> Callable[[RunFacts], str]:
    return lambda _facts: text


def _network(facts: RunFacts) -> str:
    if facts.config.agent.network:
        return "outbound network through an isolated bridge (no host, no private ranges)"
    return "no network in the sandbox; the validation server and the LLM gateway are relayed"


def _rate(facts: RunFacts) -> str:
    limits = facts.limits
    if limits is None:
        return "no LLM gateway"
    per_minute = limits.max_calls_per_minute
    in_flight = limits.max_calls_in_flight
    return (
        f"{per_minute if per_minute is not None else 'no limit of'} calls per minute and "
        f"{in_flight if in_flight is not None else 'no limit of'} calls in flight per run"
    )


def _has_rate_cap(facts: RunFacts) -> bool:
    limits = facts.limits
    return (
        _llm(facts)
        and limits is not None
        and (limits.max_calls_per_minute is not None or limits.max_calls_in_flight is not None)
    )


def _budget(facts: RunFacts) -> str:
    budget = None if facts.limits is None else facts.limits.budget_usd
    return f"a cap of {budget:g} USD per run: the gateway refuses calls past it (budget_exceeded)"


def _capped(facts: RunFacts) -> bool:
    return _llm(facts) and facts.limits is not None and facts.limits.budget_usd is not None


def _steps_differ(facts: RunFacts) -> bool:
    adapter = _adapter(facts)
    llm = facts.config.agent.llm
    if adapter not in STUDY_STEPS or llm is None:
        return False
    return llm.steps not in STUDY_STEPS[adapter]


def _step_timeout_differs(facts: RunFacts) -> bool:
    adapter = _adapter(facts)
    llm = facts.config.agent.llm
    if adapter not in STUDY_STEP_TIMEOUTS_S or llm is None:
        return False
    return llm.step_timeout_s != STUDY_STEP_TIMEOUTS_S[adapter]


NATIVE_APIS = ("anthropic", "gemini")
"""Provider protocols the study's agents spoke natively (Claude, Gemini)."""


@functools.cache
def _built_in_llm_config() -> LlmConfig:
    return load_llm_config()


def _models_by_api(facts: RunFacts) -> dict[str, str]:
    """The run's configured models (every role, in role order) -> their provider's protocol."""
    llm = facts.config.agent.llm
    if llm is None:
        return {}
    config = facts.llm_config or _built_in_llm_config()
    found: dict[str, str] = {}
    for model in llm.models.values():
        if model in config.models:
            found[model] = config.providers[config.models[model].provider].api
    return found


def _translated(facts: RunFacts) -> list[str]:
    """The run's Claude and Gemini models the agent sends on the OpenAI-style route.

    Definition: a model of an Anthropic or Gemini provider that the run's adapter does not send
    through the agent's own back-end of that protocol (``llm_route`` ``openai``, or an adapter
    without the native route); the gateway translates those calls into the provider's API.
    """
    llm = facts.config.agent.llm
    if llm is None:
        return []
    native = llm.adapter in NATIVE_ROUTE_ADAPTERS
    return [
        model
        for model, api in _models_by_api(facts).items()
        if api in NATIVE_APIS and not (native and native_backend(model, llm.llm_route) == api)
    ]


def _routes(facts: RunFacts) -> str:
    llm = facts.config.agent.llm
    models = ", ".join(_translated(facts))
    how = f"llm_route = {None if llm is None else llm.llm_route}"
    if llm is not None and llm.adapter not in NATIVE_ROUTE_ADAPTERS:
        how = f"the {llm.adapter} adapter has no native route"
    return (
        f"{models} as gw/<model> through the agent's OpenAI-compatible client, translated by "
        f"the gateway into the provider's API ({how})"
    )


def _gemini_translated_by_litellm(facts: RunFacts) -> list[str]:
    """AIDE's Gemini models on its native back-end when the gateway has LiteLLM translate
    Google's OpenAI-compatible route into ``generateContent`` (``gemini_openai_route:
    litellm``); the real back-end calls Google's OpenAI-compatible endpoint itself.
    """
    llm = facts.config.agent.llm
    config = facts.llm_config or _built_in_llm_config()
    if llm is None or llm.adapter != "aide" or config.gemini_openai_route != "litellm":
        return []
    return [
        model
        for model, api in _models_by_api(facts).items()
        if api == "gemini" and native_backend(model, llm.llm_route) == "gemini"
    ]


def _openai_models(facts: RunFacts) -> list[str]:
    return [model for model, api in _models_by_api(facts).items() if api == "openai"]


def _openai_endpoint(facts: RunFacts) -> str:
    config = facts.llm_config or _built_in_llm_config()
    models = _openai_models(facts)
    where = sorted(
        {
            f"provider {name} at {config.providers[name].base_url}"
            for name in (config.models[m].provider for m in models)
        }
    )
    return (
        f"{', '.join(models)} through the gateway's OpenAI-style route to {', '.join(where)} "
        "(the LLM config's)"
    )


def _llm_field(name: str) -> Callable[[RunFacts], str]:
    def text(facts: RunFacts) -> str:
        llm = facts.config.agent.llm
        value = None if llm is None else getattr(llm, name)
        return f"{name} = {value if value is not None else 'the agent default'}"

    return text


DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        id="network",
        item="network",
        study="internet on for the agents (no sandbox)",
        ours=_network,
        why="open internet lets an agent download the public labels of ReX-MLE's test split",
        applies=_llm,
    ),
    Deviation(
        id="sandbox",
        item="isolation",
        study="agents ran as ordinary processes of the node, seeing its files",
        ours=_fixed(
            "each run in a sandbox (bwrap, docker or apptainer) that shows only its workspace, "
            "the public data and its environment, read-only where it may not write"
        ),
        why="an agent is hostile: nothing it can read or run may yield answers or reach the host",
        applies=lambda facts: _llm(facts) and facts.sandbox != "local",
    ),
    Deviation(
        id="environment",
        item="packages",
        study="one shared conda environment for every agent (torch 2.2, TensorFlow, "
        "segmentation-models-pytorch, cc3d, ...)",
        ours=_fixed("a locked environment per agent, its lock hash recorded in run.json"),
        why="reproducible installs; with no network nothing is installed during a run",
        applies=_llm,
    ),
    Deviation(
        id="validation",
        item="validation",
        study="a validation server ran the full grader against the private answers",
        ours=_fixed(
            "the validation server checks the format only and never scores; public/score.py "
            "scores folders the agent builds from training labels"
        ),
        why="a score against the test answers leaks them",
        applies=_llm,
    ),
    Deviation(
        id="llm-routes",
        item="Claude and Gemini routes",
        study="Claude and Gemini through the agents' own Anthropic and Gemini back-ends, chosen "
        "by the model's name",
        ours=_routes,
        why="llm_route openai (the default; the ReX-MLE condition's) keeps every model on the "
        "agent's one OpenAI-compatible path; the paper conditions set native for AIDE and "
        "ML-Master, and R&D-Agent's adapter has no native route",
        applies=lambda facts: bool(_translated(facts)),
    ),
    Deviation(
        id="gemini-openai-translated",
        item="Gemini's OpenAI-compatible endpoint",
        study="AIDE's Gemini back-end sends OpenAI chat completions to Google's "
        "OpenAI-compatible endpoint",
        ours=lambda facts: (
            f"{', '.join(_gemini_translated_by_litellm(facts))}: the gateway's LiteLLM "
            "translates those calls into generateContent (gemini_openai_route: litellm)"
        ),
        why="the LLM config asks for LiteLLM's translation; the default (google) forwards the "
        "calls to Google's own OpenAI-compatible endpoint unchanged",
        applies=lambda facts: bool(_gemini_translated_by_litellm(facts)),
    ),
    Deviation(
        id="openai-endpoint",
        item="OpenAI endpoint",
        study="GPT-5 (and R&D-Agent's embedding model) through an Azure OpenAI endpoint, API "
        "version 2024-12-01-preview",
        ours=_openai_endpoint,
        why="ReX-MLE's gateway meters every call and has no Azure provider kind: the same model "
        "names over the same OpenAI protocol, without the Azure deployment's own settings "
        "(API version, content filters)",
        applies=lambda facts: bool(_openai_models(facts)),
    ),
    Deviation(
        id="llm-rate",
        item="LLM rate",
        study="no limit on calls",
        ours=_rate,
        why="a looping agent cannot flood a provider; at the agents' pace it rarely binds",
        applies=_has_rate_cap,
    ),
    Deviation(
        id="llm-budget",
        item="LLM spend",
        study="no USD cap",
        ours=_budget,
        why="ReX-MLE's guard against runaway spend (the paper condition sets budget_usd: none)",
        applies=_capped,
    ),
    Deviation(
        id="gpus",
        item="GPUs",
        study="ML-Master pinned to GPU 0; AIDE saw every GPU of the node",
        ours=_fixed("each run sees only the GPUs it is given (CUDA_VISIBLE_DEVICES)"),
        why="runs share nodes; a run's compute must be the same for every agent",
        applies=_llm,
    ),
    Deviation(
        id="grading-script",
        item="grading code",
        study="each task's grade.py copied into public/ and appended to AIDE's prompt and "
        "R&D-Agent's description",
        ours=_fixed(
            "public/score.py, which runs the grader's own metric code on two submission-shaped "
            "folders; under the study's texts its use and code are appended the same way"
        ),
        why="the same metrics without a second copy of the grader to keep in step",
        applies=_llm,
    ),
    Deviation(
        id="ml-master-upload",
        item="ML-Master validation upload",
        study="the CSV alone (file-based tasks likely failed validation)",
        ours=_fixed("the CSV with every file it names"),
        why="a format check must see the whole submission",
        applies=lambda facts: _adapter(facts) == "ml-master",
    ),
    Deviation(
        id="prompts",
        item="prompts",
        study="its rules text, AIDE's notes, its task descriptions (294-1112 words) and "
        "ML-Master's fixed prompt files",
        ours=_fixed("ReX-MLE's own rules and task descriptions"),
        why="the ReX-MLE condition (the paper condition uses the study's texts)",
        applies=lambda facts: _llm(facts) and facts.config.prompts != "study",
    ),
    Deviation(
        id="prompts-unavailable",
        item="prompts",
        study="its rules text, AIDE's notes, its task descriptions and ML-Master's fixed prompt "
        "files",
        ours=lambda facts: f"ReX-MLE's own texts: {facts.texts_problem}",
        why="the study's texts are fetched from its pinned commit and verified; these could not "
        "be used",
        applies=lambda facts: (
            _llm(facts) and facts.config.prompts == "study" and facts.texts_problem is not None
        ),
    ),
    Deviation(
        id="selection",
        item="graded submission",
        study="AIDE: the last one written; ML-Master: best_submission/; R&D-Agent: its SOTA "
        "experiment's; none of them checked",
        ours=_fixed(
            "best-valid: each candidate checked by the validation server, the best valid one "
            "by the agent's own metric graded"
        ),
        why="the ReX-MLE condition (the paper condition uses the study's pick)",
        applies=lambda facts: (
            facts.config.agent.llm is not None and facts.config.agent.llm.selection != "study"
        ),
    ),
    Deviation(
        id="time-limit",
        item="time per run",
        study="43200 s (12 h) enforced by the scripts; 259200 s in the 3-day ablation",
        ours=lambda facts: _hours(facts.config.time_limit_s),
        why="a chosen condition (24h: the published text, which says 24 h)",
        applies=lambda facts: _llm(facts) and facts.config.time_limit_s not in STUDY_TIME_LIMITS_S,
    ),
    Deviation(
        id="steps",
        item="agent steps",
        study="AIDE 2000 (10000 in the 3-day ablation), ML-Master 5000",
        ours=_llm_field("steps"),
        why="a chosen setting",
        applies=_steps_differ,
    ),
    Deviation(
        id="step-timeout",
        item="time per executed script",
        study="AIDE 32400 s, ML-Master 43200 s",
        ours=_llm_field("step_timeout_s"),
        why="a chosen setting",
        applies=_step_timeout_differs,
    ),
    Deviation(
        id="rdagent-scenario",
        item="R&D-Agent scenario",
        study="KaggleScen with the MLE-data mode on, metric direction from the leaderboard",
        ours=_llm_field("scenario"),
        why="the ReX-MLE condition",
        applies=lambda facts: (
            _adapter(facts) == "rdagent"
            and facts.config.agent.llm is not None
            and facts.config.agent.llm.scenario != "kaggle"
        ),
    ),
    Deviation(
        id="solution-writeups",
        item="solution write-ups",
        study="described in the published text (agents given the winning teams' write-ups); "
        "no files or code published",
        ours=_fixed("ReX-MLE's own write-ups, facts with their sources, added to the instructions"),
        why="the study's write-ups are not available",
        applies=lambda facts: _llm(facts) and bool(facts.config.solution_informed),
    ),
)
"""Every deviation, in the order the dry run prints them."""


def deviations_of(
    config: RunConfig,
    limits: Limits | None,
    *,
    texts_problem: str | None = None,
    sandbox: str | None = None,
    llm_config: LlmConfig | None = None,
) -> list[DeviationRecord]:
    """The deviations that apply to the run of ``config`` under the LLM ``limits`` enforced.

    ``texts_problem``: why the study's texts cannot be used, when they cannot; ``sandbox``: the
    sandbox kind (``local`` is no sandbox, as the study ran); ``llm_config``: the LLM config of
    the run's gateway (None: the built-in one).
    """
    facts = RunFacts(
        config=config,
        limits=limits,
        texts_problem=texts_problem,
        sandbox=sandbox,
        llm_config=llm_config,
    )
    return [d.record(facts) for d in DEVIATIONS if d.applies(facts)]
