"""The gateway's direct forwarding of the provider-native routes (loaded by the direct path,
:mod:`rexmle.llm.fast_path`, not by the harness).

Copied into the gateway's state folder as ``gateway_native_fast.py``. LiteLLM rewrites the body
of a native call before it forwards it (it drops keys it does not know, renames Gemini's
snake-case names, removes empty content blocks, renames tool-use ids, merges beta headers,
drops a disabled ``thinking``). A call is served here, without LiteLLM, only when LiteLLM's
rewriting leaves it as it is; any other call goes to LiteLLM unchanged (as does any call the
meter refuses, and every call to an alias of another protocol's provider):

Anthropic Messages (``POST /v1/messages``, an alias whose provider has ``api: anthropic``):

- a registered run token (``x-api-key`` or ``Authorization: Bearer``), no ``anthropic-beta``
  header (LiteLLM merges its own betas in);
- ``model`` an alias or its bare name (:func:`rexmle.llm.native_routes.served_alias`), a
  positive integer ``max_tokens``, a boolean ``stream`` if any, and no keys but
  ``model``, ``messages``, ``max_tokens``, ``stream`` and those of :data:`ANTHROPIC_PROBES` that
  LiteLLM's own request building (its optional-parameter filter and Messages transformation,
  with the config's ``drop_params``) leaves unchanged for each sample value, asked once per
  alias at start;
- ``messages`` of ``user`` and ``assistant`` turns whose content is a non-blank string or a list
  of :data:`BLOCK_TYPES` blocks: text blocks not blank, tool ids of :data:`TOOL_ID`'s
  characters, tool results with content; ``system`` a non-blank string or text blocks; tools
  custom ones only (:data:`TOOL_KEYS`). At start, LiteLLM's message rewriting is run on
  :data:`MESSAGE_PROBE` (one block of each kind); when it changes anything, no Anthropic call
  is served here.

It is sent to ``<base_url>/v1/messages`` as LiteLLM sends it: the upstream model, ``stream``
always present, the agent's ``anthropic-version`` (else :data:`ANTHROPIC_VERSION`), the
provider's key as ``x-api-key``. The answer's ``model`` (the plain body's, the stream's
``message_start``) is the name the agent asked for, as LiteLLM answers. Usage: ``input_tokens +
cache_creation_input_tokens + cache_read_input_tokens`` in, ``cache_read_input_tokens`` cached,
``output_tokens`` out (the stream's ``message_start`` updated by its ``message_delta``), as
LiteLLM counts them.

Gemini (``:generateContent`` and ``:streamGenerateContent``, an alias or bare name whose provider
has ``api: gemini``):

- a registered run token (``Authorization: Bearer``, ``x-api-key``, ``x-goog-api-key`` or
  ``?key=``), no query parameters but ``key`` and, when streamed, ``alt=sse``;
- keys of :data:`GEMINI_KEYS` only (camel case: LiteLLM renames snake-case ones), a non-empty
  ``contents`` list, ``tools`` of function declarations only, and ``generationConfig`` keys that
  LiteLLM's own mapping passes on as they are (asked once per alias at start; the
  response-schema keys, which it rewrites, never).
  At start, LiteLLM's request building is run on a sample; when it does not build the body
  :func:`gemini_body` builds, no Gemini call is served here.

It is sent as LiteLLM sends it (:func:`gemini_body`: ``model``, ``tools`` and ``generationConfig``
always present) to ``<base_url>/models/<upstream>:<verb>``, a stream always with ``?alt=sse``
(so the agent gets server-sent events, as from LiteLLM), the provider's key as
``x-goog-api-key``; an answer's ``citationSources`` are renamed as LiteLLM renames them. Usage:
:func:`rexmle.llm.native_routes.gemini_usage` of the (last) ``usageMetadata``.

Gemini's OpenAI-compatible route (``POST /v1beta/openai/chat/completions``, which AIDE's Gemini
back-end calls; :class:`GeminiOpenAI`): LiteLLM translates it to ``generateContent``, while the
agent without a gateway calls Google's own OpenAI-compatible endpoint. Rule: with the LLM
config's ``gemini_openai_route: google`` (the default) a call is served here, forwarded to that
endpoint, ``<base_url>/openai/chat/completions``, when

- a registered run token (``Authorization: Bearer`` or ``x-api-key``, as the route takes today);
- a JSON object body whose ``model`` is an alias or bare name (on the Gemini protocol) of a
  provider with ``api: gemini``, ``messages`` a list, ``stream`` a boolean if any,
  ``stream_options`` an object if any;

and is sent as the agent sent it, but for ``model`` (the upstream model) and, when streamed,
``stream_options.include_usage`` (the usage chunk passed on only when the agent asked for it),
with the provider's key as ``Authorization: Bearer``. Every other call on that route, and every
call under ``gemini_openai_route: litellm``, goes to LiteLLM as before. Usage: the OpenAI-style
``usage`` (as :class:`~rexmle.llm.fast_path.OpenAIChat` reads it), at the alias's Gemini price;
refusals and errors in the OpenAI shape, as the route answers them through LiteLLM.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

if __package__:
    from rexmle.llm import fast_path as fast
    from rexmle.llm import native_routes as native
else:  # loaded from the gateway's state folder
    import gateway_fast as fast  # type: ignore[no-redef]
    import gateway_native as native  # type: ignore[no-redef]

ANTHROPIC_VERSION = "2023-06-01"
"""The ``anthropic-version`` LiteLLM sends when the agent sent none."""
ANTHROPIC_KEYS = frozenset({"model", "messages", "max_tokens", "stream"})
TOOL = {"name": "f", "description": "d", "input_schema": {"type": "object"}}
TOOL_KEYS = frozenset({"name", "description", "input_schema", "cache_control"})
ANTHROPIC_PROBES: dict[str, tuple[Any, ...]] = {
    "system": ("be brief", [{"type": "text", "text": "be brief"}]),
    "temperature": (0.3, 1.0),
    "top_p": (0.5, 1.0),
    "top_k": (5,),
    "stop_sequences": (["x"],),
    "tools": ([TOOL], [{**TOOL, "cache_control": {"type": "ephemeral"}}]),
    "tool_choice": ({"type": "auto"}, {"type": "any"}, {"type": "tool", "name": "f"}),
}
"""Parameters that may take the direct path, each with the values it is probed with."""
TOOL_ID = re.compile(r"^[A-Za-z0-9_-]+$")
"""The tool-use ids LiteLLM forwards unchanged (it rewrites other characters)."""
BLOCK_TYPES = frozenset({"text", "image", "document", "tool_use", "tool_result"})
IMAGE = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}
MESSAGE_PROBE: list[dict[str, Any]] = [
    {"role": "user", "content": "hello"},
    {"role": "assistant", "content": [{"type": "text", "text": "hi"}]},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "look", "cache_control": {"type": "ephemeral"}},
            {"type": "image", "source": IMAGE},
            {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                            "data": "notes"}},
        ],
    },
    {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01-a", "name": "f",
                                       "input": {"a": 1}}]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_01-a", "content": "done"},
        {"type": "tool_result", "tool_use_id": "toolu_01-a",
         "content": [{"type": "text", "text": "more"}, {"type": "image", "source": IMAGE}]},
    ]},
]  # fmt: skip
"""One conversation with a block of each accepted kind (see the module docstring)."""


def _litellm_anthropic(upstream: str, body: dict[str, Any], drop_params: bool) -> dict[str, Any]:
    """The body LiteLLM builds for ``body`` (without the ``stream`` its HTTP handler adds)."""
    from litellm.llms.anthropic.pass_through.messages.handler import (
        strip_provider_specific_fields_from_anthropic_messages,
    )
    from litellm.llms.anthropic.pass_through.messages.transformation import (
        AnthropicMessagesConfig,
    )
    from litellm.llms.anthropic.pass_through.messages.utils import (
        AnthropicMessagesRequestUtils,
        normalize_native_messages,
    )
    from litellm.types.router import GenericLiteLLMParams

    messages = strip_provider_specific_fields_from_anthropic_messages(
        normalize_native_messages(body["messages"])
    )
    params = {k: v for k, v in body.items() if k not in ("model", "messages")}
    optional = AnthropicMessagesRequestUtils.get_requested_anthropic_messages_optional_param(
        params, model=upstream, drop_params=drop_params, custom_llm_provider="anthropic"
    )
    return dict(
        AnthropicMessagesConfig().transform_anthropic_messages_request(
            upstream, messages, dict(optional), GenericLiteLLMParams(drop_params=drop_params), {}
        )
    )


def anthropic_keys(upstream: str, drop_params: bool) -> frozenset[str]:
    """The body keys LiteLLM forwards unchanged to an Anthropic provider's ``upstream`` model;
    empty when it rewrites :data:`MESSAGE_PROBE` (see the module docstring).
    """

    def unchanged(body: dict[str, Any]) -> bool:
        try:
            built = _litellm_anthropic(upstream, body, drop_params)
        except Exception:  # LiteLLM refuses it, or its code moved: the call goes to LiteLLM
            return False
        return built == {**body, "model": upstream}

    base = {"model": "probe", "max_tokens": 64, "messages": MESSAGE_PROBE}
    if not unchanged(base):
        return frozenset()
    kept = set(ANTHROPIC_KEYS)
    for name, samples in ANTHROPIC_PROBES.items():
        if all(unchanged({**base, name: sample}) for sample in samples):
            kept.add(name)
    return frozenset(kept)


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _block(block: Any, types: frozenset[str] = BLOCK_TYPES) -> bool:
    """Whether LiteLLM forwards the content block unchanged (see the module docstring)."""
    if not isinstance(block, dict) or block.get("type") not in types:
        return False
    if "provider_specific_fields" in block:
        return False
    kind = block["type"]
    if kind == "text":
        return _text(block.get("text"))
    if kind in ("image", "document"):
        return isinstance(block.get("source"), dict)
    if kind == "tool_use":
        tool_id = block.get("id")
        return isinstance(tool_id, str) and bool(TOOL_ID.match(tool_id))
    tool_id = block.get("tool_use_id")
    if not isinstance(tool_id, str) or not TOOL_ID.match(tool_id):
        return False
    content = block.get("content")
    if isinstance(content, list):
        inner = frozenset({"text", "image"})
        return bool(content) and all(_block(part, inner) for part in content)
    return _text(content)


def _message(message: Any) -> bool:
    if not isinstance(message, dict) or set(message) != {"role", "content"}:
        return False
    if message["role"] not in ("user", "assistant"):
        return False
    content = message["content"]
    if isinstance(content, list):
        return bool(content) and all(_block(block) for block in content)
    return _text(content)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def anthropic_body_kept(body: dict[str, Any], keys: frozenset[str]) -> bool:
    """Whether LiteLLM forwards the Messages ``body`` unchanged but for its model and
    ``stream`` (see the module docstring).
    """
    if not set(body) <= keys:
        return False
    limit = body.get("max_tokens")
    if not isinstance(limit, int) or isinstance(limit, bool) or limit <= 0:
        return False
    if not isinstance(body.get("stream", False), bool):
        return False
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(map(_message, messages)):
        return False
    system = body.get("system", "-")
    text_only = frozenset({"text"})
    if not (_text(system) or (isinstance(system, list) and all(_block(b, text_only)
                                                               for b in system))):  # fmt: skip
        return False
    tools = body.get("tools", [])
    if not isinstance(tools, list) or not all(_tool(tool) for tool in tools):
        return False
    choice = body.get("tool_choice", {"type": "auto"})
    if not isinstance(choice, dict) or choice.get("type") not in ("auto", "any", "tool", "none"):
        return False
    numbers = [body[k] for k in ("temperature", "top_p", "top_k") if k in body]
    stops = body.get("stop_sequences", [])
    return all(map(_number, numbers)) and isinstance(stops, list)


def _tool(tool: Any) -> bool:
    return (
        isinstance(tool, dict)
        and set(tool) <= TOOL_KEYS
        and isinstance(tool.get("name"), str)
        and isinstance(tool.get("input_schema"), dict)
    )


def anthropic_usage(usage: Any) -> tuple[int, int, int, int] | None:
    """(tokens in, out, cached, reasoning) of an Anthropic ``usage`` object (see the module
    docstring), or None when there is none.
    """
    if not isinstance(usage, dict):
        return None

    def count(name: str) -> int:
        value = usage.get(name)
        return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0

    cached = count("cache_read_input_tokens")
    tokens_in = count("input_tokens") + count("cache_creation_input_tokens") + cached
    return tokens_in, count("output_tokens"), cached, 0


def _compact(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _target(settings: dict[str, Any], api: str) -> dict[str, dict[str, str]]:
    fast_models: dict[str, dict[str, str]] = settings.get("fast_models", {})
    return {alias: target for alias, target in fast_models.items() if target.get("api") == api}


def _headers(target: dict[str, str], key_header: str) -> dict[str, str]:
    headers = {"content-type": "application/json", "user-agent": fast.USER_AGENT}
    key = os.environ.get(target["key_env"] or "", "")
    if key:
        headers[key_header] = key
    return headers


class AnthropicMessages:
    """Anthropic Messages calls to an Anthropic-API provider (see the module docstring)."""

    def __init__(self, settings: dict[str, Any], hook: Any) -> None:
        self.hook = hook
        self.models = _target(settings, "anthropic")
        drop = bool(settings.get("drop_params", True))
        self.keys = {alias: anthropic_keys(hook.UPSTREAM[alias], drop) for alias in self.models}

    def accepts(self, scope: dict[str, Any]) -> bool:
        """Whether the request might be served here (route and method; the body decides)."""
        path = str(scope.get("path", "")).rstrip("/")
        return path in native.ANTHROPIC_ROUTES and any(self.keys.values())

    def call(self, scope: dict[str, Any], raw: bytes) -> fast.Call | None:
        """The call, or None for LiteLLM (see the module docstring)."""
        found = (
            None
            if fast._header(scope, b"anthropic-beta")
            else fast.metered_body(self.hook, scope, raw)
        )
        if found is None:
            return None
        meter, body = found
        hook = self.hook
        alias = native.served_alias(body.get("model"), "anthropic", hook.PRICES, hook.NATIVE_NAMES)
        if alias not in self.models or not anthropic_body_kept(body, self.keys[alias]):
            return None
        version = fast._header(scope, b"anthropic-version") or ANTHROPIC_VERSION
        return fast.Call(
            meter, alias, body, stream=bool(body.get("stream")), details={"version": version}
        )

    def request(self, call: fast.Call) -> tuple[str, dict[str, str], dict[str, Any]]:
        """The upstream request, as LiteLLM sends it (see the module docstring)."""
        target = self.models[call.alias]
        base = target["api_base"]
        url = base if base.endswith("/v1/messages") else f"{base}/v1/messages"
        headers = _headers(target, "x-api-key")
        headers["anthropic-version"] = call.details["version"]
        sent = {**call.body, "model": self.hook.UPSTREAM[call.alias], "stream": call.stream}
        return url, headers, sent

    def plain(self, call: fast.Call, response: Any) -> tuple[bytes | None, Any, Any]:
        """The answer with the agent's model name, its usage, its content."""
        if not isinstance(response, dict):
            return None, None, response
        relayed = _compact({**response, "model": call.body["model"]})
        return relayed, anthropic_usage(response.get("usage")), response.get("content")

    def reader(self, call: fast.Call) -> MessagesReader:
        """A reader of the streamed events."""
        return MessagesReader(str(call.body["model"]))

    def trajectory_request(self, body: dict[str, Any]) -> dict[str, Any]:
        """``messages`` and the other parameters."""
        params = {k: v for k, v in body.items() if k not in ("model", "messages")}
        return {"messages": body.get("messages"), "params": params}


