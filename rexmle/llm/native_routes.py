"""The gateway's provider-native routes: Anthropic Messages and the Gemini API (standard library
only; loaded by the proxy's hook and guard, not only by the harness).

Copied into the gateway's state folder as ``gateway_native.py``. An agent that speaks a provider's
own protocol (its Anthropic or Gemini SDK pointed at the gateway) calls:

- ``POST /v1/messages`` (Anthropic Messages, streamed or not);
- ``POST /v1beta/models/<model>:generateContent`` and ``:streamGenerateContent`` (the Gemini
  API; also without ``v1beta/``).

Definitions:
    Protocol of a route: ``anthropic`` for the Messages routes, ``gemini`` for the Gemini routes,
    ``openai`` for every other route.
    Served names on a native route: every configured alias (``gw/<name>``), and the bare name
    ``<name>`` of each configured model whose provider speaks the route's protocol (so an
    agent's own provider choice, made from a ``claude-*`` or ``gemini-*`` name, still works);
    on the OpenAI routes only the aliases. A bare name is charged as its alias.
    Gemini usage: ``promptTokenCount`` is the input (cached tokens included,
    ``cachedContentTokenCount``), ``candidatesTokenCount + thoughtsTokenCount`` the output
    (thoughts are billed as output), ``thoughtsTokenCount`` the reasoning tokens.
    Gemini estimate: the prompt is ``contents``, ``systemInstruction`` and ``tools``, the
    output limit ``generationConfig.maxOutputTokens``.
    Refusals and errors on a native route are answered in that provider's error shape
    (:func:`error_body`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Container, Mapping
from typing import Any, Literal

Protocol = Literal["openai", "anthropic", "gemini"]
NATIVE_PROTOCOLS: tuple[Protocol, ...] = ("anthropic", "gemini")
ANTHROPIC_ROUTES = frozenset({"/messages", "/v1/messages"})
GEMINI_ROUTE = re.compile(
    r"^(?:/v1beta)?/models/(?P<model>[^:]+):(?P<verb>generateContent|streamGenerateContent)$"
)
ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
GEMINI_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    413: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def protocol_of(route: str) -> Protocol:
    """The protocol of a request path (see the module docstring)."""
    path = route.split("?", 1)[0].rstrip("/")
    if path in ANTHROPIC_ROUTES:
        return "anthropic"
    if GEMINI_ROUTE.match(path):
        return "gemini"
    return "openai"


def is_gemini_route(route: str) -> bool:
    """Whether ``route`` is one of the Gemini generate routes."""
    return GEMINI_ROUTE.match(route.split("?", 1)[0].rstrip("/")) is not None


def native_names(models: Mapping[str, str], alias_prefix: str) -> dict[str, dict[str, str]]:
    """Per native protocol: bare name -> alias, for ``models`` (bare name -> its provider's
    protocol); what ``gateway.json`` holds as ``native_names``.
    """
    table: dict[str, dict[str, str]] = {protocol: {} for protocol in NATIVE_PROTOCOLS}
    for name, protocol in models.items():
        if protocol in table:
            table[protocol][name] = alias_prefix + name
    return table


def request_route(data: dict[str, Any]) -> str:
    """The path of the request a LiteLLM call body came from ('' when it is not recorded)."""
    url = str((data.get("proxy_server_request") or {}).get("url") or "")
    path = re.sub(r"^[a-z]+://[^/]+", "", url)
    return path.split("?", 1)[0]


def served_alias(
    model: object, route: str, aliases: Container[str], table: dict[str, dict[str, str]]
) -> str | None:
    """The alias a call to ``model`` on ``route`` is served and charged as, or None (refused)."""
    if not isinstance(model, str):
        return None
    if model in aliases:
        return model
    return table.get(protocol_of(route), {}).get(model)


def estimate_view(data: dict[str, Any], route: str) -> dict[str, Any]:
    """The call body as the budget's estimate reads it (Gemini fields mapped; others as is)."""
    if protocol_of(route) != "gemini":
        return data
    config = data.get("generationConfig") or data.get("config") or {}
    view = {
        "contents": data.get("contents"),
        "system": data.get("systemInstruction") or data.get("system_instruction"),
        "tools": data.get("tools"),
    }
    limit = config.get("maxOutputTokens") if isinstance(config, dict) else None
    if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
        view["max_tokens"] = limit
    return view


def _get(obj: Any, *names: str) -> Any:
    for name in names:
        value = obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)
        if value is not None:
            return value
    return None


def gemini_usage(response: Any) -> tuple[int, int, int, int] | None:
    """(tokens in, out, cached, reasoning) from a Gemini response's ``usageMetadata``, or None
    when it has none (see the module docstring).
    """
    usage = _get(response, "usageMetadata", "usage_metadata")
    if usage is None:
        return None
    prompt = _get(usage, "promptTokenCount", "prompt_token_count") or 0
    candidates = _get(usage, "candidatesTokenCount", "candidates_token_count") or 0
    cached = _get(usage, "cachedContentTokenCount", "cached_content_token_count") or 0
    thoughts = _get(usage, "thoughtsTokenCount", "thoughts_token_count") or 0
    return int(prompt), int(candidates) + int(thoughts), int(cached), int(thoughts)


def error_body(protocol: Protocol, status: int, message: str) -> dict[str, Any]:
    """An error answer in the shape of ``protocol``'s provider."""
    if protocol == "anthropic":
        kind = ANTHROPIC_ERROR_TYPES.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
    if protocol == "gemini":
        state = GEMINI_STATUS.get(status, "INTERNAL" if status >= 500 else "FAILED_PRECONDITION")
        return {"error": {"code": status, "message": message, "status": state}}
    return {"error": {"message": message, "type": "error", "param": None, "code": str(status)}}


def _is_shaped(protocol: Protocol, body: Any) -> bool:
    if not isinstance(body, dict):
        return False
    error = body.get("error")
    if protocol == "anthropic":
        return body.get("type") == "error" and isinstance(error, dict)
    return isinstance(error, dict) and isinstance(error.get("status"), str)


def _message_of(body: Any, fallback: str) -> str:
    if isinstance(body, dict):
        error = body.get("error", body.get("detail"))
        if isinstance(error, dict):
            error = error.get("message", error.get("error"))
        if error is not None:
            return str(error)
    return fallback


def reshaped_error(protocol: Protocol, status: int, raw: bytes) -> bytes:
    """An error answer's body ``raw`` (LiteLLM's OpenAI shape, FastAPI's ``detail``, text) in
    ``protocol``'s shape; a body already in that shape is kept.
    """
    text = raw.decode("utf-8", errors="replace")
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    if _is_shaped(protocol, body):
        return raw
    message = _message_of(body, text.strip() or f"HTTP {status}")
    return json.dumps(error_body(protocol, status, message)).encode("utf-8")
