"""The gateway's direct path: calls forwarded to their provider without LiteLLM (loaded by the
proxy's guard, not by the harness).

Copied into the gateway's state folder as ``gateway_fast.py``. Each :class:`Route` decides which
calls it takes: here OpenAI chat completions (:class:`OpenAIChat`), in
:mod:`rexmle.llm.native_fast` Anthropic Messages, Gemini generateContent and Gemini's
OpenAI-compatible chat completions. Any other call (and
any call the meter refuses, which LiteLLM's callback then refuses again, answers and records)
goes to LiteLLM unchanged.

OpenAI chat completions are served here only when all of these hold:

- ``POST /v1/chat/completions`` (or ``/chat/completions``), not Gemini's rewritten route
  (:class:`~rexmle.llm.native_fast.GeminiOpenAI` takes that one);
- a registered run token (``Authorization: Bearer`` or ``x-api-key``);
- a JSON object body whose ``model`` is a configured alias of a provider with ``api: openai``
  (``gateway.json``'s ``fast_models``), and whose keys are all forwarded by LiteLLM unchanged
  for that alias's model: :data:`PASSTHROUGH_KEYS`, and each parameter of :data:`PROBES` that
  LiteLLM's own parameter mapping (``get_optional_params``, with the config's ``drop_params``)
  passes on as it is for each of its sample values, asked once per alias at start; a parameter
  it passes on only at some of them (gpt-5's ``temperature``: 1 is sent, 0.3 dropped) is taken
  at exactly those values, of the same type (:func:`passthrough`). So nothing is
  dropped, renamed or refused on this path that LiteLLM would drop, rename or refuse.

Every call served here is admitted by the run's meter (:meth:`RunMeter.admit`, the same
estimate, hold-back and its time limit as the callback; a hold-back past the limit is refused
429), sent to the provider's base URL with its key on one kept-alive connection pool (a
streamed chat completion asks for ``stream_options.include_usage``; the usage chunk is passed
on only when the agent asked for it), and recorded (:meth:`RunMeter.record`) with the same
usage line and trajectory entry fields as the callback writes, charged at the alias's price.

Charging:
    An answer is charged the usage the provider reported for it: a plain answer's, a stream's
    final one (the usage chunk, Anthropic's ``message_delta``, Gemini's chunk with a
    ``finishReason``). An answer without it (an OpenAI-compatible server that ignores
    ``include_usage``, a stream that ends early) is charged
    :func:`~rexmle.llm.metering.unreported_usage`, never nothing, and its line says so
    (:data:`~rexmle.llm.metering.UNREPORTED`). A call that fails or is cancelled before the
    provider answered costs nothing (status ``error``); one whose answer had begun (the
    provider answered 200: a stream broken off after its first bytes, a plain body cut short,
    the agent gone) is an ``error`` charged the same way, its line starting with
    :data:`BROKEN_OFF` and saying which (:data:`REPORTED` or the estimate's note).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

if __package__:
    from rexmle.llm import native_routes as native
else:  # loaded from the gateway's state folder
    import gateway_native as native  # type: ignore[no-redef]

Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

FAST_ROUTES = frozenset({"/v1/chat/completions", "/chat/completions"})
PASSTHROUGH_KEYS = frozenset({"model", "messages", "stream", "stream_options"})
"""Body keys LiteLLM sends an OpenAI-API provider as they are, whatever the model."""
TOOL = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
PROBES: dict[str, tuple[Any, ...]] = {
    "max_tokens": (7, 4096),
    "max_completion_tokens": (7, 4096),
    "temperature": (0.3, 1.0, 1),
    "top_p": (0.5, 1.0),
    "tools": ([TOOL],),
    "tool_choice": ("auto", "required", "none"),
    "response_format": ({"type": "json_object"}, {"type": "text"}),
    "seed": (1, 12345),
    "stop": (["x"], "y"),
    "n": (1, 2),
    "parallel_tool_calls": (True, False),
    "user": ("u",),
    "presence_penalty": (0.1, 0.0),
    "frequency_penalty": (0.1, 0.0),
    "reasoning_effort": ("low", "high"),
}
"""Parameters that may take the direct path, each with the values it is probed with."""
PROBE_NOISE = frozenset({"stream", "extra_body"})
"""Keys LiteLLM's mapping always adds (``stream: False``, an empty ``extra_body``)."""