class MessagesReader:
    """A streamed Anthropic message: its blocks assembled, its usage from ``message_start``
    updated by ``message_delta`` (which completes it).
    """

    def __init__(self, model: str) -> None:
        self.model = model
        self.reported: dict[str, Any] = {}
        self.blocks: dict[int, dict[str, Any]] = {}
        self.stop: Any = None
        self.complete = False

    def add(self, event: bytes) -> bytes | None:
        """The event (``message_start`` with the agent's model name)."""
        parsed = fast._event_json(event)
        if not isinstance(parsed, dict):
            return event
        kind = parsed.get("type")
        if kind == "message_start" and isinstance(parsed.get("message"), dict):
            message = parsed["message"]
            self.reported.update(message.get("usage") or {})
            parsed = {**parsed, "message": {**message, "model": self.model}}
            return b"event: message_start\ndata: " + _compact(parsed)
        if kind == "content_block_start" and isinstance(parsed.get("content_block"), dict):
            self.blocks[_index(parsed)] = dict(parsed["content_block"])
        elif kind == "content_block_delta" and isinstance(parsed.get("delta"), dict):
            block = self.blocks.setdefault(_index(parsed), {"type": "text", "text": ""})
            for part, name in (("text", "text"), ("partial_json", "input_json")):
                piece = parsed["delta"].get(part)
                if isinstance(piece, str):
                    block[name] = str(block.get(name, "")) + piece
        elif kind == "message_delta":
            usage = parsed.get("usage") or {}
            self.reported.update({k: v for k, v in usage.items() if v is not None})
            self.stop = (parsed.get("delta") or {}).get("stop_reason", self.stop)
            self.complete = True
        return event

    def usage(self) -> tuple[int, int, int, int] | None:
        """The usage reported so far, or None."""
        return anthropic_usage(self.reported) if self.reported else None

    def answer(self) -> Any:
        """The content blocks so far."""
        return [self.blocks[i] for i in sorted(self.blocks)]

    def response(self) -> Any:
        """The message the events make up."""
        return {"content": self.answer(), "stop_reason": self.stop, "usage": self.reported}


