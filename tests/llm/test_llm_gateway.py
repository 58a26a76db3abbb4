"""The real LiteLLM gateway in front of the scripted stand-in: forwarding, usage, cost, limits."""

from __future__ import annotations

import http.client
import json
import time
from pathlib import Path
from typing import Any

import pytest

from rexmle.llm.config import Limits
from rexmle.llm.gateway import Gateway, RunLink
from rexmle.llm.standin import Reply, ToolCall
from rexmle.llm.usage import summarize_usage

pytestmark = pytest.mark.slow

STANDIN_KEY = "sk-standin-provider-key-0123456789"  # tests/conftest.py
CHAT = {"model": "gw/gpt-5", "messages": [{"role": "user", "content": "hello"}]}
CLAUDE = {"model": "gw/claude", "max_tokens": 64, "messages": CHAT["messages"]}


def call(gateway: Gateway, path: str, body: dict[str, Any], headers: dict[str, str]):
    conn = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=60)
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json", **headers})
    response = conn.getresponse()
    text = response.read().decode()
    conn.close()
    return response.status, text


def bearer(link: RunLink) -> dict[str, str]:
    return {"Authorization": f"Bearer {link.token}"}


def lines(link: RunLink, expected: int) -> list[dict[str, Any]]:
    """The run's usage lines once ``expected`` are written (the callback runs after the answer)."""
    deadline = time.monotonic() + 30
    found: list[str] = []
    while time.monotonic() < deadline:
        if link.usage_path.is_file():
            found = link.usage_path.read_text().splitlines()
            if len(found) >= expected:
                break
        time.sleep(0.05)
    assert len(found) == expected, found
    return [json.loads(x) for x in found]


@pytest.fixture
def link(llm_gateway: Gateway, tmp_path: Path):
    registered = llm_gateway.register(
        "test-run", tmp_path, socket_dir=tmp_path, limits=Limits(budget_usd=1.0)
    )
    yield registered
    llm_gateway.unregister(registered)


def test_chat_is_forwarded_with_the_provider_key_and_metered(llm_gateway, upstream, link):
    upstream.push(Reply(text="hi there", input_tokens=1000, cached_tokens=400, output_tokens=200))
    status, text = call(llm_gateway, "/v1/chat/completions", CHAT, bearer(link))
    assert status == 200, text
    assert json.loads(text)["choices"][0]["message"]["content"] == "hi there"
    sent = upstream.completion_requests()[0]
    assert sent.body["model"] == "gpt-5"
    assert sent.headers["authorization"] == f"Bearer {STANDIN_KEY}"
    assert link.token not in json.dumps([sent.headers, sent.body])
    (usage,) = lines(link, 1)
    assert usage["alias"] == "gw/gpt-5"
    assert usage["upstream_model"] == "gpt-5"
    assert (usage["tokens_in"], usage["tokens_cached"], usage["tokens_out"]) == (1000, 400, 200)
    # 600 * 1.25 + 400 * 0.125 + 200 * 10 = 2800 per 1M -> 0.0028 USD
    assert usage["cost_usd"] == pytest.approx(0.0028, abs=1e-12)


def test_streamed_chat_usage_comes_from_the_upstream_usage_chunk(llm_gateway, upstream, link):
    upstream.push(Reply(text="streamed words here", input_tokens=50, output_tokens=7))
    status, text = call(llm_gateway, "/v1/chat/completions", {**CHAT, "stream": True}, bearer(link))
    assert status == 200
    assert "streamed" in text
    assert "[DONE]" in text
    sent = upstream.completion_requests()[0].body
    assert sent["stream"] is True
    assert sent["stream_options"] == {"include_usage": True}  # added by the gateway
    (usage,) = lines(link, 1)
    assert (usage["tokens_in"], usage["tokens_out"], usage["stream"]) == (50, 7, True)


def test_responses_api_plain_and_streamed(llm_gateway, upstream, link):
    reply = Reply(text="resp", input_tokens=30, output_tokens=10, reasoning_tokens=4)
    upstream.push(reply, reply)
    body = {"model": "gw/gpt-5", "input": "say resp"}
    plain = call(llm_gateway, "/v1/responses", body, bearer(link))
    streamed = call(llm_gateway, "/v1/responses", {**body, "stream": True}, bearer(link))
    assert plain[0] == 200
    assert json.loads(plain[1])["output"][0]["content"][0]["text"] == "resp"
    assert streamed[0] == 200
    assert "response.completed" in streamed[1]
    assert [r.path for r in upstream.completion_requests()] == ["/v1/responses"] * 2
    for usage in lines(link, 2):
        assert (usage["tokens_in"], usage["tokens_out"], usage["tokens_reasoning"]) == (30, 10, 4)
        # 30 * 1.25 + 10 * 10 = 137.5 per 1M
        assert usage["cost_usd"] == pytest.approx(137.5e-6, abs=1e-12)


