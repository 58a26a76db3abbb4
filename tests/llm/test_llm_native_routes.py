"""The real LiteLLM gateway's native routes (Anthropic Messages, Gemini generateContent) in front
of the stand-in: served names, metering, refusals in the provider's shape, budget, caps.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from llm_support import call, usage_lines

from rexmle.llm.config import Limits
from rexmle.llm.gateway import Gateway, RunLink
from rexmle.llm.standin import Reply, ToolCall

pytestmark = pytest.mark.slow

STANDIN_KEY = "sk-standin-provider-key-0123456789"  # tests/conftest.py
HELLO = [{"role": "user", "content": "hello"}]
GEMINI_BODY = {"contents": [{"role": "user", "parts": [{"text": "hello"}]}]}
GENERATE = "/v1beta/models/{}:generateContent"
STREAM = "/v1beta/models/{}:streamGenerateContent?alt=sse"


def anthropic(link: RunLink) -> dict[str, str]:
    return {"x-api-key": link.token, "anthropic-version": "2023-06-01"}


def google(link: RunLink) -> dict[str, str]:
    return {"x-goog-api-key": link.token}


@pytest.fixture
def link(llm_gateway: Gateway, tmp_path: Path):
    registered = llm_gateway.register("native-run", tmp_path, limits=Limits(budget_usd=1.0))
    yield registered
    llm_gateway.unregister(registered)


def test_claude_by_its_bare_name_on_messages_is_metered_plain_and_streamed(
    llm_gateway, upstream, link
):
    reply = Reply(text="bonjour", input_tokens=100, cached_tokens=40, output_tokens=20)
    upstream.push(reply, reply)
    body = {"model": "claude", "max_tokens": 64, "messages": HELLO}
    plain = call(llm_gateway, "/v1/messages", body, anthropic(link))
    streamed = call(llm_gateway, "/v1/messages", {**body, "stream": True}, anthropic(link))
    assert plain[0] == 200, plain
    assert json.loads(plain[1])["content"] == [{"type": "text", "text": "bonjour"}]
    assert streamed[0] == 200, streamed
    assert "event: message_stop" in streamed[1]
    sent = upstream.completion_requests()
    assert [r.path for r in sent] == ["/v1/messages"] * 2
    assert {r.body["model"] for r in sent} == {"claude-sonnet-4-5"}
    assert {r.headers["x-api-key"] for r in sent} == {STANDIN_KEY}
    usage = usage_lines(link, 2)
    assert [u["stream"] for u in usage] == [False, True]
    for line in usage:
        assert (line["alias"], line["status"]) == ("gw/claude", "ok")
        assert (line["tokens_in"], line["tokens_cached"], line["tokens_out"]) == (100, 40, 20)
        # 60 * 3 + 40 * 0.3 + 20 * 15 = 492 per 1M
        assert line["cost_usd"] == pytest.approx(492e-6, abs=1e-12)


def test_gemini_generate_content_is_metered_from_usage_metadata(llm_gateway, upstream, link):
    upstream.push(
        Reply(text="hi", input_tokens=1000, cached_tokens=200, output_tokens=300,
              reasoning_tokens=100),
        Reply(tool_calls=(ToolCall("submit_review", {"is_bug": False, "metric": 0.5}),),
              input_tokens=10, output_tokens=5),
    )  # fmt: skip
    first = call(llm_gateway, GENERATE.format("gemini-3-pro"), GEMINI_BODY, google(link))
    second = call(llm_gateway, GENERATE.format("gw/gemini-3-pro"), GEMINI_BODY, google(link))
    assert first[0] == 200, first
    answer = json.loads(first[1])
    assert answer["candidates"][0]["content"]["parts"] == [{"text": "hi"}]
    assert answer["usageMetadata"]["thoughtsTokenCount"] == 100
    assert second[0] == 200, second
    parts = json.loads(second[1])["candidates"][0]["content"]["parts"]
    assert parts[0]["functionCall"] == {
        "name": "submit_review",
        "args": {"is_bug": False, "metric": 0.5},
    }
    sent = upstream.completion_requests()
    assert [r.path for r in sent] == [GENERATE.format("gemini-3-pro-preview")] * 2
    assert {r.headers["x-goog-api-key"] for r in sent} == {STANDIN_KEY}
    thinking, tool = usage_lines(link, 2)
    assert (thinking["alias"], thinking["upstream_model"]) == ("gw/gemini-3-pro",
                                                               "gemini-3-pro-preview")  # fmt: skip
    # output = 200 candidates + 100 thoughts; input 1000 of which 200 cached
    assert (thinking["tokens_in"], thinking["tokens_cached"]) == (1000, 200)
    assert (thinking["tokens_out"], thinking["tokens_reasoning"]) == (300, 100)
    # 800 * 2 + 200 * 0.2 + 300 * 12 = 5240 per 1M
    assert thinking["cost_usd"] == pytest.approx(5240e-6, abs=1e-12)
    # 10 * 2 + 5 * 12 = 80 per 1M
    assert (tool["tokens_in"], tool["tokens_out"]) == (10, 5)
    assert tool["cost_usd"] == pytest.approx(80e-6, abs=1e-12)


def test_gemini_streaming_is_served_as_sse_and_metered(llm_gateway, upstream, link):
    upstream.push(Reply(text="streamed gemini words", input_tokens=40, output_tokens=9))
    status, text = call(llm_gateway, STREAM.format("gemini-3-pro"), GEMINI_BODY, google(link))
    assert status == 200, text
    chunks = [json.loads(x.removeprefix("data: ")) for x in text.split("\n\n") if x.strip()]
    pieces = [c["candidates"][0]["content"]["parts"][0]["text"] for c in chunks]
    assert "".join(pieces) == "streamed gemini words"
    assert "[DONE]" not in text
    (sent,) = upstream.completion_requests()
    assert sent.path == STREAM.format("gemini-3-pro-preview")
    (usage,) = usage_lines(link, 1)
    assert (usage["tokens_in"], usage["tokens_out"], usage["stream"]) == (40, 9, True)
    # 40 * 2 + 9 * 12 = 188 per 1M
    assert usage["cost_usd"] == pytest.approx(188e-6, abs=1e-12)


REFUSED = (
    # (path, body, headers maker, shape check)
    ("/v1/messages", {"model": "gemini-3-pro", "max_tokens": 8, "messages": HELLO}, anthropic),
    ("/v1/messages", {"model": "claude-sonnet-4-5", "max_tokens": 8, "messages": HELLO}, anthropic),
    ("/v1/messages", {"model": "gpt-5", "max_tokens": 8, "messages": HELLO}, anthropic),
    (GENERATE.format("claude"), GEMINI_BODY, google),
    (GENERATE.format("gemini-3-pro-preview"), GEMINI_BODY, google),
    (STREAM.format("gw/unknown"), GEMINI_BODY, google),
    ("/v1/chat/completions", {"model": "claude", "messages": HELLO}, anthropic),
    ("/v1/chat/completions", {"model": "gemini-3-pro", "messages": HELLO}, anthropic),
)


def test_names_outside_a_routes_protocol_are_refused_in_the_providers_shape(
    llm_gateway, upstream, link
):
    for path, body, headers in REFUSED:
        status, text = call(llm_gateway, path, body, headers(link))
        assert status == 400, (path, body, status, text)
        answer = json.loads(text)
        if path == "/v1/messages":
            assert answer["type"] == "error"
            assert answer["error"]["type"] == "invalid_request_error"
            message = answer["error"]["message"]
        elif "generateContent" in path or "streamGenerateContent" in path:
            assert (answer["error"]["code"], answer["error"]["status"]) == (400,
                                                                            "INVALID_ARGUMENT")  # fmt: skip
            message = answer["error"]["message"]
        else:
            message = answer["error"]["message"]
        assert "is not served" in message
        assert "gw/gemini-3-pro" in message  # names what to use
    assert upstream.completion_requests() == []
    refused = usage_lines(link, len(REFUSED))
    assert {x["status"] for x in refused} == {"refused"}
    assert {x["cost_usd"] for x in refused} == {0.0}


def test_unknown_tokens_are_refused_and_the_query_key_is_accepted(llm_gateway, upstream, link):
    bad_gemini = call(llm_gateway, GENERATE.format("gemini-3-pro"), GEMINI_BODY,
                      {"x-goog-api-key": "wrong"})  # fmt: skip
    bad_claude = call(llm_gateway, "/v1/messages",
                      {"model": "claude", "max_tokens": 8, "messages": HELLO},
                      {"x-api-key": "wrong"})  # fmt: skip
    assert bad_gemini[0] == 401
    assert json.loads(bad_gemini[1])["error"]["status"] == "UNAUTHENTICATED"
    assert bad_claude[0] == 401
    assert json.loads(bad_claude[1])["error"]["type"] == "authentication_error"
    counted = call(llm_gateway, "/v1beta/models/gemini-3-pro:countTokens", GEMINI_BODY,
                   google(link))  # fmt: skip
    assert counted[0] == 403  # only the generate routes are served
    assert upstream.completion_requests() == []
    path = GENERATE.format("gemini-3-pro") + f"?key={link.token}"
    assert call(llm_gateway, path, GEMINI_BODY, {})[0] == 200
    assert usage_lines(link, 1)[0]["status"] == "ok"


def test_budget_stops_a_run_on_the_native_routes(llm_gateway, upstream, tmp_path):
    link = llm_gateway.register("native-budget", tmp_path)  # 0.01 USD
    upstream.reset(default=Reply(text="pricey", input_tokens=5000, output_tokens=1))
    # 5000 * 2 + 1 * 12 = 10012 per 1M -> 0.010012 USD: over the 0.01 budget at once
    first = call(llm_gateway, GENERATE.format("gemini-3-pro"), GEMINI_BODY, google(link))
    gemini = call(llm_gateway, GENERATE.format("gemini-3-pro"), GEMINI_BODY, google(link))
    claude = call(llm_gateway, "/v1/messages",
                  {"model": "claude", "max_tokens": 8, "messages": HELLO}, anthropic(link))  # fmt: skip
    assert first[0] == 200
    assert gemini[0] == 403
    assert json.loads(gemini[1])["error"]["status"] == "PERMISSION_DENIED"
    assert "budget of 0.01 USD spent" in json.loads(gemini[1])["error"]["message"]
    assert claude[0] == 403
    assert json.loads(claude[1])["error"]["type"] == "permission_error"
    assert "budget of 0.01 USD spent" in (link.stopped_reason() or "")
    assert len(upstream.completion_requests()) == 1
    totals = link.totals()
    assert (totals.calls, totals.calls_refused) == (3, 2)
    assert totals.cost_usd == pytest.approx(0.010012, abs=1e-12)


def test_rate_and_in_flight_caps_hold_on_the_native_routes(llm_gateway, upstream, tmp_path):
    for name in ("rate", "held"):
        (tmp_path / name).mkdir()
    rate = llm_gateway.register("native-rate", tmp_path / "rate")  # 3 calls per minute
    codes = [
        call(llm_gateway, GENERATE.format("gemini-3-pro"), GEMINI_BODY, google(rate))
        for _ in range(4)
    ]
    assert [c for c, _ in codes] == [200, 200, 200, 429]
    assert json.loads(codes[3][1])["error"]["status"] == "RESOURCE_EXHAUSTED"
    assert "3 calls per minute" in (rate.stopped_reason() or "")
    llm_gateway.unregister(rate)

    delay = 0.5
    held = llm_gateway.register(
        "native-in-flight", tmp_path / "held",
        limits=Limits(budget_usd=10.0, max_calls_per_minute=None, max_calls_in_flight=2),
    )  # fmt: skip
    upstream.reset(default=Reply(text="ok", delay_s=delay))
    statuses = [0] * 6

    def one(index: int) -> None:
        body = {"model": "claude", "max_tokens": 8, "messages": HELLO}
        statuses[index] = call(llm_gateway, "/v1/messages", body, anthropic(held))[0]

    workers = [threading.Thread(target=one, args=(i,)) for i in range(6)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert statuses == [200] * 6  # held back, not refused
    arrivals = sorted(r.received_at for r in upstream.completion_requests())
    overlapping = max(sum(t <= s < t + delay for t in arrivals) for s in arrivals)
    assert overlapping == 2
    assert held.totals().calls == 6


def test_geminis_openai_compatible_route_serves_bare_gemini_names_only(llm_gateway, upstream, link):
    upstream.push(Reply(text="compat", input_tokens=50, output_tokens=10))
    body = {"model": "gemini-3-pro", "messages": HELLO}
    status, text = call(llm_gateway, "/v1beta/openai/chat/completions", body,
                        {"Authorization": f"Bearer {link.token}"})  # fmt: skip
    assert status == 200, text
    assert json.loads(text)["choices"][0]["message"]["content"] == "compat"
    (sent,) = upstream.completion_requests()
    assert sent.path == GENERATE.format("gemini-3-pro-preview")  # Gemini's own API upstream
    # the mark is the guard's alone: sent by a client it is removed, so the name is refused
    forged = {"Authorization": f"Bearer {link.token}", "x-rexmle-native-protocol": "gemini"}
    assert call(llm_gateway, "/v1/chat/completions", body, forged)[0] == 400
    claude = {"model": "claude", "messages": HELLO}
    refused = call(llm_gateway, "/v1beta/openai/chat/completions", claude,
                   {"Authorization": f"Bearer {link.token}"})  # fmt: skip
    assert refused[0] == 400
    ok, forged_line, claude_line = usage_lines(link, 3)
    assert (ok["alias"], ok["tokens_in"], ok["tokens_out"]) == ("gw/gemini-3-pro", 50, 10)
    # 50 * 2 + 10 * 12 = 220 per 1M
    assert ok["cost_usd"] == pytest.approx(220e-6, abs=1e-12)
    assert (forged_line["status"], claude_line["status"]) == ("refused", "refused")
    assert len(upstream.completion_requests()) == 1