def _index(event: dict[str, Any]) -> int:
    index = event.get("index")
    return index if isinstance(index, int) else 0


GEMINI_KEYS = frozenset(
    {
        "contents",
        "systemInstruction",
        "generationConfig",
        "tools",
        "toolConfig",
        "safetySettings",
        "cachedContent",
        "labels",
    }
)
"""Top-level Gemini keys LiteLLM forwards as they are."""
SCHEMA_KEYS = frozenset({"responseSchema", "responseJsonSchema"})
"""``generationConfig`` keys LiteLLM rewrites (never on the direct path)."""
GEMINI_PROBE = {
    "contents": [{"role": "user", "parts": [{"text": "hello"}]}],
    "tools": [{"functionDeclarations": [{"name": "f", "parameters": {"type": "object"}}]}],
    "systemInstruction": {"parts": [{"text": "be brief"}]},
}


def gemini_body(upstream: str, body: dict[str, Any]) -> dict[str, Any]:
    """The body LiteLLM sends the Gemini API for the agent's ``body`` (one the direct path
    takes): ``model``, ``contents``, ``tools`` (None without), ``generationConfig`` (``{}``
    without), ``systemInstruction`` when given, then the other keys.
    """
    sent: dict[str, Any] = {
        "model": upstream,
        "contents": body["contents"],
        "tools": body.get("tools"),
        "generationConfig": body.get("generationConfig") or {},
    }
    if body.get("systemInstruction") is not None:
        sent["systemInstruction"] = body["systemInstruction"]
    rest = set(body) - {"contents", "tools", "generationConfig", "systemInstruction"}
    sent.update({key: body[key] for key in sorted(rest)})
    return sent


