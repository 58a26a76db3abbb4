"""The LLM config file: providers, model aliases, pinned prices and per-run limits (YAML).

::

    providers:
      openai: {api: openai, base_url: https://api.openai.com/v1, key_env: OPENAI_API_KEY}
    models:
      gpt-5:                       # agents call it as gw/gpt-5
        provider: openai
        upstream: gpt-5            # the provider's model name
        price: {input: 1.25, cached_input: 0.125, output: 10.0}   # USD per 1M tokens
    limits: {budget_usd: 100.0, max_calls_per_minute: 120, max_calls_in_flight: 8,
             reserve_output_tokens: 4096, trajectory_max_mb: 64, usage_max_mb: 64}
    drop_params: true              # drop parameters a model refuses (each drop is logged)
    max_request_mb: 32             # larger requests are refused (413)
    request_timeout_s: 600         # an upstream call that takes longer fails
    gemini_openai_route: google    # or litellm: how /v1beta/openai/chat/completions is served

``api`` is the wire protocol of the upstream: ``openai`` (chat completions, Responses,
embeddings), ``anthropic`` (messages) or ``gemini``. Every ``base_url`` may point anywhere (a
stand-in, a self-hosted server); a ``gemini`` one names the API's version
(``https://generativelanguage.googleapis.com/v1beta``): LiteLLM appends
``/models/<model>:generateContent`` to it, and Gemini's OpenAI-compatible endpoint is
``<base_url>/openai/chat/completions``. ``key_env`` names the harness variable holding the key; it is
given to the gateway process only, never to a sandbox; ``null`` for an upstream without a key.
The built-in default is ``rexmle/llm/default_llm.yaml``.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rexmle.declarations import parse_declaration
from rexmle.errors import SpecError

ALIAS_PREFIX = "gw/"
"""Agents see every model as ``gw/<name>``: a neutral name no agent routes to a provider itself."""


class Provider(BaseModel):
    """One upstream: its wire protocol, base URL and the harness variable holding its key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    api: Literal["openai", "anthropic", "gemini"]
    base_url: str = Field(pattern=r"^https?://[^\s/]+")
    key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")


class Price(BaseModel):
    """USD per 1M tokens: uncached input, cached input, output (reasoning included)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0)
    cached_input: float = Field(ge=0)
    output: float = Field(ge=0)


class Model(BaseModel):
    """One model exposed through the gateway."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: str
    upstream: str = Field(min_length=1)
    price: Price


class Limits(BaseModel):
    """Per-run limits enforced by the gateway; null turns one off."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    budget_usd: float | None = Field(default=100.0, gt=0)
    max_calls_per_minute: int | None = Field(default=120, gt=0)
    max_calls_in_flight: int | None = Field(default=8, gt=0)
    """Calls of one run in flight at once; one more waits (see :mod:`rexmle.llm.metering`)."""
    reserve_output_tokens: int = Field(default=4096, gt=0)
    """Output tokens reserved against the budget for a call in flight without ``max_tokens``."""
    trajectory_max_mb: float = Field(default=64.0, gt=0)
    usage_max_mb: float = Field(default=64.0, gt=0)


GeminiOpenAIRoute = Literal["google", "litellm"]


class LlmConfig(BaseModel):
    """The whole file (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    providers: dict[str, Provider]
    models: dict[str, Model] = Field(min_length=1)
    limits: Limits = Limits()
    drop_params: bool = True
    max_request_mb: float = Field(default=32.0, gt=0)
    """Requests with a larger body are refused (413) before LiteLLM reads them."""
    request_timeout_s: float = Field(default=600.0, gt=0)
    """An upstream call that takes longer fails; a run's end waits this long for its calls."""
    gemini_openai_route: GeminiOpenAIRoute = "google"
    """How Gemini's OpenAI-compatible route reaches a Gemini-API provider: ``google``, its body
    forwarded as it is to the provider's own OpenAI-compatible endpoint (what the agent calls
    without a gateway; :mod:`rexmle.llm.native_fast`); ``litellm``, translated by LiteLLM to
    ``generateContent``."""

    @model_validator(mode="after")
    def _known_providers(self) -> LlmConfig:
        for name, model in self.models.items():
            if model.provider not in self.providers:
                known = ", ".join(sorted(self.providers))
                msg = f"model {name!r} names provider {model.provider!r}; known: {known}"
                raise ValueError(msg)
            if not name or "/" in name or name != name.strip():
                msg = f"model name {name!r} must be non-empty, without '/' or outer spaces"
                raise ValueError(msg)
        return self

    def aliases(self) -> dict[str, Model]:
        """``gw/<name>`` -> model."""
        return {f"{ALIAS_PREFIX}{name}": model for name, model in self.models.items()}

    def key_variables(self) -> list[str]:
        """The harness variables that hold provider keys (sorted, no repeats)."""
        return sorted({p.key_env for p in self.providers.values() if p.key_env is not None})

    def with_limits(
        self, *, budget_usd: float | None = None, max_calls_per_minute: int | None = None
    ) -> LlmConfig:
        """A copy whose limits take the given values (None keeps the file's)."""
        update: dict[str, object] = {}
        if budget_usd is not None:
            update["budget_usd"] = budget_usd
        if max_calls_per_minute is not None:
            update["max_calls_per_minute"] = max_calls_per_minute
        limits = Limits.model_validate({**self.limits.model_dump(), **update})
        return self.model_copy(update={"limits": limits})


def parse_llm_config(text: str, where: str) -> LlmConfig:
    """Parse and validate a config's YAML text.

    Raises:
        SpecError: not YAML, or a field is missing or wrong (the message names it and ``where``).
    """
    return parse_declaration(text, LlmConfig, where, what="LLM config")


def load_llm_config(path: Path | None = None) -> LlmConfig:
    """The config in ``path``, or the built-in default.

    Raises:
        SpecError: the file is missing or not a valid config.
    """
    if path is None:
        text = resources.files("rexmle.llm").joinpath("default_llm.yaml").read_text("utf-8")
        return parse_llm_config(text, "rexmle/llm/default_llm.yaml")
    if not path.is_file():
        msg = f"LLM config {path} does not exist"
        raise SpecError(msg)
    return parse_llm_config(path.read_text(encoding="utf-8"), str(path))
