"""The gateway's ASGI guard: request-size limit (declared and chunked) and header filter."""

from __future__ import annotations

import asyncio
from typing import Any

from rexmle.llm.proxy_guard import guarded
from rexmle.llm.relay_watch import CALL_ID_HEADER, Watch

LIMIT = 1000


class Inner:
    """An ASGI app that reads the whole body and answers with LiteLLM-like headers."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.scopes: list[dict[str, Any]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.scopes.append(scope)
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.bodies.append(body)
        headers = [
            (b"content-type", b"application/json"),
            (b"x-litellm-model-name", b"openai/gpt-5"),
            (b"x-litellm-model-id", b"rexmle:gw/gpt-5"),
            (b"llm_provider-x-request-id", b"abc"),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"{}"})


def serve(
    chunks: list[bytes], headers: list[tuple[bytes, bytes]], watch: Watch | None = None
) -> tuple[Inner, list[Any]]:
    """Run one request through the guard; returns the inner app and the messages sent."""
    inner = Inner()
    sent: list[Any] = []
    pending = [
        {"type": "http.request", "body": c, "more_body": i < len(chunks) - 1}
        for i, c in enumerate(chunks)
    ]

    async def receive() -> dict[str, Any]:
        return pending.pop(0) if pending else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/v1/chat/completions", "headers": headers}
    asyncio.run(guarded(inner, LIMIT, watch=watch)(scope, receive, send))
    return inner, sent


def test_a_declared_length_over_the_limit_is_refused_unread():
    inner, sent = serve([b"x" * 10], [(b"content-length", str(LIMIT + 1).encode())])
    assert inner.bodies == []
    assert sent[0]["status"] == 413
    assert b"max_request_mb" in sent[1]["body"]


def test_a_chunked_body_over_the_limit_is_refused_and_one_within_is_passed_whole():
    inner, sent = serve([b"x" * 600, b"y" * 600], [])
    assert inner.bodies == []
    assert sent[0]["status"] == 413
    inner, sent = serve([b"x" * 500, b"y" * 500], [])
    assert inner.bodies == [b"x" * 500 + b"y" * 500]
    assert sent[0]["status"] == 200


def test_deployment_and_upstream_headers_are_dropped():
    _, sent = serve([b"{}"], [(b"content-length", b"2")])
    names = [name for name, _ in sent[0]["headers"]]
    assert names == [b"content-type"]


def test_each_call_gets_the_guards_own_call_id_and_its_relayed_answer_is_kept():
    watch = Watch()
    agents = [(b"content-length", b"2"), (CALL_ID_HEADER, b"same-id")]
    first, _ = serve([b"{}"], agents, watch)
    second, _ = serve([b"{}"], agents, watch)
    ids = [
        [v.decode() for k, v in inner.scopes[0]["headers"] if k == CALL_ID_HEADER]
        for inner in (first, second)
    ]
    assert all(len(found) == 1 and found[0] != "same-id" for found in ids)
    assert ids[0] != ids[1]
    relayed = watch.get(ids[0][0])
    assert relayed is not None
    assert (relayed.status, relayed.body()) == (200, b"{}")
