"""The ASGI app the gateway serves: LiteLLM's proxy app behind a request-size limit and a
response-header filter (loaded by the proxy, not by the harness).

Copied into the gateway's state folder as ``gateway_guard.py``; uvicorn serves its ``app``:
:func:`guarded` LiteLLM's app, with the limit from the state folder's ``gateway.json`` (built when
uvicorn asks for it, so that the harness can import this module without LiteLLM).

- A request whose body is larger than ``max_request_bytes`` (``gateway.json``) is answered 413
  before LiteLLM reads it: by its ``Content-Length``, or, for a chunked body, once the bytes
  received pass the limit (the body is buffered up to the limit, then handed on whole).
- Response headers naming LiteLLM's deployment, its id, its upstream base URL, its spend or the
  upstream's own headers (``x-litellm-*``, ``llm_provider-*``) are dropped: an agent learns the
  gateway's aliases only.
- WebSocket connections (LiteLLM's realtime routes) are closed unserved.
- Only the served routes reach LiteLLM: the completion and model-list routes
  (``allowed_routes`` of ``gateway.json``), the Gemini generate routes, and
  :data:`HEALTH_ROUTE` (the harness's start-up check). Every other path is answered 403 here,
  so LiteLLM's routes that skip authentication (its UI, SSO, OpenAPI schema, public model hub,
  readiness details) are out of an agent's reach too.
- Gemini's OpenAI-compatible route is served as the chat completions route, marked with
  :data:`rexmle.llm.native_routes.NATIVE_HEADER` (that header is removed from every request
  first, so only the guard sets it).
- On a native route (Anthropic Messages, Gemini) an error answer (a refusal, an upstream error,
  the size limit's 413) is rewritten into that provider's error shape
  (:func:`rexmle.llm.native_routes.reshaped_error`), so the agent's own SDK reads it.
- A call the direct path takes (OpenAI chat completions, :mod:`rexmle.llm.fast_path`; Anthropic
  Messages and Gemini generateContent, :mod:`rexmle.llm.native_fast`) is served there, never
  reaching LiteLLM (the request rewritten from Gemini's OpenAI-compatible route never takes it);
  every other call reaches LiteLLM with its body as it came.
"""

from __future__ import annotations

import gc
import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

if __package__:
    from rexmle.llm import native_routes as native
else:  # loaded from the gateway's state folder
    import gateway_native as native  # type: ignore[no-redef]

Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[dict[str, Any], Receive, Send], Awaitable[None]]

HIDDEN_HEADER_PREFIXES = (b"x-litellm-", b"llm_provider-")
HEALTH_ROUTE = "/health/liveliness"
POLICY_VIOLATION = 1008


def _content_length(scope: dict[str, Any]) -> int | None:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _too_large(send: Send, max_bytes: int) -> None:
    message = (
        f"rexmle gateway: the request body is over {max_bytes} bytes "
        "(the LLM config's max_request_mb)"
    )
    body = json.dumps(
        {"error": {"message": message, "type": "request_too_large", "code": "413"}}
    ).encode("utf-8")
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode("ascii")),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _not_served(send: Send, path: str) -> None:
    message = f"rexmle gateway: route {path[:200]} is not served; use the completion routes"
    body = json.dumps({"error": {"message": message, "type": "auth_error", "code": "403"}})
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode("ascii")),
    ]
    await send({"type": "http.response.start", "status": 403, "headers": headers})
    await send({"type": "http.response.body", "body": body.encode("utf-8")})


def _served(path: str, routes: frozenset[str]) -> bool:
    bare = path.rstrip("/") or "/"
    return bare in routes or bare == HEALTH_ROUTE or native.is_gemini_route(bare)


def _filtered(send: Send) -> Send:
    async def send_filtered(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [
                (name, value)
                for name, value in message.get("headers", ())
                if not name.lower().startswith(HIDDEN_HEADER_PREFIXES)
            ]
            message = {**message, "headers": headers}
        await send(message)

    return send_filtered


async def _buffered(receive: Receive, max_bytes: int) -> Receive | None:
    """A receive that replays the whole chunked body, or None when it passes the limit."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > max_bytes:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        return await receive()

    return replay


def _provider_errors(send: Send, protocol: native.Protocol) -> Send:
    """``send`` that rewrites an error answer (status >= 400) into ``protocol``'s shape."""
    held: list[Message] = []
    chunks: list[bytes] = []

    async def send_shaped(message: Message) -> None:
        if message["type"] == "http.response.start" and message["status"] >= 400:
            held.append(message)
            return
        if not held or message["type"] != "http.response.body":
            await send(message)
            return
        chunks.append(message.get("body", b""))
        if message.get("more_body", False):
            return
        start = held.pop()
        body = native.reshaped_error(protocol, int(start["status"]), b"".join(chunks))
        chunks.clear()
        headers = [
            (name, value)
            for name, value in start.get("headers", ())
            if name.lower() not in (b"content-length", b"content-type")
        ]
        headers += [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode("ascii")),
        ]
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return send_shaped


