"""The offline stand-in for the LLM providers: an HTTP server on 127.0.0.1 speaking their APIs.

``rexmle llm standin`` serves it (default port :data:`DEFAULT_PORT`); the shipped LLM config
``rexmle/llm/standin_llm.yaml`` (:func:`standin_config_path`) routes every model of the built-in
config to it, so any agent runs end to end without a provider or a key: a way to try an agent,
an experiment file or a cluster set-up before spending money.

Endpoints (each also without the ``/v1`` prefix):

- ``POST /v1/chat/completions``: OpenAI chat completions, streamed (SSE chunks, the usage chunk
  only when ``stream_options.include_usage`` is set, as OpenAI does) and not;
- ``POST /v1/responses``: the OpenAI Responses API, streamed (typed SSE events) and not;
- ``POST /v1/messages``: Anthropic messages, streamed (typed SSE events) and not;
- ``POST /v1beta/models/<model>:generateContent`` and ``:streamGenerateContent``: the Gemini
  API, streamed as SSE with ``?alt=sse`` (as google-genai asks) or else as one JSON array of
  chunks (Gemini's default); its key in ``x-goog-api-key`` or ``?key=``;
- ``POST /v1/embeddings``: deterministic 8-dimensional vectors (a hash of the text);
- ``GET /v1/models``: the models requested so far.

Each completion call takes the next :class:`Reply` of the queue (then the ``responder``, then
the default reply): text, tool calls, token counts, an error status, a delay, a hang or a stream
broken off after some events. Token
counts not scripted are counted from the request: one token per whitespace-separated word of
its message texts (input) and of the reply (output). Every request is recorded with its
headers and JSON body.

A reply script (``--script FILE.json``) is a JSON list of replies, answered in order, one per
completion call; each is an object with the fields of :class:`Reply` (all optional)::

    [{"text": "hello"},
     {"tool_calls": [{"name": "submit", "arguments": {"path": "submission.csv"}}]},
     {"status": 429, "error": "slow down"},
     {"text": "late", "delay_s": 2.5, "input_tokens": 1000, "output_tokens": 20}]
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import signal
import threading
import time
import urllib.parse
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from types import TracebackType
from typing import Any

STREAM_PIECE_CHARS = 8
DEFAULT_PORT = 8765
"""The port ``rexmle llm standin`` serves on unless told another; the shipped config's."""
CONFIG_NAME = "standin_llm.yaml"
"""Streamed text is cut into pieces of this many characters (one SSE event each)."""


@dataclass(frozen=True)
class ToolCall:
    """A function call in a scripted reply (OpenAI tool call, Responses function call,
    Anthropic tool_use block).
    """

    name: str
    arguments: dict[str, Any]
    id: str = ""
    """Call id; generated (``call_<n>``) when empty."""


@dataclass(frozen=True)
class Reply:
    """One scripted answer.

    Token counts follow OpenAI's definitions: ``input_tokens`` includes the ``cached_tokens``
    and ``output_tokens`` includes the ``reasoning_tokens``. The Anthropic API reports
    ``input_tokens - cached_tokens`` as its ``input_tokens`` and the cached ones as
    ``cache_read_input_tokens``.
    """

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    input_tokens: int | None = None
    """None: counted from the request (words of its message texts)."""
    output_tokens: int | None = None
    """None: counted from the reply (words of the text and of the tool arguments)."""
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    status: int = 200
    """An HTTP error status (e.g. 429, 500) answers with the provider's error body instead."""
    error: str = "scripted error"
    delay_s: float = 0.0
    """Seconds to wait before answering."""
    hang: bool = False
    """Never answer (the connection stays open until the server stops)."""
    break_after: int | None = None
    """A streamed answer only: the connection is closed after this many events, the stream
    unfinished (an upstream that fails mid-stream)."""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Reply:
        """A reply from its JSON form (``tool_calls`` as a list of ``{name, arguments}``)."""
        calls = tuple(ToolCall(**call) for call in data.get("tool_calls", ()))
        return cls(**{**data, "tool_calls": calls})


@dataclass(frozen=True)
class RecordedRequest:
    """A request the stand-in received."""

    method: str
    path: str
    headers: dict[str, str]
    """Header names in lower case."""
    body: Any
    """The parsed JSON body (None for a GET or a body that is not JSON)."""
    received_at: float = field(default_factory=time.time)


