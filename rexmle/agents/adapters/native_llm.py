"""Which of an agent's models go through its own Anthropic or Gemini back-end (standard library
only: imported by the adapters inside the agents' environments).

Definition: under the run's ``llm_route`` ``native``, a model named ``claude-*`` goes through the
agent's Anthropic back-end and one named ``gemini-*`` through its Gemini back-end, each by its
bare name (the gateway serves those names on its Anthropic and Gemini routes and charges them as
their ``gw/`` aliases); every other model, and every model under ``openai``, is sent as its
``gw/`` alias through the agent's OpenAI-compatible path. AIDE and ML-Master choose their
back-end from these same name prefixes.
"""

from __future__ import annotations

from typing import Literal

ALIAS_PREFIX = "gw/"
Backend = Literal["anthropic", "gemini"]
NATIVE_PREFIXES: dict[str, Backend] = {"claude-": "anthropic", "gemini-": "gemini"}
LLM_ROUTES = ("openai", "native")


def llm_route(config: dict[str, object]) -> str:
    """The run's ``llm_route`` (``openai`` when the config predates it).

    Raises:
        ValueError: a value other than ``openai`` or ``native``.
    """
    route = str(config.get("llm_route") or "openai")
    if route not in LLM_ROUTES:
        msg = f"llm_route must be openai or native, got {route!r}"
        raise ValueError(msg)
    return route


def native_backend(model: str, route: str) -> Backend | None:
    """The agent's own back-end ``model`` goes through, or None (its ``gw/`` alias)."""
    if route != "native":
        return None
    for prefix, backend in NATIVE_PREFIXES.items():
        if model.startswith(prefix):
            return backend
    return None


def model_name(model: str, route: str) -> str:
    """The name the agent is given for ``model`` (bare on a native back-end, else the alias)."""
    return model if native_backend(model, route) is not None else ALIAS_PREFIX + model