def test_anthropic_messages_plain_and_streamed(llm_gateway, upstream, link):
    reply = Reply(text="bonjour", input_tokens=100, cached_tokens=40, output_tokens=20)
    call_reply = Reply(tool_calls=(ToolCall("submit", {"metric": 0.5}),), input_tokens=100,
                       cached_tokens=40, output_tokens=20)  # fmt: skip
    upstream.push(reply, call_reply)
    headers = {"x-api-key": link.token, "anthropic-version": "2023-06-01"}
    plain = call(llm_gateway, "/v1/messages", CLAUDE, headers)
    streamed = call(llm_gateway, "/v1/messages", {**CLAUDE, "stream": True}, headers)
    assert plain[0] == 200
    assert json.loads(plain[1])["content"][0]["text"] == "bonjour"
    assert streamed[0] == 200
    assert "input_json_delta" in streamed[1]
    assert all(r.headers["x-api-key"] == STANDIN_KEY for r in upstream.completion_requests())
    for usage in lines(link, 2):
        assert (usage["tokens_in"], usage["tokens_cached"], usage["tokens_out"]) == (100, 40, 20)
        # 60 * 3 + 40 * 0.3 + 20 * 15 = 492 per 1M
        assert usage["cost_usd"] == pytest.approx(492e-6, abs=1e-12)


def test_a_system_only_prompt_reaches_anthropic_and_dropped_params_are_logged(
    llm_gateway, upstream, link
):
    body = {"model": "gw/claude", "messages": [{"role": "system", "content": "only rules"}]}
    status, _ = call(llm_gateway, "/v1/chat/completions", body, bearer(link))
    assert status == 200
    assert upstream.completion_requests()[0].body["messages"]  # modify_params added a turn
    status, _ = call(llm_gateway, "/v1/chat/completions", {**CHAT, "temperature": 0.5},
                     bearer(link))  # fmt: skip
    assert status == 200
    assert "temperature" not in upstream.completion_requests()[1].body
    assert lines(link, 2)[1]["dropped_params"] == ["temperature"]


def test_unknown_tokens_and_admin_routes_are_refused(llm_gateway, upstream, link):
    status, text = call(llm_gateway, "/v1/chat/completions", CHAT, {"Authorization": "Bearer x"})
    assert status == 401
    assert "unknown run token" in text
    for route in ("/key/generate", "/config/update", "/model/new", "/user/new"):
        status, text = call(llm_gateway, route, {}, bearer(link))
        assert status in (401, 403), (route, status, text)
    conn = http.client.HTTPConnection("127.0.0.1", llm_gateway.port, timeout=30)
    conn.request("GET", "/model/info", headers=bearer(link))
    answer = conn.getresponse()
    assert answer.status == 403
    assert STANDIN_KEY not in answer.read().decode()
    conn.close()
    assert upstream.completion_requests() == []


def test_a_token_is_refused_once_its_run_is_unregistered(llm_gateway, upstream, tmp_path):
    link = llm_gateway.register("ended", tmp_path, socket_dir=tmp_path)
    assert call(llm_gateway, "/v1/chat/completions", CHAT, bearer(link))[0] == 200
    llm_gateway.unregister(link)
    status, text = call(llm_gateway, "/v1/chat/completions", CHAT, bearer(link))
    assert status == 401
    assert "unknown run token" in text
    assert len(upstream.completion_requests()) == 1


def test_budget_refuses_and_writes_the_stop_reason(llm_gateway, upstream, tmp_path):
    link = llm_gateway.register("budget", tmp_path, socket_dir=tmp_path)  # 0.01 USD
    upstream.reset(default=Reply(text="pricey", input_tokens=10_000, output_tokens=1))
    # 10000 * 1.25 + 1 * 10 = 12510 per 1M -> 0.01251 USD, over the 0.01 budget at once
    first = call(llm_gateway, "/v1/chat/completions", CHAT, bearer(link))
    second = call(llm_gateway, "/v1/chat/completions", CHAT, bearer(link))
    assert first[0] == 200
    assert second[0] == 403
    assert "budget of 0.01 USD spent" in second[1]
    assert "budget of 0.01 USD spent" in (link.stopped_reason() or "")
    assert len(upstream.completion_requests()) == 1
    totals = summarize_usage(link.usage_path, budget_usd=0.01)
    assert (totals.calls, totals.calls_refused) == (2, 1)
    assert totals.cost_usd == pytest.approx(0.01251, abs=1e-12)
    llm_gateway.unregister(link)


@pytest.mark.usefixtures("upstream")
def test_rate_cap_refuses_the_fourth_call_in_a_minute(llm_gateway, tmp_path):
    link = llm_gateway.register("rate", tmp_path, socket_dir=tmp_path)  # 3 calls per minute
    codes = [call(llm_gateway, "/v1/chat/completions", CHAT, bearer(link))[0] for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    assert "3 calls per minute" in (link.stopped_reason() or "")
    llm_gateway.unregister(link)


def test_trajectory_keeps_bodies_without_secrets(llm_gateway, upstream, link):
    upstream.push(Reply(text="the answer"))
    call(llm_gateway, "/v1/chat/completions", CHAT, bearer(link))
    lines(link, 1)
    trajectory = (link.usage_path.parent / "llm_trajectory.jsonl").read_text()
    assert "the answer" in trajectory
    assert "hello" in trajectory
    assert STANDIN_KEY not in trajectory
    assert link.token not in trajectory
    assert STANDIN_KEY not in link.usage_path.read_text()