def _words(value: Any) -> int:
    if isinstance(value, str):
        return len(value.split())
    if isinstance(value, dict):
        return sum(
            _words(v) for k, v in value.items() if k in ("content", "text", "input", "parts")
        )
    if isinstance(value, list):
        return sum(_words(v) for v in value)
    return 0


def request_words(body: dict[str, Any]) -> int:
    """Input tokens of a request as the stand-in counts them (words of its message texts)."""
    system = body.get("system", "")
    gemini = _words(body.get("contents", [])) + _words(body.get("systemInstruction", {}))
    return (
        _words(body.get("messages", [])) + _words(body.get("input", "")) + _words(system) + gemini
    )


@dataclass(frozen=True)
class _Usage:
    input: int
    output: int
    cached: int
    reasoning: int


def _usage(reply: Reply, body: dict[str, Any]) -> _Usage:
    output = reply.output_tokens
    if output is None:
        output = len(reply.text.split()) + sum(
            len(json.dumps(c.arguments).split()) for c in reply.tool_calls
        )
    given = reply.input_tokens
    return _Usage(
        input=max(1, request_words(body)) if given is None else given,
        output=max(1, output),
        cached=reply.cached_tokens,
        reasoning=reply.reasoning_tokens,
    )


def _pieces(text: str) -> list[str]:
    return [text[i : i + STREAM_PIECE_CHARS] for i in range(0, len(text), STREAM_PIECE_CHARS)]


class _Api:
    """Bodies and SSE events of one provider API for a reply."""

    def __init__(self, reply: Reply, body: dict[str, Any], ids: Iterator[int]) -> None:
        self.reply = reply
        self.model = str(body.get("model", "unknown"))
        self.body = body
        self.usage = _usage(reply, body)
        self.n = next(ids)
        self.calls = [
            (call.id or f"call_{self.n}_{i}", call.name, json.dumps(call.arguments))
            for i, call in enumerate(reply.tool_calls)
        ]


class _Chat(_Api):
    def _usage_body(self) -> dict[str, Any]:
        u = self.usage
        return {
            "prompt_tokens": u.input,
            "completion_tokens": u.output,
            "total_tokens": u.input + u.output,
            "prompt_tokens_details": {"cached_tokens": u.cached},
            "completion_tokens_details": {"reasoning_tokens": u.reasoning},
        }

    def _finish(self) -> str:
        return "tool_calls" if self.calls else "stop"

    def body_json(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.reply.text or None}
        if self.calls:
            message["tool_calls"] = [
                {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
                for cid, name, args in self.calls
            ]
        return {
            "id": f"chatcmpl-{self.n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": self._finish()}],
            "usage": self._usage_body(),
        }

    def events(self) -> Iterator[tuple[str | None, Any]]:
        include_usage = bool((self.body.get("stream_options") or {}).get("include_usage"))
        base = {
            "id": f"chatcmpl-{self.n}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": self.model,
        }

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            out = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            if include_usage:
                out["usage"] = None
            return out

        yield None, chunk({"role": "assistant", "content": ""})
        for piece in _pieces(self.reply.text):
            yield None, chunk({"content": piece})
        for index, (cid, name, args) in enumerate(self.calls):
            head = {"index": index, "id": cid, "type": "function"}
            yield (
                None,
                chunk({"tool_calls": [{**head, "function": {"name": name, "arguments": ""}}]}),
            )
            for piece in _pieces(args):
                yield (
                    None,
                    chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                )
        yield None, chunk({}, self._finish())
        if include_usage:
            yield None, {**base, "choices": [], "usage": self._usage_body()}
        yield None, "[DONE]"