def gemini_config_keys(upstream: str) -> frozenset[str]:
    """The ``generationConfig`` keys LiteLLM passes on unchanged for ``upstream``; empty when
    its request building differs from :func:`gemini_body` (see the module docstring).
    """
    try:
        from litellm.llms.gemini.google_genai.transformation import GoogleGenAIConfig
        from litellm.llms.vertex_ai.gemini.transformation import snake_to_camel

        config = GoogleGenAIConfig()
        contents, tools = GEMINI_PROBE["contents"], GEMINI_PROBE["tools"]
        system, options = GEMINI_PROBE["systemInstruction"], {"temperature": 0.5}
        bare = config.transform_generate_content_request(upstream, contents, None, {}, None)
        if dict(bare) != gemini_body(upstream, {"contents": contents}):
            return frozenset()
        full = config.transform_generate_content_request(
            upstream,
            contents,
            tools,
            dict(options),
            system,  # type: ignore[arg-type]
        )
        given = {**GEMINI_PROBE, "generationConfig": options}
        if dict(full) != gemini_body(upstream, given):
            return frozenset()
        kept = set()
        for name in config.get_supported_generate_content_optional_params(upstream):
            camel = snake_to_camel(name)
            mapped = config.map_generate_content_optional_params({camel: "x"}, upstream)  # type: ignore[arg-type]
            if camel not in SCHEMA_KEYS and mapped == {camel: "x"}:
                kept.add(camel)
    except Exception:  # LiteLLM's code moved: every Gemini call goes to LiteLLM
        return frozenset()
    return frozenset(kept)