def _probed(upstream: str, drop_params: bool) -> dict[str, list[tuple[Any, bool]]]:
    """Per parameter of :data:`PROBES`, each sample value and whether LiteLLM's own mapping
    forwards it unchanged to an OpenAI-API provider's ``upstream`` model (a refusal counts as
    changed).
    """
    from litellm.utils import get_optional_params

    found: dict[str, list[tuple[Any, bool]]] = {}
    for name, samples in PROBES.items():
        found[name] = []
        for sample in samples:
            try:
                mapped = get_optional_params(
                    model=upstream,
                    custom_llm_provider="openai",
                    drop_params=drop_params,
                    **{name: sample},
                )
            except Exception:  # LiteLLM refuses it: the call goes to LiteLLM
                found[name].append((sample, False))
                continue
            shown = {k: v for k, v in mapped.items() if k not in PROBE_NOISE or v}
            found[name].append((sample, shown == {name: sample}))
    return found


def passthrough(
    upstream: str, drop_params: bool
) -> tuple[frozenset[str], dict[str, tuple[Any, ...]]]:
    """What LiteLLM forwards unchanged to an OpenAI-API provider's ``upstream`` model (see the
    module docstring), from one probe: the body keys it forwards at every value, and for the
    parameters it forwards unchanged only at some values (``temperature`` of gpt-5: 1 is sent,
    0.3 dropped), those sample values.
    """
    probed = _probed(upstream, drop_params)
    kept = {name for name, results in probed.items() if all(ok for _, ok in results)}
    values = {
        name: tuple(sample for sample, ok in results if ok)
        for name, results in probed.items()
        if name not in kept and any(ok for _, ok in results)
    }
    return frozenset(PASSTHROUGH_KEYS | kept), values


def _probed_value(value: Any, samples: tuple[Any, ...]) -> bool:
    """Whether ``value`` is one of ``samples``, of the same type (``True`` is not ``1``)."""
    return any(type(value) is type(sample) and value == sample for sample in samples)


RESPONSE_HEADERS = frozenset({b"content-type"})
USER_AGENT = "rexmle-gateway"
"""The ``User-Agent`` of the calls this path sends (LiteLLM's are its OpenAI SDK's)."""


def _header(scope: dict[str, Any], name: bytes) -> str:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return ""