class _Responses(_Api):
    def _output(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        if self.reply.text or not self.calls:
            items.append(self._message_item("completed", self.reply.text))
        for cid, name, args in self.calls:
            items.append(self._call_item(cid, name, args, "completed"))
        return items

    def _message_item(self, status: str, text: str | None) -> dict[str, Any]:
        content = [] if text is None else [self._text_part(text)]
        return {
            "type": "message",
            "id": f"msg_{self.n}",
            "status": status,
            "role": "assistant",
            "content": content,
        }

    @staticmethod
    def _text_part(text: str) -> dict[str, Any]:
        return {"type": "output_text", "text": text, "annotations": []}

    @staticmethod
    def _call_item(cid: str, name: str, args: str, status: str) -> dict[str, Any]:
        return {
            "type": "function_call",
            "id": f"fc_{cid}",
            "call_id": cid,
            "name": name,
            "arguments": args,
            "status": status,
        }

    def body_json(self, status: str = "completed", output: list[Any] | None = None) -> Any:
        u = self.usage
        return {
            "id": f"resp_{self.n}",
            "object": "response",
            "created_at": int(time.time()),
            "status": status,
            "model": self.model,
            "output": self._output() if output is None else output,
            "parallel_tool_calls": True,
            "tool_choice": self.body.get("tool_choice", "auto"),
            "tools": self.body.get("tools", []),
            "usage": {
                "input_tokens": u.input,
                "input_tokens_details": {"cached_tokens": u.cached},
                "output_tokens": u.output,
                "output_tokens_details": {"reasoning_tokens": u.reasoning},
                "total_tokens": u.input + u.output,
            },
        }

    def events(self) -> Iterator[tuple[str | None, Any]]:
        sequence = itertools.count()

        def event(kind: str, **fields: Any) -> tuple[str, dict[str, Any]]:
            return kind, {"type": kind, "sequence_number": next(sequence), **fields}

        yield event("response.created", response=self.body_json("in_progress", []))
        index = 0
        if self.reply.text or not self.calls:
            item_id = f"msg_{self.n}"
            where = {"item_id": item_id, "output_index": index, "content_index": 0}
            yield event("response.output_item.added", output_index=index,
                        item=self._message_item("in_progress", None))  # fmt: skip
            yield event("response.content_part.added", **where, part=self._text_part(""))
            for piece in _pieces(self.reply.text):
                yield event("response.output_text.delta", **where, delta=piece)
            yield event("response.output_text.done", **where, text=self.reply.text)
            yield event("response.content_part.done", **where,
                        part=self._text_part(self.reply.text))  # fmt: skip
            yield event("response.output_item.done", output_index=index,
                        item=self._message_item("completed", self.reply.text))  # fmt: skip
            index += 1
        for cid, name, args in self.calls:
            item_id = f"fc_{cid}"
            yield event("response.output_item.added", output_index=index,
                        item=self._call_item(cid, name, "", "in_progress"))  # fmt: skip
            for piece in _pieces(args):
                yield event("response.function_call_arguments.delta", item_id=item_id,
                            output_index=index, delta=piece)  # fmt: skip
            yield event("response.function_call_arguments.done", item_id=item_id,
                        output_index=index, arguments=args)  # fmt: skip
            yield event("response.output_item.done", output_index=index,
                        item=self._call_item(cid, name, args, "completed"))  # fmt: skip
            index += 1
        yield event("response.completed", response=self.body_json())


class _Messages(_Api):
    def _stop(self) -> str:
        return "tool_use" if self.calls else "end_turn"

    def _usage_body(self, output: int) -> dict[str, Any]:
        u = self.usage
        return {
            "input_tokens": u.input - u.cached,
            "output_tokens": output,
            "cache_read_input_tokens": u.cached,
            "cache_creation_input_tokens": 0,
        }

    def _message(self, content: list[Any], stop: str | None, output: int) -> dict[str, Any]:
        return {
            "id": f"msg_{self.n}",
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": self._usage_body(output),
        }

    def body_json(self) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if self.reply.text:
            content.append({"type": "text", "text": self.reply.text})
        for cid, name, args in self.calls:
            content.append({"type": "tool_use", "id": cid, "name": name, "input": json.loads(args)})
        return self._message(content, self._stop(), self.usage.output)

    def events(self) -> Iterator[tuple[str | None, Any]]:
        yield "message_start", {"type": "message_start", "message": self._message([], None, 1)}
        blocks: list[tuple[dict[str, Any], str, str, str]] = []
        if self.reply.text:
            blocks.append(({"type": "text", "text": ""}, "text_delta", "text", self.reply.text))
        for cid, name, args in self.calls:
            tool = {"type": "tool_use", "id": cid, "name": name, "input": {}}
            blocks.append((tool, "input_json_delta", "partial_json", args))
        for index, (block, delta_type, delta_key, text) in enumerate(blocks):
            start = {"type": "content_block_start", "index": index, "content_block": block}
            yield "content_block_start", start
            for piece in _pieces(text):
                delta = {"type": delta_type, delta_key: piece}
                yield (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
            yield "content_block_stop", {"type": "content_block_stop", "index": index}
        yield (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": self._stop(), "stop_sequence": None},
                "usage": {"output_tokens": self.usage.output},
            },
        )
        yield "message_stop", {"type": "message_stop"}


class _Gemini(_Api):
    """Gemini ``generateContent``: ``promptTokenCount`` counts the cached tokens,
    ``candidatesTokenCount`` leaves out the thoughts (``thoughtsTokenCount``).
    """

    def __init__(self, reply: Reply, body: dict[str, Any], ids: Iterator[int], model: str) -> None:
        super().__init__(reply, body, ids)
        self.model = model

    def _usage_body(self) -> dict[str, Any]:
        u = self.usage
        usage = {
            "promptTokenCount": u.input,
            "candidatesTokenCount": u.output - u.reasoning,
            "totalTokenCount": u.input + u.output,
        }
        if u.cached:
            usage["cachedContentTokenCount"] = u.cached
        if u.reasoning:
            usage["thoughtsTokenCount"] = u.reasoning
        return usage

    def _chunk(self, parts: list[dict[str, Any]], finish: str | None) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        if finish is not None:
            candidate["finishReason"] = finish
        return {
            "candidates": [candidate],
            "usageMetadata": self._usage_body(),
            "modelVersion": self.model,
            "responseId": f"gemini-{self.n}",
        }

    def _call_parts(self) -> list[dict[str, Any]]:
        return [
            {"functionCall": {"name": name, "args": json.loads(args)}}
            for _, name, args in self.calls
        ]

    def body_json(self) -> dict[str, Any]:
        parts = [{"text": self.reply.text}] if self.reply.text else []
        return self._chunk(parts + self._call_parts(), "STOP")

    def events(self) -> Iterator[tuple[str | None, Any]]:
        pieces = _pieces(self.reply.text) or [""]
        for index, piece in enumerate(pieces):
            last = index == len(pieces) - 1 and not self.calls
            yield None, self._chunk([{"text": piece}], "STOP" if last else None)
        if self.calls:
            yield None, self._chunk(self._call_parts(), "STOP")


GEMINI_ROUTE = re.compile(
    r"^/v1beta/models/(?P<model>[^/:]+):(?P<verb>generateContent|streamGenerateContent)$"
)
"""A Gemini API path (after the query string is cut off)."""
GEMINI_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
                 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL"}  # fmt: skip


APIS: dict[str, type[_Chat] | type[_Responses] | type[_Messages]] = {
    "/chat/completions": _Chat,
    "/responses": _Responses,
    "/messages": _Messages,
}


def _error_body(path: str, status: int, message: str) -> dict[str, Any]:
    if GEMINI_ROUTE.match(path):
        state = GEMINI_STATUS.get(status, "INTERNAL" if status >= 500 else "FAILED_PRECONDITION")
        return {"error": {"code": status, "message": message, "status": state}}
    if path == "/messages":
        kind = {401: "authentication_error", 429: "rate_limit_error"}.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
    kind = {401: "invalid_request_error", 429: "rate_limit_exceeded"}.get(status, "server_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": str(status)}}