NATIVE_HEADER = native.NATIVE_HEADER.encode("ascii")


def _native_scope(scope: dict[str, Any]) -> dict[str, Any]:
    """``scope`` without an incoming native mark; Gemini's OpenAI-compatible route rewritten."""
    headers = [(k, v) for k, v in scope.get("headers", ()) if k.lower() != NATIVE_HEADER]
    path = str(scope.get("path", "")).rstrip("/")
    if path != native.GEMINI_OPENAI_ROUTE:
        return {**scope, "headers": headers}
    route = native.OPENAI_CHAT_ROUTE
    headers.append((NATIVE_HEADER, b"gemini"))
    return {**scope, "path": route, "raw_path": route.encode("ascii"), "headers": headers}


class Direct(Protocol):
    """A path that serves some calls without ``inner`` (:mod:`rexmle.llm.fast_path`,
    :mod:`rexmle.llm.native_fast`).
    """

    def accepts(self, scope: dict[str, Any]) -> bool:
        """Whether the request might be served directly (its body decides)."""
        ...

    async def serve(self, scope: dict[str, Any], raw: bytes, send: Send) -> bool:
        """Serve the call and return True, or return False for ``inner`` to serve it."""
        ...


def _replay(raw: bytes, receive: Receive) -> Receive:
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": raw, "more_body": False}
        return await receive()

    return replay


def guarded(
    inner: App,
    max_request_bytes: int,
    direct: Direct | None = None,
    routes: frozenset[str] | None = None,
) -> App:
    """``inner`` behind the size limit and the header filter (see the module docstring); a
    call ``direct`` serves does not reach ``inner``; ``routes``: the served routes besides the
    Gemini and health ones (None: no route filter).
    """

    async def guard(scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await receive()
            await send({"type": "websocket.close", "code": POLICY_VIOLATION})
            return
        if scope["type"] != "http":
            await inner(scope, receive, send)
            return
        scope = _native_scope(scope)
        path = str(scope.get("path", ""))
        protocol = native.protocol_of(path)
        if protocol != "openai":
            send = _provider_errors(send, protocol)
        if routes is not None and not _served(path, routes):
            await _not_served(send, path)
            return
        length = _content_length(scope)
        if length is not None and length > max_request_bytes:
            await _too_large(send, max_request_bytes)
            return
        if length is None and scope.get("method") not in ("GET", "HEAD"):
            replay = await _buffered(receive, max_request_bytes)
            if replay is None:
                await _too_large(send, max_request_bytes)
                return
            receive = replay
        marked = any(k.lower() == NATIVE_HEADER for k, _ in scope.get("headers", ()))
        if direct is not None and not marked and direct.accepts(scope):
            whole = await _buffered(receive, max_request_bytes)
            if whole is None:
                await _too_large(send, max_request_bytes)
                return
            raw = (await whole())["body"]
            if await direct.serve(scope, raw, send):
                return
            receive = _replay(raw, receive)
        await inner(scope, receive, _filtered(send))

    return guard


def __getattr__(name: str) -> Any:
    """``app``: LiteLLM's proxy app, guarded with the state folder's limit; the garbage
    collector, off while LiteLLM was imported (:mod:`rexmle.llm.proxy_launch`), is on again
    from here, the objects made so far frozen (never scanned again).
    """
    if name != "app":
        raise AttributeError(name)
    from litellm.proxy.proxy_server import app as litellm_app

    state = Path(os.environ["REXMLE_GATEWAY_STATE"])
    settings = json.loads((state / "gateway.json").read_text(encoding="utf-8"))
    direct = None
    if settings.get("fast_models"):
        import gateway_fast
        import proxy_hook

        direct = gateway_fast.FastPath(settings, proxy_hook, float(settings["hold_max_s"]))
    routes = frozenset(str(route) for route in settings["allowed_routes"])
    guarded_app = guarded(litellm_app, int(settings["max_request_bytes"]), direct, routes)
    globals()["app"] = guarded_app
    gc.freeze()
    gc.enable()
    return guarded_app
