"""What a run may spend on LLM calls: the limits the gateway enforces, and a cost forecast.

Enforced limits (:func:`enforced_limits`): the LLM config's ``limits`` (the built-in
``rexmle/llm/default_llm.yaml`` or ``--llm-config``), then the batch's ``--llm-budget-usd`` and
``--llm-max-calls-per-minute``, then the run's own: a budget in its config
(``llm_budget_usd``) wins, and ``llm_uncapped`` (an experiment's ``budget_usd: none``) removes
the USD cap while every call is still metered. The executor gives the gateway exactly these
limits, and the dry run prints them, so what is printed is what is enforced.

Forecast (:func:`forecast_usd`): an estimate, not a measurement. Per run::

    units   = min(declared steps, time_limit_s / seconds_per_unit)   (no steps: the time bound)
    calls   = units * calls_per_unit
    cost    = calls * (input_tokens * input price + output_tokens * output price) / 1e6

with the per-adapter figures of :data:`FORECAST_ASSUMPTIONS` (assumed, stated here and in
the dry run) and the prices of the LLM config's price table (USD per 1M tokens; every call
priced as uncached input; reasoning tokens count as output; embeddings left out). The dry run
shows at most the run's enforced USD cap, where the gateway stops the run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rexmle.llm.config import Limits, LlmConfig
    from rexmle.records.runs import RunConfig


@dataclass(frozen=True)
class ForecastAssumption:
    """Assumed figures of one agent loop, for the forecast only."""

    unit: str
    """What a step is called for this agent (step, loop)."""
    seconds_per_unit: float
    """Wall-clock seconds of one step, model calls and executed scripts included."""
    calls_per_unit: float
    input_tokens_per_call: int
    output_tokens_per_call: int


FORECAST_ASSUMPTIONS: dict[str, ForecastAssumption] = {
    "aide": ForecastAssumption("step", 600.0, 2.0, 6_000, 4_000),
    "ml-master": ForecastAssumption("step", 400.0, 2.0, 8_000, 4_000),
    "rdagent": ForecastAssumption("loop", 1_800.0, 30.0, 10_000, 3_000),
}
"""Per adapter: seconds per step, LLM calls per step, input and output tokens per call. AIDE: a
draft/improve call and a feedback call per step; ML-Master: the same over its parallel
branches; R&D-Agent: proposal, coding and feedback calls of one loop. Assumed, not measured."""


def enforced_limits(config: RunConfig, batch: Limits) -> Limits:
    """The gateway limits of one run: the batch's (config file + flags), then the run's own.

    ``batch`` is the LLM config's ``limits`` with the batch's flags applied.
    """
    if config.llm_uncapped:
        return batch.model_copy(update={"budget_usd": None})
    if config.llm_budget_usd is not None:
        return batch.model_copy(update={"budget_usd": config.llm_budget_usd})
    return batch


def batch_limits(llm: LlmConfig, budget_usd: float | None, calls_per_minute: int | None) -> Limits:
    """The LLM config's limits with the batch's ``--llm-budget-usd`` and rate flag applied."""
    return llm.with_limits(budget_usd=budget_usd, max_calls_per_minute=calls_per_minute).limits


def forecast_usd(config: RunConfig, llm: LlmConfig) -> float | None:
    """The forecast cost of one run in US dollars (see the module docstring); None when the
    run's agent has no LLM, its adapter has no assumption, or a model has no price.
    """
    settings = config.agent.llm
    if settings is None:
        return None
    assumed = FORECAST_ASSUMPTIONS.get(settings.adapter)
    if assumed is None:
        return None
    units = config.time_limit_s / assumed.seconds_per_unit
    if settings.steps is not None:
        units = min(units, float(settings.steps))
    chat_roles = [role for role in settings.models if role != "embedding"]
    if not chat_roles:
        return None
    calls = units * assumed.calls_per_unit
    per_call = 0.0
    for role in chat_roles:
        model = llm.models.get(settings.models[role])
        if model is None:
            return None
        per_call += (
            assumed.input_tokens_per_call * model.price.input
            + assumed.output_tokens_per_call * model.price.output
        ) / 1e6
    return calls * per_call / len(chat_roles)


def forecast_method() -> str:
    """One paragraph saying how the forecast is computed, with the assumed figures."""
    parts = [
        f"{name}: {a.calls_per_unit:g} calls per {a.unit}, {a.seconds_per_unit:g} s per {a.unit}, "
        f"{a.input_tokens_per_call:,} input + {a.output_tokens_per_call:,} output tokens per call"
        for name, a in FORECAST_ASSUMPTIONS.items()
    ]
    return (
        "forecast = an estimate, not a measurement: min(steps, time limit / seconds per step) x "
        "calls per step x (input tokens x input price + output tokens x output price) from the "
        "LLM config's price table, at most the run's USD cap (the gateway stops the run there); "
        "assumed figures: " + "; ".join(parts)
    )