class GeminiGenerate:
    """Gemini generateContent and streamGenerateContent calls to a Gemini-API provider (see the
    module docstring).
    """

    def __init__(self, settings: dict[str, Any], hook: Any) -> None:
        self.hook = hook
        self.models = _target(settings, "gemini")
        self.config_keys = {
            alias: gemini_config_keys(hook.UPSTREAM[alias]) for alias in self.models
        }

    def accepts(self, scope: dict[str, Any]) -> bool:
        """Whether the request might be served here (route and method; the body decides)."""
        path = str(scope.get("path", "")).rstrip("/")
        return bool(native.GEMINI_ROUTE.match(path)) and any(self.config_keys.values())

    def call(self, scope: dict[str, Any], raw: bytes) -> fast.Call | None:
        """The call, or None for LiteLLM (see the module docstring)."""
        route = native.GEMINI_ROUTE.match(str(scope.get("path", "")).rstrip("/"))
        token = fast.token_of(scope, gemini=True)
        meter = self.hook.REGISTRY.meter(token) if token and route else None
        if route is None or meter is None:
            return None
        stream = route["verb"] == "streamGenerateContent"
        query = fast.query_of(scope)
        if any(k != "key" and not (stream and (k, v) == ("alt", "sse")) for k, v in query.items()):
            return None
        hook = self.hook
        alias = native.served_alias(route["model"], "gemini", hook.PRICES, hook.NATIVE_NAMES)
        body = fast.json_object(raw) if alias in self.models else None
        if alias is None or body is None or not set(body) <= GEMINI_KEYS:
            return None
        contents = body.get("contents")
        config = body.get("generationConfig", {})
        if not isinstance(contents, list) or not contents or not isinstance(config, dict):
            return None
        if not set(config) <= self.config_keys[alias]:
            return None
        tools = body.get("tools", [])
        if not isinstance(tools, list) or not all(
            isinstance(tool, dict) and set(tool) == {"functionDeclarations"} for tool in tools
        ):
            return None
        details = {"verb": route["verb"]}
        return fast.Call(
            meter, alias, body, stream=stream, view=native.estimate_view(body), details=details
        )

    def request(self, call: fast.Call) -> tuple[str, dict[str, str], dict[str, Any]]:
        """The upstream request, as LiteLLM sends it (see the module docstring)."""
        target = self.models[call.alias]
        upstream = self.hook.UPSTREAM[call.alias]
        url = f"{target['api_base']}/models/{upstream}:{call.details['verb']}"
        if call.stream:
            url += "?alt=sse"
        return url, _headers(target, "x-goog-api-key"), gemini_body(upstream, call.body)

    def plain(self, call: fast.Call, response: Any) -> tuple[bytes | None, Any, Any]:  # noqa: ARG002
        """The answer (citations renamed as LiteLLM does), its usage, its candidates."""
        if not isinstance(response, dict):
            return None, None, response
        relayed = None
        if _rename_citations(response):
            relayed = _compact(response)
        return relayed, native.gemini_usage(response), response.get("candidates")

    def reader(self, call: fast.Call) -> GeminiReader:  # noqa: ARG002
        """A reader of the streamed chunks."""
        return GeminiReader()

    def trajectory_request(self, body: dict[str, Any]) -> dict[str, Any]:
        """``contents`` as the messages, and the other keys."""
        params = {k: v for k, v in body.items() if k != "contents"}
        return {"messages": body.get("contents"), "params": params}


