"""The gateway's provider-native routes: Anthropic Messages and the Gemini API (standard library
only; loaded by the proxy's hook and guard, not only by the harness).

Copied into the gateway's state folder as ``gateway_native.py``. An agent that speaks a provider's
own protocol (its Anthropic or Gemini SDK pointed at the gateway) calls:

- ``POST /v1/messages`` (Anthropic Messages, streamed or not);
- ``POST /v1beta/models/<model>:generateContent`` and ``:streamGenerateContent`` (the Gemini
  API; also without ``v1beta/``);
- ``POST /v1beta/openai/chat/completions`` (Gemini's OpenAI-compatible endpoint, which AIDE's
  Gemini back-end calls): served as ``/v1/chat/completions`` with the Gemini protocol's names
  (the guard rewrites the path and marks the request with :data:`NATIVE_HEADER`, a header it
  removes from every incoming request), by the direct path when it takes the call
  (:class:`rexmle.llm.native_fast.GeminiOpenAI`), else by LiteLLM.

Definitions:
    Protocol of a request: ``anthropic`` for the Messages routes, ``gemini`` for the Gemini
    routes (Gemini's OpenAI-compatible one included), ``openai`` for every other route.
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


GEMINI_OPENAI_ROUTE = "/v1beta/openai/chat/completions"
OPENAI_CHAT_ROUTE = "/v1/chat/completions"
NATIVE_HEADER = "x-rexmle-native-protocol"
"""Set by the guard (only) on a request it rewrote from :data:`GEMINI_OPENAI_ROUTE`."""


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


def request_protocol(data: dict[str, Any]) -> Protocol:
    """The protocol of the request a LiteLLM call body came from (``openai`` when LiteLLM did
    not record the request).
    """
    request = data.get("proxy_server_request") or {}
    headers = request.get("headers") or {}
    marks = [str(v) for k, v in headers.items() if str(k).lower() == NATIVE_HEADER]
    if marks == ["gemini"]:
        return "gemini"
    path = re.sub(r"^[a-z]+://[^/]+", "", str(request.get("url") or ""))
    return protocol_of(path)


def served_alias(
    model: object, protocol: Protocol, aliases: Container[str], table: dict[str, dict[str, str]]
) -> str | None:
    """The alias a call to ``model`` in ``protocol`` is served and charged as, or None."""
    if not isinstance(model, str):
        return None
    if model in aliases:
        return model
    return table.get(protocol, {}).get(model)


def estimate_view(data: dict[str, Any]) -> dict[str, Any]:
    """The call body as the budget's estimate reads it (a Gemini body's fields mapped)."""
    if "contents" not in data:
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
