"""The gateway's direct forwarding of OpenAI chat completions to an OpenAI-API provider (loaded
by the proxy's guard, not by the harness).

Copied into the gateway's state folder as ``gateway_fast.py``. A call is served here, without
LiteLLM, only when all of these hold; any other call (and any call the meter refuses, which
LiteLLM's callback then refuses again, answers and records) goes to LiteLLM unchanged:

- ``POST /v1/chat/completions`` (or ``/chat/completions``), not Gemini's rewritten route;
- a registered run token (``Authorization: Bearer`` or ``x-api-key``);
- a JSON object body whose ``model`` is a configured alias of a provider with ``api: openai``
  (``gateway.json``'s ``fast_models``), and whose keys are all forwarded by LiteLLM unchanged
  for that alias's model: :data:`PASSTHROUGH_KEYS`, and each parameter of :data:`PROBES` that
  LiteLLM's own parameter mapping (``get_optional_params``, with the config's ``drop_params``)
  passes on as it is for each of its sample values, asked once per alias at start. So nothing
  is dropped, renamed or refused on this path that LiteLLM would drop, rename or refuse.

Such a call is admitted by the run's meter (:meth:`RunMeter.admit`, the same estimate, hold-back
and its time limit as the callback), sent to the provider's base URL with its key on one
kept-alive connection pool (a streamed call asks for ``stream_options.include_usage``; the usage
chunk is passed on only when the agent asked for it), and recorded (:meth:`RunMeter.record`)
with the same usage line and trajectory entry fields as the callback writes, charged at the
alias's price. An answer the provider sends without its usage (an OpenAI-compatible server that
ignores ``include_usage``) is charged :func:`~rexmle.llm.metering.unreported_usage`, never
nothing, and its line says so (:data:`~rexmle.llm.metering.UNREPORTED`).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

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
    "temperature": (0.3, 1.0),
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


def passthrough_keys(upstream: str, drop_params: bool) -> frozenset[str]:
    """The body keys LiteLLM forwards unchanged to an OpenAI-API provider's ``upstream``
    model (see the module docstring).
    """
    from litellm.utils import get_optional_params

    kept = set(PASSTHROUGH_KEYS)
    for name, samples in PROBES.items():
        for sample in samples:
            try:
                mapped = get_optional_params(
                    model=upstream,
                    custom_llm_provider="openai",
                    drop_params=drop_params,
                    **{name: sample},
                )
            except Exception:  # LiteLLM refuses it: the call goes to LiteLLM
                break
            shown = {k: v for k, v in mapped.items() if k not in PROBE_NOISE or v}
            if shown != {name: sample}:
                break
        else:
            kept.add(name)
    return frozenset(kept)


RESPONSE_HEADERS = frozenset({b"content-type"})
USER_AGENT = "rexmle-gateway"
"""The ``User-Agent`` of the calls this path sends (LiteLLM's are its OpenAI SDK's)."""


def _header(scope: dict[str, Any], name: bytes) -> str:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return ""


class FastPath:
    """The direct path of one gateway process (see the module docstring)."""

    def __init__(self, settings: dict[str, Any], hook: Any, timeout_s: float) -> None:
        import httpx

        self.hook = hook
        self.models: dict[str, dict[str, str]] = settings.get("fast_models", {})
        drop = bool(settings.get("drop_params", True))
        self.keys = {alias: passthrough_keys(hook.UPSTREAM[alias], drop) for alias in self.models}
        self.client = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout_s),
            limits=httpx.Limits(max_connections=256, max_keepalive_connections=64),
        )

    def accepts(self, scope: dict[str, Any]) -> bool:
        """Whether the request might be served here (route and method; the body decides)."""
        return (
            scope.get("method") == "POST" and scope.get("path") in FAST_ROUTES and bool(self.models)
        )

    def _eligible(self, scope: dict[str, Any], raw: bytes) -> tuple[Any, dict[str, Any]] | None:
        token = _header(scope, b"authorization").removeprefix("Bearer ").strip()
        token = token or _header(scope, b"x-api-key").strip()
        meter = self.hook.REGISTRY.meter(token) if token else None
        if meter is None:
            return None
        try:
            body = json.loads(raw)
        except ValueError:
            return None
        if not isinstance(body, dict):
            return None
        model = body.get("model")
        if not isinstance(model, str) or model not in self.models:
            return None
        if not set(body) <= self.keys[model]:
            return None
        if not isinstance(body.get("messages"), list):
            return None
        if not isinstance(body.get("stream", False), bool):
            return None
        options = body.get("stream_options")
        if options is not None and not isinstance(options, dict):
            return None
        return meter, body

    async def serve(self, scope: dict[str, Any], raw: bytes, send: Send) -> bool:
        """Serve the call here and return True, or return False for LiteLLM to serve it."""
        found = self._eligible(scope, raw)
        if found is None:
            return False
        meter, body = found
        metering = self.hook.metering
        alias = body["model"]
        price = self.hook.PRICES[alias]
        estimate = metering.estimate_usd(price, body, meter.entry.reserve_output_tokens)
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
                        self.hook._refuse(meter, body, 429, message)
                    except Exception:  # the refusal's HTTP error, answered here
                        await _error(send, 429, message)
                    return True
                await asyncio.sleep(self.hook.HOLD_POLL_S)
        started = time.time()
        line: Any = None
        trajectory: dict[str, Any] | None = None
        answered = False

        async def tracked(message: Message) -> None:
            nonlocal answered
            answered = True
            await send(message)

        try:
            line, trajectory = await self._forward(alias, body, tracked, started, meter)
        except Exception as error:  # no answer, or one broken off: the call is an error
            message = f"rexmle gateway: the upstream call failed: {type(error).__name__}: {error}"
            line = self._line(alias, "error", started, body, (0, 0, 0, 0), message)
            if answered:
                raise
            await _error(send, 502, message)
        finally:
            if line is None:  # cancelled (the agent went away)
                cancelled = "rexmle gateway: the call was cancelled"
                line = self._line(alias, "error", started, body, (0, 0, 0, 0), cancelled)
            meter.record(line, trajectory, call_id=call_id)
        return True

    def _line(
        self,
        alias: str,
        status: str,
        started: float,
        body: dict[str, Any],
        usage: tuple[int, int, int, int],
        error: str | None = None,
    ) -> Any:
        return self.hook.metering.UsageLine.charged(
            self.hook.PRICES[alias],
            usage,
            alias=alias,
            upstream_model=self.hook.UPSTREAM.get(alias, ""),
            status=status,
            latency_s=round(time.time() - started, 4),
            stream=bool(body.get("stream")),
            dropped_params=[],
            error=error,
        )

    def _trajectory(self, line: Any, body: dict[str, Any], response: Any) -> dict[str, Any]:
        params = {k: v for k, v in body.items() if k not in ("model", "messages")}
        return {
            "time": line.time,
            "alias": line.alias,
            "status": line.status,
            "request": {"messages": body.get("messages"), "params": params},
            "response": response,
            "error": line.error,
        }

    def _charged(self, alias: str, started: float, body: dict[str, Any], answer: Any,
                 usage: Any, meter: Any) -> Any:  # fmt: skip
        """The ``ok`` line of an answered call: its reported ``usage``, else the estimate."""
        if isinstance(usage, dict) and usage.get("usage"):
            return self._line(alias, "ok", started, body, self.hook._usage_numbers(usage))
        reserve = meter.entry.reserve_output_tokens
        numbers = self.hook.metering.unreported_usage(body, answer, reserve)
        return self._line(alias, "ok", started, body, numbers, self.hook.metering.UNREPORTED)

    async def _forward(
        self, alias: str, body: dict[str, Any], send: Send, started: float, meter: Any
    ) -> tuple[Any, dict[str, Any]]:
        target = self.models[alias]
        stream = bool(body.get("stream"))
        asked_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        sent = {**body, "model": self.hook.UPSTREAM[alias]}
        if stream:
            sent["stream_options"] = {**(body.get("stream_options") or {}), "include_usage": True}
        headers = {"content-type": "application/json", "user-agent": USER_AGENT}
        key = os.environ.get(target["key_env"] or "", "")
        if key:
            headers["authorization"] = f"Bearer {key}"
        request = self.client.build_request(
            "POST", target["api_base"].rstrip("/") + "/chat/completions", json=sent, headers=headers
        )
        answer = await self.client.send(request, stream=True)
        try:
            out_headers = [(k, v) for k, v in answer.headers.raw if k.lower() in RESPONSE_HEADERS]
            if not stream or answer.status_code != 200:
                raw = await answer.aread()
                if answer.status_code != 200:  # an error may quote the provider's key
                    text = raw.decode("utf-8", errors="replace")
                    raw = self.hook.metering.redact(text, self.hook.SECRETS).encode("utf-8")
                out_headers.append((b"content-length", str(len(raw)).encode("ascii")))
                await send(
                    {
                        "type": "http.response.start",
                        "status": answer.status_code,
                        "headers": out_headers,
                    }
                )
                await send({"type": "http.response.body", "body": raw})
                try:
                    response: Any = json.loads(raw)
                except ValueError:
                    response = raw.decode("utf-8", errors="replace")
                if answer.status_code != 200:
                    error = f"upstream answered {answer.status_code}: {response}"
                    line = self._line(alias, "error", started, body, (0, 0, 0, 0), error)
                else:
                    said = response.get("choices") if isinstance(response, dict) else response
                    line = self._charged(alias, started, body, said, response, meter)
                return line, self._trajectory(line, body, response)
            await send({"type": "http.response.start", "status": 200, "headers": out_headers})
            usage_chunk: Any = None
            assembled = Assembled()
            pending = b""
            async for piece in answer.aiter_bytes():
                pending = (pending + piece).replace(b"\r\n", b"\n")
                *events, pending = pending.split(b"\n\n")
                kept = []
                for event in events:
                    parsed = _event_json(event)
                    if isinstance(parsed, dict) and parsed.get("usage"):
                        usage_chunk = parsed
                        if not asked_usage and not parsed.get("choices"):
                            continue
                    assembled.add(parsed)
                    kept.append(event + b"\n\n")
                if kept:
                    await send(
                        {"type": "http.response.body", "body": b"".join(kept), "more_body": True}
                    )
            last = _event_json(pending)
            if isinstance(last, dict) and last.get("usage"):
                usage_chunk = last
                if not asked_usage and not last.get("choices"):
                    pending = b""
            assembled.add(last)
            await send({"type": "http.response.body", "body": pending, "more_body": False})
            response = assembled.response(usage_chunk)
            line = self._charged(alias, started, body, response["choices"], usage_chunk, meter)
            return line, self._trajectory(line, body, response)
        finally:
            await answer.aclose()


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