def _route_of(path: str) -> str:
    """A request path without its query string, trailing slash and ``/v1`` prefix."""
    route = path.split("?", 1)[0].rstrip("/")
    return route[3:] if route == "/v1" or route.startswith("/v1/") else route


def embedding(text: str) -> list[float]:
    """The stand-in's embedding of ``text``: 8 floats in [-1, 1) from its sha256."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return [(b / 128.0) - 1.0 for b in digest[:8]]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    """Headers and body go out in separate writes: without TCP_NODELAY each answer waits for
    the client's delayed ACK (about 40 ms on Linux)."""
    server: _Server

    def log_message(self, _format: str, *_args: object) -> None:
        return

    def _send_json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _route(self) -> str:
        return _route_of(self.path)

    def _query(self) -> dict[str, list[str]]:
        return urllib.parse.parse_qs(self.path.partition("?")[2])

    def do_GET(self) -> None:
        upstream = self.server.owner
        upstream.record(RecordedRequest("GET", self.path, self._headers(), None))
        if self._route() == "/models":
            models = sorted({str((r.body or {}).get("model")) for r in upstream.requests if r.body})
            data = [{"id": m, "object": "model", "owned_by": "standin"} for m in models]
            self._send_json(200, {"object": "list", "data": data})
            return
        self._send_json(404, {"error": {"message": f"no route {self.path}"}})

    def _headers(self) -> dict[str, str]:
        return {k.lower(): v for k, v in self.headers.items()}

    def do_POST(self) -> None:
        upstream = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        recorded = RecordedRequest("POST", self.path, self._headers(), body)
        upstream.record(recorded)
        route = self._route()
        if not isinstance(body, dict):
            self._send_json(400, _error_body(route, 400, "the body is not a JSON object"))
            return
        key = self._query().get("key", [""])[0]
        if not upstream.accepts({**recorded.headers, **({"x-goog-api-key": key} if key else {})}):
            self._send_json(401, _error_body(route, 401, "invalid API key"))
            return
        if route == "/embeddings":
            self._embeddings(body)
            return
        gemini = GEMINI_ROUTE.match(route)
        api = APIS.get(route)
        if api is None and gemini is None:
            self._send_json(404, _error_body(route, 404, f"no route {self.path}"))
            return
        reply = upstream.next_reply(recorded)
        if reply.hang:
            upstream.stopping.wait()
            return
        if reply.delay_s:
            upstream.stopping.wait(reply.delay_s)
        if reply.status != 200:
            self._send_json(reply.status, _error_body(route, reply.status, reply.error))
            return
        if api is None:
            assert gemini is not None  # checked above: one of the two matched
            self._gemini(_Gemini(reply, body, upstream.ids, gemini["model"]), gemini["verb"])
            return
        answer = api(reply, body, upstream.ids)
        if body.get("stream"):
            self._stream(answer.events(), reply.break_after)
        else:
            self._send_json(200, answer.body_json())

    def _gemini(self, answer: _Gemini, verb: str) -> None:
        if verb == "generateContent":
            self._send_json(200, answer.body_json())
        elif self._query().get("alt") == ["sse"]:
            self._stream(answer.events(), answer.reply.break_after)
        else:
            self._send_json(200, [chunk for _, chunk in answer.events()])

    def _embeddings(self, body: dict[str, Any]) -> None:
        texts = body.get("input", [])
        texts = [texts] if isinstance(texts, str) else [str(t) for t in texts]
        tokens = sum(max(1, len(t.split())) for t in texts)
        data = [
            {"object": "embedding", "index": i, "embedding": embedding(t)}
            for i, t in enumerate(texts)
        ]
        self._send_json(
            200,
            {
                "object": "list",
                "data": data,
                "model": body.get("model", "unknown"),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
        )

    def _stream(
        self, events: Iterator[tuple[str | None, Any]], break_after: int | None = None
    ) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for index, (name, payload) in enumerate(events):
            if break_after is not None and index >= break_after:
                self.close_connection = True  # no last chunk: the stream is broken off
                return
            data = payload if isinstance(payload, str) else json.dumps(payload)
            text = (f"event: {name}\n" if name else "") + f"data: {data}\n\n"
            encoded = text.encode("utf-8")
            self.wfile.write(f"{len(encoded):x}\r\n".encode() + encoded + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: ScriptedUpstream


class ScriptedUpstream:
    """The stand-in server (see the module docstring).

    Use as a context manager::

    with ScriptedUpstream([Reply(text="hello")]) as upstream:
        call(upstream.base_url + "/v1/chat/completions", ...)
        assert upstream.requests[0].body["model"] == "gpt-5"
    """

    def __init__(
        self,
        replies: list[Reply] | None = None,
        *,
        default: Reply | None = None,
        responder: Callable[[RecordedRequest], Reply] | None = None,
        api_keys: set[str] | None = None,
        port: int = 0,
    ) -> None:
        """Args:
        replies: answered in order, one per completion call.
        default: the reply once the queue is empty (and there is no ``responder``).
        responder: builds the reply for a request once the queue is empty.
        api_keys: when given, a call without one of them (``Authorization: Bearer`` or
            ``x-api-key``) is answered 401.
        port: 0 picks a free port.
        """
        self._replies: deque[Reply] = deque(replies or [])
        self.default = default or Reply(text="ok")
        self.responder = responder
        self.api_keys = api_keys
        self.requests: list[RecordedRequest] = []
        self.ids = itertools.count(1)
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._port = port
        self._server: _Server | None = None

    @property
    def port(self) -> int:
        """The bound port (after :meth:`start`)."""
        if self._server is None:
            msg = "the stand-in is not started"
            raise RuntimeError(msg)
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` (append ``/v1`` for OpenAI SDKs)."""
        return f"http://127.0.0.1:{self.port}"

    def reset(self, default: Reply | None = None) -> None:
        """Empty the queue and the recorded requests; set the default reply (or "ok")."""
        with self._lock:
            self._replies.clear()
            self.requests.clear()
            self.default = default or Reply(text="ok")
            self.responder = None

    def push(self, *replies: Reply) -> None:
        """Queue more replies."""
        with self._lock:
            self._replies.extend(replies)

    def record(self, request: RecordedRequest) -> None:
        """Keep a received request."""
        with self._lock:
            self.requests.append(request)

    def completion_requests(self) -> list[RecordedRequest]:
        """The POSTs to a completion endpoint, in order of arrival."""
        with self._lock:
            return [
                r
                for r in self.requests
                if r.method == "POST"
                and (_route_of(r.path) in APIS or GEMINI_ROUTE.match(_route_of(r.path)))
            ]

    def accepts(self, headers: dict[str, str]) -> bool:
        """Whether a request with ``headers`` carries an accepted key (always, without keys):
        ``Authorization: Bearer``, ``x-api-key`` or ``x-goog-api-key``.
        """
        if self.api_keys is None:
            return True
        bearer = headers.get("authorization", "").removeprefix("Bearer ").strip()
        given = {bearer, headers.get("x-api-key", ""), headers.get("x-goog-api-key", "")}
        return bool(given & self.api_keys)

    def next_reply(self, request: RecordedRequest) -> Reply:
        """The queued reply, else the responder's, else the default."""
        with self._lock:
            if self._replies:
                return self._replies.popleft()
        if self.responder is not None:
            return self.responder(request)
        return self.default

    def start(self) -> ScriptedUpstream:
        """Bind 127.0.0.1 and serve in a daemon thread."""
        self._server = _Server(("127.0.0.1", self._port), _Handler)
        self._server.owner = self
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def stop(self) -> None:
        """Release hanging calls and stop serving."""
        self.stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> ScriptedUpstream:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def load_script(path: Path) -> list[Reply]:
    """Replies from a JSON file holding a list of :class:`Reply` objects in their JSON form."""
    entries = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(entries, list):
        msg = f"{path}: expected a JSON list of replies, got {type(entries).__name__}"
        raise ValueError(msg)
    return [Reply.from_dict(entry) for entry in entries]


def standin_config_path() -> Path:
    """The shipped LLM config for the stand-in on :data:`DEFAULT_PORT`."""
    return Path(str(resources.files("rexmle.llm").joinpath(CONFIG_NAME)))


def standin_config_text(port: int) -> str:
    """The shipped config with its base URLs on ``port`` instead of :data:`DEFAULT_PORT`.

    For another port the shipped header comment (which speaks of the default port and of
    ``--config-path``) is replaced by one that says which command wrote the file.
    """
    text = standin_config_path().read_text(encoding="utf-8")
    if port == DEFAULT_PORT:
        return text
    lines = text.splitlines(keepends=True)
    body = [line for line in lines if not line.startswith("#")]
    header = (
        f"# The LLM config of the offline stand-in serving on http://127.0.0.1:{port}, written by\n"
        f"# rexmle llm standin --port {port} --config-out FILE: every model of the built-in\n"
        "# config, answered by the stand-in, with the built-in config's prices and no key.\n"
    )
    moved = "".join(body).replace(f"127.0.0.1:{DEFAULT_PORT}", f"127.0.0.1:{port}")
    return header + moved


def serve(upstream: ScriptedUpstream, on_ready: Callable[[str], None]) -> None:
    """Serve ``upstream`` until SIGTERM or SIGINT; ``on_ready`` gets its base URL once bound."""
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    with upstream:
        on_ready(upstream.base_url)
        done.wait()