class Call:
    """One call the direct path serves: the run's meter, the alias it is charged as, the
    agent's body, whether it streams, what the estimate reads, and the route's own details.
    """

    def __init__(
        self,
        meter: Any,
        alias: str,
        body: dict[str, Any],
        *,
        stream: bool,
        view: dict[str, Any] | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        self.meter = meter
        self.alias = alias
        self.body = body
        self.stream = stream
        self.view = body if view is None else view
        self.details = details or {}


class Reader(Protocol):
    """A streamed answer read event by event (one per call)."""

    complete: bool
    """Whether the event carrying the answer's final usage was seen."""

    def add(self, event: bytes) -> bytes | None:
        """The event as relayed to the agent (None: not relayed)."""
        ...

    def usage(self) -> tuple[int, int, int, int] | None:
        """(tokens in, out, cached, reasoning) the provider reported, or None."""
        ...

    def answer(self) -> Any:
        """What the answer said so far (its text counts toward an unreported usage)."""
        ...

    def response(self) -> Any:
        """The answer put together (for the trajectory)."""
        ...


class Route(Protocol):
    """One protocol the direct path serves (:class:`OpenAIChat`,
    :class:`~rexmle.llm.native_fast.AnthropicMessages`,
    :class:`~rexmle.llm.native_fast.GeminiGenerate`).
    """

    def accepts(self, scope: dict[str, Any]) -> bool:
        """Whether the request might be served here (route and method; the body decides)."""
        ...

    def call(self, scope: dict[str, Any], raw: bytes) -> Call | None:
        """The call, or None when this route does not take it (see the module docstrings)."""
        ...

    def request(self, call: Call) -> tuple[str, dict[str, str], dict[str, Any]]:
        """(URL, headers, JSON body) of the upstream request."""
        ...

    def plain(self, call: Call, response: Any) -> tuple[bytes | None, Any, Any]:
        """For a plain answer: (its body as relayed, None: unchanged; its usage numbers or
        None; what it said).
        """
        ...

    def reader(self, call: Call) -> Reader:
        """A reader of the call's streamed answer."""
        ...

    def trajectory_request(self, body: dict[str, Any]) -> dict[str, Any]:
        """The trajectory entry's ``request``."""
        ...


class Progress:
    """How far the upstream's answer got: ``started`` once it answered 200, ``reader`` (its
    stream) once relaying began.
    """

    def __init__(self) -> None:
        self.started = False
        self.reader: Reader | None = None


BROKEN_OFF = "rexmle gateway: the upstream's answer broke off"
"""The start of the error note of a call whose upstream failed after its answer began."""
REPORTED = "charged the usage it reported"


def token_of(scope: dict[str, Any], *, gemini: bool = False) -> str:
    """The run token of a request: ``Authorization: Bearer``, ``x-api-key``, and on a Gemini
    route ``x-goog-api-key`` or ``?key=`` (the order the hook's auth reads them in).
    """
    token = _header(scope, b"authorization").removeprefix("Bearer ").strip()
    token = token or _header(scope, b"x-api-key").strip()
    if gemini and not token:
        token = _header(scope, b"x-goog-api-key").strip() or query_of(scope).get("key", "")
    return token


def gemini_marked(scope: dict[str, Any]) -> bool:
    """Whether the guard rewrote the request from Gemini's OpenAI-compatible route
    (:data:`~rexmle.llm.native_routes.NATIVE_HEADER`).
    """
    return _header(scope, native.NATIVE_HEADER.encode("ascii")) == "gemini"


def metered_body(hook: Any, scope: dict[str, Any], raw: bytes) -> tuple[Any, dict[str, Any]] | None:
    """(the run's meter, the body as a JSON object) of a request with a registered run token
    (:func:`token_of`), or None.
    """
    token = token_of(scope)
    meter = hook.REGISTRY.meter(token) if token else None
    body = json_object(raw) if meter is not None else None
    return None if body is None else (meter, body)


def chat_shaped(body: dict[str, Any]) -> bool:
    """Whether a chat completions body has a ``messages`` list, a boolean ``stream`` if any and
    an object ``stream_options`` if any.
    """
    options = body.get("stream_options")
    return (
        isinstance(body.get("messages"), list)
        and isinstance(body.get("stream", False), bool)
        and (options is None or isinstance(options, dict))
    )


def query_of(scope: dict[str, Any]) -> dict[str, str]:
    """The request's query parameters (the last value of each)."""
    from urllib.parse import parse_qsl

    raw = bytes(scope.get("query_string") or b"").decode("latin-1")
    return dict(parse_qsl(raw, keep_blank_values=True))


def json_object(raw: bytes) -> dict[str, Any] | None:
    """The body as a JSON object, or None."""
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return body if isinstance(body, dict) else None


class OpenAIChat:
    """Chat completions to an OpenAI-API provider (see the module docstring)."""

    def __init__(self, settings: dict[str, Any], hook: Any) -> None:
        self.hook = hook
        fast = settings.get("fast_models", {})
        self.models: dict[str, dict[str, str]] = {
            alias: target
            for alias, target in fast.items()
            if target.get("api", "openai") == "openai"
        }
        drop = bool(settings.get("drop_params", True))
        probed = {alias: passthrough(hook.UPSTREAM[alias], drop) for alias in self.models}
        self.keys = {alias: keys for alias, (keys, _) in probed.items()}
        self.values = {alias: values for alias, (_, values) in probed.items()}

    def accepts(self, scope: dict[str, Any]) -> bool:
        """Whether the request might be served here (route and method; the body decides)."""
        return scope.get("path") in FAST_ROUTES and bool(self.models) and not gemini_marked(scope)

    def call(self, scope: dict[str, Any], raw: bytes) -> Call | None:
        """The call, or None for LiteLLM (see the module docstring)."""
        found = metered_body(self.hook, scope, raw)
        if found is None:
            return None
        meter, body = found
        model = body.get("model")
        if not isinstance(model, str) or model not in self.models:
            return None
        keys, values = self.keys[model], self.values[model]
        for key in set(body) - keys:
            if key not in values or not _probed_value(body[key], values[key]):
                return None
        if not chat_shaped(body):
            return None
        return Call(meter, model, body, stream=bool(body.get("stream")))

    def request(self, call: Call) -> tuple[str, dict[str, str], dict[str, Any]]:
        """The upstream request: the upstream model, the usage asked for when streamed."""
        body = call.body
        target = self.models[call.alias]
        sent = {**body, "model": self.hook.UPSTREAM[call.alias]}
        if call.stream:
            sent["stream_options"] = {**(body.get("stream_options") or {}), "include_usage": True}
        headers = {"content-type": "application/json", "user-agent": USER_AGENT}
        key = os.environ.get(target["key_env"] or "", "")
        if key:
            headers["authorization"] = f"Bearer {key}"
        return target["api_base"].rstrip("/") + "/chat/completions", headers, sent

    def plain(self, call: Call, response: Any) -> tuple[bytes | None, Any, Any]:  # noqa: ARG002
        """The answer unchanged, its ``usage``, its choices."""
        if not isinstance(response, dict):
            return None, None, response
        usage = self.hook._usage_numbers(response) if response.get("usage") else None
        return None, usage, response.get("choices")

    def reader(self, call: Call) -> Reader:
        """A reader that passes the usage chunk on only when the agent asked for it."""
        asked = bool((call.body.get("stream_options") or {}).get("include_usage"))
        return ChatReader(self.hook, asked)

    def trajectory_request(self, body: dict[str, Any]) -> dict[str, Any]:
        """``messages`` and the other parameters."""
        params = {k: v for k, v in body.items() if k not in ("model", "messages")}
        return {"messages": body.get("messages"), "params": params}


class ChatReader:
    """A streamed chat completion: its chunks assembled, its usage chunk kept."""

    def __init__(self, hook: Any, asked_usage: bool) -> None:
        self.hook = hook
        self.asked_usage = asked_usage
        self.assembled = Assembled()
        self.usage_chunk: Any = None
        self.complete = False

    def add(self, event: bytes) -> bytes | None:
        """The event, or None for a usage chunk the agent did not ask for."""
        parsed = _event_json(event)
        if isinstance(parsed, dict) and parsed.get("usage"):
            self.usage_chunk = parsed
            self.complete = True
            if not self.asked_usage and not parsed.get("choices"):
                return None
        self.assembled.add(parsed)
        return event

    def usage(self) -> tuple[int, int, int, int] | None:
        """The usage chunk's numbers, or None."""
        if self.usage_chunk is None:
            return None
        return self.hook._usage_numbers(self.usage_chunk)  # type: ignore[no-any-return]

    def answer(self) -> Any:
        """The choices so far."""
        return self.assembled.response(self.usage_chunk)["choices"]

    def response(self) -> Any:
        """The chat completion the chunks make up."""
        return self.assembled.response(self.usage_chunk)


class FastPath:
    """The direct path of one gateway process (see the module docstring)."""

    def __init__(self, settings: dict[str, Any], hook: Any, timeout_s: float) -> None:
        import httpx

        if __package__:
            from rexmle.llm import native_fast
        else:  # loaded from the gateway's state folder
            import gateway_native_fast as native_fast  # type: ignore[no-redef]

        self.hook = hook
        self.routes: list[Route] = [OpenAIChat(settings, hook), *native_fast.routes(settings, hook)]
        self.client = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout_s),
            limits=httpx.Limits(max_connections=256, max_keepalive_connections=64),
        )

    def _route(self, scope: dict[str, Any]) -> Route | None:
        if scope.get("method") != "POST":
            return None
        return next((route for route in self.routes if route.accepts(scope)), None)

    def accepts(self, scope: dict[str, Any]) -> bool:
        """Whether the request might be served here (route and method; the body decides)."""
        return self._route(scope) is not None

    async def serve(self, scope: dict[str, Any], raw: bytes, send: Send) -> bool:
        """Serve the call here and return True, or return False for LiteLLM to serve it."""
        route = self._route(scope)
        try:
            call = None if route is None else route.call(scope, raw)
        except Exception:  # a body no check foresaw: LiteLLM answers it
            call = None
        if route is None or call is None:
            return False
        meter = call.meter
        metering = self.hook.metering
        price = self.hook.PRICES[call.alias]
        estimate = metering.estimate_usd(price, call.view, meter.entry.reserve_output_tokens)
        call_id = "fast-" + uuid.uuid4().hex
        deadline = time.monotonic() + self.hook.HOLD_MAX_S
        while True:
            try:
                meter.admit(call_id, estimate)
                break
            except metering.Refusal:
                return False  # LiteLLM's callback refuses it again and writes its line
            except metering.HoldBack as held:
                if time.monotonic() >= deadline:
                    message = (
                        f"rexmle gateway: {held.message} for {self.hook.HOLD_MAX_S:g} s; "
                        "retry later"
                    )
                    try:
                        self.hook._refuse(meter, {"model": call.alias}, 429, message)
                    except Exception:  # the refusal's HTTP error, answered here
                        await _error(send, 429, message)
                    return True
                await asyncio.sleep(self.hook.HOLD_POLL_S)
        started = time.time()
        line: Any = None
        trajectory: dict[str, Any] | None = None
        answered = False
        progress = Progress()

        async def tracked(message: Message) -> None:
            nonlocal answered
            answered = True
            await send(message)

        try:
            line, trajectory = await self._forward(route, call, tracked, started, progress)
        except Exception as error:  # no answer, or one broken off: the call is an error
            message = f"rexmle gateway: the upstream call failed: {type(error).__name__}: {error}"
            line = self._failed(call, started, progress, message)
            if answered:
                raise
            await _error(send, 502, message)
        finally:
            if line is None:  # cancelled (the agent went away)
                cancelled = "rexmle gateway: the call was cancelled"
                line = self._failed(call, started, progress, cancelled)
            meter.record(line, trajectory, call_id=call_id)
        return True

    def _line(
        self,
        call: Call,
        status: str,
        started: float,
        usage: tuple[int, int, int, int],
        error: str | None = None,
    ) -> Any:
        return self.hook.metering.UsageLine.charged(
            self.hook.PRICES[call.alias],
            usage,
            alias=call.alias,
            upstream_model=self.hook.UPSTREAM.get(call.alias, ""),
            status=status,
            latency_s=round(time.time() - started, 4),
            stream=call.stream,
            dropped_params=[],
            error=error,
        )

    def _trajectory(self, route: Route, call: Call, line: Any, response: Any) -> dict[str, Any]:
        return {
            "time": line.time,
            "alias": line.alias,
            "status": line.status,
            "request": route.trajectory_request(call.body),
            "response": response,
            "error": line.error,
        }

    def _charged(self, call: Call, started: float, usage: Any, answer: Any) -> Any:
        """The ``ok`` line of an answered call: its reported ``usage``, else the estimate."""
        if usage is not None:
            return self._line(call, "ok", started, usage)
        reserve = call.meter.entry.reserve_output_tokens
        numbers = self.hook.metering.unreported_usage(call.view, answer, reserve)
        return self._line(call, "ok", started, numbers, self.hook.metering.UNREPORTED)

    def _failed(self, call: Call, started: float, progress: Progress, message: str) -> Any:
        """The ``error`` line of a call that failed or was cancelled: nothing charged before
        the upstream answered; once its answer began, the usage it reported in full, else the
        estimate (:func:`~rexmle.llm.metering.unreported_usage`).
        """
        if not progress.started:
            return self._line(call, "error", started, (0, 0, 0, 0), message)
        reader = progress.reader
        usage = reader.usage() if reader is not None and reader.complete else None
        broken = f"{BROKEN_OFF} ({message})"
        if usage is not None:
            return self._line(call, "error", started, usage, f"{broken}; {REPORTED}")
        answer = None if reader is None else reader.answer()
        reserve = call.meter.entry.reserve_output_tokens
        numbers = self.hook.metering.unreported_usage(call.view, answer, reserve)
        note = f"{broken}; {self.hook.metering.UNREPORTED}"
        return self._line(call, "error", started, numbers, note)

    async def _forward(
        self, route: Route, call: Call, send: Send, started: float, progress: Progress
    ) -> tuple[Any, dict[str, Any]]:
        url, headers, sent = route.request(call)
        request = self.client.build_request("POST", url, json=sent, headers=headers)
        answer = await self.client.send(request, stream=True)
        try:
            out_headers = [(k, v) for k, v in answer.headers.raw if k.lower() in RESPONSE_HEADERS]
            if answer.status_code != 200:
                raw = await answer.aread()  # an error may quote the provider's key
                text = raw.decode("utf-8", errors="replace")
                raw = self.hook.metering.redact(text, self.hook.SECRETS).encode("utf-8")
                await _relay(send, answer.status_code, out_headers, raw)
                error = f"upstream answered {answer.status_code}: {_parsed(raw)}"
                line = self._line(call, "error", started, (0, 0, 0, 0), error)
                return line, self._trajectory(route, call, line, _parsed(raw))
            progress.started = True
            if not call.stream:
                raw = await answer.aread()
                response = _parsed(raw)
                relayed, usage, said = route.plain(call, response)
                await _relay(send, 200, out_headers, raw if relayed is None else relayed)
                line = self._charged(call, started, usage, said)
                return line, self._trajectory(route, call, line, response)
            await send({"type": "http.response.start", "status": 200, "headers": out_headers})
            reader = progress.reader = route.reader(call)
            pending = b""
            async for piece in answer.aiter_bytes():
                pending = (pending + piece).replace(b"\r\n", b"\n")
                *events, pending = pending.split(b"\n\n")
                kept = [b"%s\n\n" % out for out in map(reader.add, events) if out is not None]
                if kept:
                    await send(
                        {"type": "http.response.body", "body": b"".join(kept), "more_body": True}
                    )
            tail = reader.add(pending) if pending.strip() else pending
            await send({"type": "http.response.body", "body": tail or b"", "more_body": False})
            usage = reader.usage() if reader.complete else None
            line = self._charged(call, started, usage, reader.answer())
            return line, self._trajectory(route, call, line, reader.response())
        finally:
            await answer.aclose()