def _rename_citations(response: dict[str, Any]) -> bool:
    """Rename each candidate's ``citationMetadata.citationSources`` to ``citations`` in place,
    as LiteLLM does; whether there was one.
    """
    renamed = False
    for candidate in response.get("candidates") or ():
        metadata = candidate.get("citationMetadata") if isinstance(candidate, dict) else None
        if isinstance(metadata, dict) and "citationSources" in metadata:
            metadata["citations"] = metadata.pop("citationSources")
            renamed = True
    return renamed


class GeminiReader:
    """A streamed Gemini answer: its text and calls assembled, the last ``usageMetadata``
    kept; a chunk with a ``finishReason`` completes it.
    """

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: list[Any] = []
        self.last: dict[str, Any] | None = None
        self.complete = False

    def add(self, event: bytes) -> bytes | None:
        """The chunk, unchanged."""
        chunk = fast._event_json(event)
        if not isinstance(chunk, dict):
            return event
        if chunk.get("usageMetadata") is not None:
            self.last = chunk
        for candidate in chunk.get("candidates") or ():
            if not isinstance(candidate, dict):
                continue
            self.complete = self.complete or bool(candidate.get("finishReason"))
            for part in (candidate.get("content") or {}).get("parts") or ():
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    self.text.append(part["text"])
                elif isinstance(part, dict) and "functionCall" in part:
                    self.calls.append(part)
        return event

    def usage(self) -> tuple[int, int, int, int] | None:
        """The last ``usageMetadata``'s numbers, or None."""
        return None if self.last is None else native.gemini_usage(self.last)

    def answer(self) -> Any:
        """The parts so far."""
        return [{"text": "".join(self.text)}, *self.calls]

    def response(self) -> Any:
        """The answer the chunks make up."""
        content = {"role": "model", "parts": self.answer()}
        usage = None if self.last is None else self.last.get("usageMetadata")
        return {"candidates": [{"content": content}], "usageMetadata": usage}


