"""The native routes' logic without LiteLLM: which names a route serves, Gemini usage and cost,
the Gemini estimate, provider-shaped errors (also through the guard's ASGI wrapper).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from rexmle.llm import metering, native_routes
from rexmle.llm.config import parse_llm_config
from rexmle.llm.proxy_config import hook_settings
from rexmle.llm.proxy_guard import guarded

CONFIG = parse_llm_config(
    """
providers:
  o: {api: openai, base_url: "http://127.0.0.1:1/v1"}
  a: {api: anthropic, base_url: "http://127.0.0.1:1"}
  g: {api: gemini, base_url: "http://127.0.0.1:1/v1beta"}
models:
  gpt-5: {provider: o, upstream: gpt-5, price: {input: 1.25, cached_input: 0.125, output: 10}}
  claude-sonnet-4-5: {provider: a, upstream: claude-sonnet-4-5-20250929,
                      price: {input: 3, cached_input: 0.3, output: 15}}
  gemini-3-pro: {provider: g, upstream: gemini-3-pro-preview,
                 price: {input: 2, cached_input: 0.2, output: 12}}
""",
    "test",
)
ALIASES = frozenset(CONFIG.aliases())
TABLE = hook_settings(CONFIG, sorted(ALIASES))["native_names"]


def test_the_native_names_are_the_bare_names_of_each_protocols_models():
    assert TABLE == {
        "anthropic": {"claude-sonnet-4-5": "gw/claude-sonnet-4-5"},
        "gemini": {"gemini-3-pro": "gw/gemini-3-pro"},
    }


@pytest.mark.parametrize(
    ("route", "protocol"),
    [
        ("/v1/messages", "anthropic"),
        ("/messages", "anthropic"),
        ("/v1beta/models/gemini-3-pro:generateContent", "gemini"),
        ("/v1beta/models/gw/gemini-3-pro:streamGenerateContent?alt=sse", "gemini"),
        ("/models/gemini-3-pro:generateContent", "gemini"),
        ("/v1beta/models/gemini-3-pro:countTokens", "openai"),
        ("/v1/chat/completions", "openai"),
        ("/v1/messages/count_tokens", "openai"),
    ],
)
def test_protocol_of_a_route(route, protocol):
    assert native_routes.protocol_of(route) == protocol


@pytest.mark.parametrize(
    ("model", "protocol", "served"),
    [
        ("gw/gpt-5", "anthropic", "gw/gpt-5"),  # aliases everywhere
        ("claude-sonnet-4-5", "anthropic", "gw/claude-sonnet-4-5"),
        ("claude-sonnet-4-5", "openai", None),  # bare names only on their native route
        ("claude-sonnet-4-5", "gemini", None),
        ("gemini-3-pro", "gemini", "gw/gemini-3-pro"),
        ("gemini-3-pro", "anthropic", None),
        ("gpt-5", "anthropic", None),  # an OpenAI model has no native route
        ("claude-sonnet-4-5-20250929", "anthropic", None),  # the upstream name is not served
        ("rexmle:gw/gpt-5", "openai", None),  # nor a deployment id
        (None, "anthropic", None),
        (["gw/gpt-5"], "openai", None),
    ],
)
def test_which_names_are_served_and_charged_as_which_alias(model, protocol, served):
    assert native_routes.served_alias(model, protocol, ALIASES, TABLE) == served


def request(url: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    return {"proxy_server_request": {"url": url, "headers": headers or {}}}


def test_the_protocol_of_a_call_comes_from_its_request():
    assert native_routes.request_protocol(request("http://127.0.0.1:9/v1/messages")) == (
        "anthropic"
    )
    gemini = "http://127.0.0.1:9/v1beta/models/gemini-3-pro:generateContent?key=x"
    assert native_routes.request_protocol(request(gemini)) == "gemini"
    marked = request("http://h/v1/chat/completions", {"X-Rexmle-Native-Protocol": "gemini"})
    assert native_routes.request_protocol(marked) == "gemini"
    assert native_routes.request_protocol(request("http://h/v1/chat/completions")) == "openai"
    assert native_routes.request_protocol({}) == "openai"


def test_gemini_usage_counts_thoughts_as_output_and_prices_like_the_other_routes():
    response = {
        "usageMetadata": {
            "promptTokenCount": 1000,
            "cachedContentTokenCount": 200,
            "candidatesTokenCount": 200,
            "thoughtsTokenCount": 100,
        }
    }
    tokens_in, tokens_out, cached, reasoning = native_routes.gemini_usage(response)
    assert (tokens_in, tokens_out, cached, reasoning) == (1000, 300, 200, 100)
    price = metering.Price(input=2.0, cached_input=0.2, output=12.0)
    cost = metering.cost_usd(price, tokens_in=tokens_in, tokens_cached=cached,
                             tokens_out=tokens_out)  # fmt: skip
    # 800 * 2 + 200 * 0.2 + 300 * 12 = 5240 per 1M
    assert cost == pytest.approx(5240e-6, abs=1e-15)
    assert native_routes.gemini_usage({"candidates": []}) is None


def test_the_gemini_estimate_reads_its_prompt_and_output_limit():
    body = {
        "contents": [{"role": "user", "parts": [{"text": "x" * 396}]}],
        "systemInstruction": {"parts": [{"text": "y" * 100}]},
        "generationConfig": {"maxOutputTokens": 50},
    }
    view = native_routes.estimate_view(body)
    assert view["max_tokens"] == 50
    price = metering.Price(input=2.0, cached_input=0.2, output=12.0)
    chars = metering.text_chars(view["contents"]) + metering.text_chars(view["system"])
    # role/user/parts/text keys and values: 4 + 4 + 5 + 4 + 396 and parts/text + 100
    assert chars == 413 + 109
    # ceil(522 / 4) = 131 input tokens * 2 + 50 output tokens * 12 = 862 per 1M
    assert metering.estimate_usd(price, view, 4096) == pytest.approx(862e-6, abs=1e-15)
    chat = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 5}
    assert native_routes.estimate_view(chat) is chat


@pytest.mark.parametrize(
    ("protocol", "status", "expected"),
    [
        ("anthropic", 400, {"type": "error",
                            "error": {"type": "invalid_request_error", "message": "m"}}),
        ("anthropic", 403, {"type": "error", "error": {"type": "permission_error", "message": "m"}}),
        ("anthropic", 429, {"type": "error", "error": {"type": "rate_limit_error", "message": "m"}}),
        ("gemini", 401, {"error": {"code": 401, "message": "m", "status": "UNAUTHENTICATED"}}),
        ("gemini", 429, {"error": {"code": 429, "message": "m", "status": "RESOURCE_EXHAUSTED"}}),
        ("gemini", 502, {"error": {"code": 502, "message": "m", "status": "INTERNAL"}}),
    ],
)  # fmt: skip
def test_refusals_take_the_providers_error_shape(protocol, status, expected):
    litellm_shape = {"error": {"message": "m", "type": "auth_error", "param": None, "code": "x"}}
    for raw in (json.dumps(litellm_shape), json.dumps({"detail": "m"}), "m"):
        reshaped = native_routes.reshaped_error(protocol, status, raw.encode())
        assert json.loads(reshaped) == expected
    shaped = json.dumps(expected).encode()
    assert native_routes.reshaped_error(protocol, status, shaped) == shaped


def serve(app, path: str, body: bytes = b"{}", headers=()) -> tuple[int, dict, bytes]:
    """(status, headers, body) of one request through ``app``."""
    sent: list[dict] = []
    messages = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive():
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": path, "headers": list(headers)}
    asyncio.run(app(scope, receive, send))
    start = sent[0]
    return start["status"], dict(start["headers"]), b"".join(m.get("body", b"") for m in sent[1:])


def inner_app(status: int, payload: bytes, seen: list[dict]):
    async def app(scope, receive, send):
        seen.append(scope)
        await receive()
        headers = [(b"content-type", b"application/json"),
                   (b"content-length", str(len(payload)).encode())]  # fmt: skip
        await send({"type": "http.response.start", "status": status, "headers": headers})
        half = len(payload) // 2
        await send({"type": "http.response.body", "body": payload[:half], "more_body": True})
        await send({"type": "http.response.body", "body": payload[half:]})

    return app


def test_the_guard_reshapes_errors_on_native_routes_only():
    litellm_error = json.dumps({"error": {"message": "budget spent", "code": "403"}}).encode()
    seen: list[dict] = []
    app = guarded(inner_app(403, litellm_error, seen), 1 << 20)
    (
        status,
        headers,
        body,
    ) = serve(app, "/v1/messages")
    assert status == 403
    assert json.loads(body) == {"type": "error",
                                "error": {"type": "permission_error", "message": "budget spent"}}  # fmt: skip
    assert headers[b"content-length"] == str(len(body)).encode()
    _, _, body = serve(app, "/v1beta/models/gemini-3-pro:generateContent")
    assert json.loads(body)["error"]["status"] == "PERMISSION_DENIED"
    _, _, body = serve(app, "/v1/chat/completions")
    assert body == litellm_error  # the OpenAI routes keep LiteLLM's shape
    ok = guarded(inner_app(200, b'{"ok": 1}', seen), 1 << 20)
    assert serve(ok, "/v1/messages")[2] == b'{"ok": 1}'
    too_large = serve(app, "/v1/messages", body=b"x" * 64, headers=[(b"content-length", b"64")])
    small = guarded(inner_app(200, b"{}", seen), 16)
    status, _, body = serve(small, "/v1/messages", b"x" * 64, [(b"content-length", b"64")])
    assert too_large[0] == 403
    assert status == 413
    assert json.loads(body)["error"]["type"] == "request_too_large"


def test_the_guard_alone_marks_geminis_openai_compatible_route():
    seen: list[dict] = []
    app = guarded(inner_app(200, b"{}", seen), 1 << 20)
    forged = [(b"x-rexmle-native-protocol", b"gemini")]
    serve(app, "/v1/chat/completions", headers=forged)
    serve(app, "/v1beta/openai/chat/completions", headers=forged)
    plain, rewritten = seen
    assert plain["path"] == "/v1/chat/completions"
    assert (b"x-rexmle-native-protocol", b"gemini") not in plain["headers"]
    assert rewritten["path"] == "/v1/chat/completions"
    assert rewritten["headers"].count((b"x-rexmle-native-protocol", b"gemini")) == 1