async def _relay(send: Send, status: int, headers: list[tuple[bytes, bytes]], raw: bytes) -> None:
    headers = [*headers, (b"content-length", str(len(raw)).encode("ascii"))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": raw})


def _parsed(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", errors="replace")


class Assembled:
    """A streamed chat completion put together from its chunks (for the trajectory)."""

    def __init__(self) -> None:
        self.content: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish: Any = None

    def add(self, chunk: Any) -> None:
        """Take in one parsed chunk (anything else is ignored)."""
        if not isinstance(chunk, dict):
            return
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, dict):
                continue
            self.finish = choice.get("finish_reason") or self.finish
            delta = choice.get("delta") or {}
            if isinstance(delta.get("content"), str):
                self.content.append(delta["content"])
            for call in delta.get("tool_calls") or ():
                if not isinstance(call, dict):
                    continue
                kept = self.calls.setdefault(
                    int(call.get("index") or 0),
                    {"id": None, "type": "function", "function": {"name": "", "arguments": ""}},
                )
                kept["id"] = call.get("id") or kept["id"]
                function = call.get("function") or {}
                for part in ("name", "arguments"):
                    if isinstance(function.get(part), str):
                        kept["function"][part] += function[part]

    def response(self, usage_chunk: Any) -> dict[str, Any]:
        """The chat completion the chunks make up."""
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.content)}
        if self.calls:
            message["tool_calls"] = [self.calls[i] for i in sorted(self.calls)]
        usage = usage_chunk.get("usage") if isinstance(usage_chunk, dict) else None
        return {
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish}],
            "usage": usage,
        }


async def _error(send: Send, status: int, message: str) -> None:
    body = json.dumps(
        {"error": {"message": message, "type": "error", "param": None, "code": str(status)}}
    ).encode("utf-8")
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode("ascii")),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _event_json(event: bytes) -> Any:
    for line in event.split(b"\n"):
        if line.startswith(b"data:"):
            data = line[5:].strip()
            if data == b"[DONE]":
                return None
            try:
                return json.loads(data)
            except ValueError:
                return None
    return None