class GeminiOpenAI:
    """Gemini's OpenAI-compatible chat completions to a Gemini-API provider's own
    OpenAI-compatible endpoint (see the module docstring).
    """

    def __init__(self, settings: dict[str, Any], hook: Any) -> None:
        self.hook = hook
        google = settings.get("gemini_openai_route", "google") == "google"
        self.models = _target(settings, "gemini") if google else {}
        self.chat = fast.OpenAIChat({"fast_models": {}}, hook)

    def accepts(self, scope: dict[str, Any]) -> bool:
        """Whether the request might be served here (route and method; the body decides)."""
        return fast.gemini_marked(scope) and bool(self.models)

    def call(self, scope: dict[str, Any], raw: bytes) -> fast.Call | None:
        """The call, or None for LiteLLM (see the module docstring)."""
        found = fast.metered_body(self.hook, scope, raw)
        if found is None:
            return None
        meter, body = found
        hook = self.hook
        alias = native.served_alias(body.get("model"), "gemini", hook.PRICES, hook.NATIVE_NAMES)
        if alias not in self.models or not fast.chat_shaped(body):
            return None
        return fast.Call(meter, alias, body, stream=bool(body.get("stream")))

    def request(self, call: fast.Call) -> tuple[str, dict[str, str], dict[str, Any]]:
        """The upstream request (see the module docstring)."""
        target = self.models[call.alias]
        sent = {**call.body, "model": self.hook.UPSTREAM[call.alias]}
        if call.stream:
            options = call.body.get("stream_options") or {}
            sent["stream_options"] = {**options, "include_usage": True}
        headers = _headers(target, "authorization")
        if "authorization" in headers:
            headers["authorization"] = f"Bearer {headers['authorization']}"
        return f"{target['api_base'].rstrip('/')}/openai/chat/completions", headers, sent

    def plain(self, call: fast.Call, response: Any) -> tuple[bytes | None, Any, Any]:
        """The answer unchanged, its ``usage``, its choices."""
        return self.chat.plain(call, response)

    def reader(self, call: fast.Call) -> fast.Reader:
        """A reader that passes the usage chunk on only when the agent asked for it."""
        return self.chat.reader(call)

    def trajectory_request(self, body: dict[str, Any]) -> dict[str, Any]:
        """``messages`` and the other parameters."""
        return self.chat.trajectory_request(body)


def routes(settings: dict[str, Any], hook: Any) -> list[fast.Route]:
    """The native routes of the direct path (those with a provider of their protocol)."""
    return [AnthropicMessages(settings, hook), GeminiGenerate(settings, hook),
            GeminiOpenAI(settings, hook)]  # fmt: skip
