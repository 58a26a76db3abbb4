"""The real LiteLLM gateway in front of the scripted stand-in: forwarding, usage, cost, limits."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from llm_support import call, usage_lines

from rexmle.llm.config import Limits
from rexmle.llm.fast_path import USER_AGENT
from rexmle.llm.gateway import Gateway, RunLink
from rexmle.llm.standin import Reply, ToolCall
from rexmle.llm.usage import summarize_usage

pytestmark = pytest.mark.slow

STANDIN_KEY = "sk-standin-provider-key-0123456789"  # tests/conftest.py
CHAT = {"model": "gw/gpt-5", "messages": [{"role": "user", "content": "hello"}]}
CLAUDE = {"model": "gw/claude", "max_tokens": 64, "messages": CHAT["messages"]}


def assert_served_by_the_right_path(gateway: Gateway, upstream: Any, calls: int) -> None:
    """The first ``calls`` chat completions reached the stand-in from the gateway's direct
    path when it has one, else from LiteLLM.
    """
    sent = [r for r in upstream.completion_requests() if r.path == "/v1/chat/completions"]
    agents = [r.headers.get("user-agent") == USER_AGENT for r in sent[:calls]]
    assert agents == [gateway.direct_path] * calls


def bearer(link: RunLink) -> dict[str, str]:
    return {"Authorization": f"Bearer {link.token}"}


@pytest.fixture
def link(llm_gateway: Gateway, tmp_path: Path):
    registered = llm_gateway.register("test-run", tmp_path, limits=Limits(budget_usd=1.0))
    yield registered
    llm_gateway.unregister(registered)


def test_chat_is_forwarded_with_the_provider_key_and_metered(llm_gateway, upstream, link):
    upstream.push(Reply(text="hi there", input_tokens=1000, cached_tokens=400, output_tokens=200))
    status, text = call(llm_gateway, "/v1/chat/completions", CHAT, bearer(link))
    assert status == 200, text
    assert json.loads(text)["choices"][0]["message"]["content"] == "hi there"
    assert_served_by_the_right_path(llm_gateway, upstream, 1)
    sent = upstream.completion_requests()[0]
    assert sent.body["model"] == "gpt-5"
    assert sent.headers["authorization"] == f"Bearer {STANDIN_KEY}"
    assert link.token not in json.dumps([sent.headers, sent.body])
    (usage,) = usage_lines(link, 1)
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
    assert_served_by_the_right_path(llm_gateway, upstream, 1)
    sent = upstream.completion_requests()[0].body
    assert sent["stream"] is True
    assert sent["stream_options"] == {"include_usage": True}  # added by the gateway
    (usage,) = usage_lines(link, 1)
    assert (usage["tokens_in"], usage["tokens_out"], usage["stream"]) == (50, 7, True)


def chunks_of(text: str) -> list[dict[str, Any]]:
    """The JSON events of an SSE answer."""
    events = [x.removeprefix("data:").strip() for x in text.split("\n") if x.startswith("data:")]
    return [json.loads(x) for x in events if x != "[DONE]"]


def test_the_usage_chunk_reaches_only_an_agent_that_asked_for_it(llm_gateway, upstream, link):
    reply = Reply(text="counted words", input_tokens=20, output_tokens=3)
    upstream.push(reply, reply)
    streamed = {**CHAT, "stream": True}
    _, unasked = call(llm_gateway, "/v1/chat/completions", streamed, bearer(link))
    asked_body = {**streamed, "stream_options": {"include_usage": True}}
    _, asked = call(llm_gateway, "/v1/chat/completions", asked_body, bearer(link))
    assert_served_by_the_right_path(llm_gateway, upstream, 2)
    assert all(chunk["choices"] for chunk in chunks_of(unasked))
    usage = [chunk["usage"] for chunk in chunks_of(asked) if chunk.get("usage")]
    assert [(u["prompt_tokens"], u["completion_tokens"]) for u in usage] == [(20, 3)]
    assert [(x["tokens_in"], x["tokens_out"]) for x in usage_lines(link, 2)] == [(20, 3)] * 2


def test_a_streamed_tool_call_is_kept_whole_in_the_trajectory(llm_gateway, upstream, link):
    upstream.push(Reply(tool_calls=(ToolCall("submit", {"metric": 0.75}),), output_tokens=9))
    status, text = call(llm_gateway, "/v1/chat/completions", {**CHAT, "stream": True}, bearer(link))
    assert status == 200, text
    assert_served_by_the_right_path(llm_gateway, upstream, 1)
    assert usage_lines(link, 1)[0]["tokens_out"] == 9
    entry = json.loads((link.usage_path.parent / "llm_trajectory.jsonl").read_text())
    (choice,) = entry["response"]["choices"]
    (tool_call,) = choice["message"]["tool_calls"]
    assert tool_call["function"]["name"] == "submit"
    assert json.loads(tool_call["function"]["arguments"]) == {"metric": 0.75}
    assert entry["request"]["messages"] == CHAT["messages"]


def test_an_upstream_error_is_answered_with_its_status_and_logged_uncharged(
    llm_gateway, upstream, link
):
    upstream.push(Reply(status=429, error="slow down"), Reply(status=500, error="it broke"))
    limited = call(llm_gateway, "/v1/chat/completions", CHAT, bearer(link))
    broken = call(llm_gateway, "/v1/chat/completions", {**CHAT, "stream": True}, bearer(link))
    assert_served_by_the_right_path(llm_gateway, upstream, 2)
    assert limited[0] == 429, limited
    assert "slow down" in limited[1]
    assert broken[0] == 500, broken
    assert "it broke" in broken[1]
    found = usage_lines(link, 2)
    assert [x["status"] for x in found] == ["error", "error"]
    assert [x["cost_usd"] for x in found] == [0.0, 0.0]
    assert "slow down" in found[0]["error"]
    assert link.totals().calls_unfinished == 0


def test_parameters_litellm_maps_for_the_model_are_mapped_and_logged(llm_gateway, upstream, link):
    body = {**CHAT, "temperature": 0.2, "max_tokens": 50, "seed": 7}
    status, text = call(llm_gateway, "/v1/chat/completions", body, bearer(link))
    assert status == 200, text
    sent = upstream.completion_requests()[0]
    # gpt-5 takes max_completion_tokens and no temperature: LiteLLM's mapping, on both paths
    assert (sent.body.get("max_completion_tokens"), sent.body.get("seed")) == (50, 7)
    assert "temperature" not in sent.body
    assert "max_tokens" not in sent.body
    assert sent.headers.get("user-agent") != USER_AGENT
    assert "temperature" in usage_lines(link, 1)[0]["dropped_params"]


def test_a_value_litellm_forwards_unchanged_takes_the_direct_path(llm_gateway, upstream, link):
    # gpt-5's temperature: LiteLLM sends 1 and 1.0 as they are and drops any other value, so
    # the direct path takes exactly those (True is not 1: LiteLLM decides that one)
    for value in (1.0, 1, True, 0.5):
        status, text = call(
            llm_gateway, "/v1/chat/completions", {**CHAT, "temperature": value}, bearer(link)
        )
        assert status == 200, text
    sent = upstream.completion_requests()
    direct = [r.headers.get("user-agent") == USER_AGENT for r in sent]
    assert direct == [llm_gateway.direct_path] * 2 + [False] * 2
    assert [type(r.body.get("temperature")) for r in sent[:2]] == [float, int]
    assert "temperature" not in sent[3].body
    lines = usage_lines(link, 4)
    assert [x["dropped_params"] for x in lines[:2]] == [[], []]


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
    for usage in usage_lines(link, 2):
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
    for usage in usage_lines(link, 2):
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
    assert usage_lines(link, 2)[1]["dropped_params"] == ["temperature"]


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


def test_routes_litellm_serves_without_authentication_are_refused_too(llm_gateway, link):
    # its UI, SSO page, OpenAPI schema, model hub and readiness details skip the auth function
    public = ("/openapi.json", "/sso/key/generate", "/public/providers", "/public/model_hub",
              "/.well-known/litellm-ui-config", "/get_image", "/health/readiness", "/ui/")  # fmt: skip
    for headers in ({}, bearer(link)):
        for route in public:
            conn = http.client.HTTPConnection("127.0.0.1", llm_gateway.port, timeout=30)
            conn.request("GET", route, headers=headers)
            answer = conn.getresponse()
            text = answer.read().decode(errors="replace")
            conn.close()
            assert answer.status == 403, (route, answer.status, text[:200])
            assert f"route {route} is not served" in text
    conn = http.client.HTTPConnection("127.0.0.1", llm_gateway.port, timeout=30)
    conn.request("GET", "/health/liveliness")  # the harness's start-up check still answers
    assert conn.getresponse().status == 200
    conn.close()


def test_a_token_is_refused_once_its_run_is_unregistered(llm_gateway, upstream, tmp_path):
    link = llm_gateway.register("ended", tmp_path)
    assert call(llm_gateway, "/v1/chat/completions", CHAT, bearer(link))[0] == 200
    llm_gateway.unregister(link)
    status, text = call(llm_gateway, "/v1/chat/completions", CHAT, bearer(link))
    assert status == 401
    assert "unknown run token" in text
    assert len(upstream.completion_requests()) == 1


def test_budget_refuses_and_writes_the_stop_reason(llm_gateway, upstream, tmp_path):
    link = llm_gateway.register("budget", tmp_path)  # 0.01 USD
    upstream.reset(default=Reply(text="pricey", input_tokens=10_000, output_tokens=1))
    # 10000 * 1.25 + 1 * 10 = 12510 per 1M -> 0.01251 USD, over the 0.01 budget at once
    first = call(llm_gateway, "/v1/chat/completions", CHAT, bearer(link))
    second = call(llm_gateway, "/v1/chat/completions", CHAT, bearer(link))
    assert first[0] == 200
    assert_served_by_the_right_path(llm_gateway, upstream, 1)
    assert second[0] == 403
    assert "budget of 0.01 USD spent" in second[1]
    assert "budget of 0.01 USD spent" in (link.stopped_reason() or "")
    assert len(upstream.completion_requests()) == 1
    totals = summarize_usage(link.usage_path, budget_usd=0.01)
    assert (totals.calls, totals.calls_refused) == (2, 1)
    assert totals.cost_usd == pytest.approx(0.01251, abs=1e-12)
    llm_gateway.unregister(link)


def test_rate_cap_refuses_the_fourth_call_in_a_minute(llm_gateway, upstream, tmp_path):
    link = llm_gateway.register("rate", tmp_path)  # 3 calls per minute
    codes = [call(llm_gateway, "/v1/chat/completions", CHAT, bearer(link))[0] for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    assert_served_by_the_right_path(llm_gateway, upstream, 3)
    assert len(upstream.completion_requests()) == 3
    assert "3 calls per minute" in (link.stopped_reason() or "")
    llm_gateway.unregister(link)


def test_trajectory_keeps_bodies_without_secrets(llm_gateway, upstream, link):
    upstream.push(Reply(text="the answer"))
    call(llm_gateway, "/v1/chat/completions", CHAT, bearer(link))
    usage_lines(link, 1)
    assert_served_by_the_right_path(llm_gateway, upstream, 1)
    trajectory = (link.usage_path.parent / "llm_trajectory.jsonl").read_text()
    assert "the answer" in trajectory
    assert "hello" in trajectory
    assert STANDIN_KEY not in trajectory
    assert link.token not in trajectory
    assert STANDIN_KEY not in link.usage_path.read_text()


def answer_of(gateway: Gateway, path: str, body: dict[str, Any], headers: dict[str, str]):
    """(status, headers in lower case, body text) of one call."""
    conn = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=60)
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json", **headers})
    response = conn.getresponse()
    text = response.read().decode()
    found = {k.lower(): v for k, v in response.getheaders()}
    conn.close()
    return response.status, found, text


ROUTE_BODIES = {
    "/v1/chat/completions": {"messages": CHAT["messages"]},
    "/v1/completions": {"prompt": "hello"},
    "/v1/responses": {"input": "hello"},
    "/v1/messages": {"max_tokens": 16, "messages": CHAT["messages"]},
    "/v1/embeddings": {"input": "hello"},
}
DEPLOYMENT_NAMES = (
    "openai/gpt-5",
    "gpt-5",
    "anthropic/claude-sonnet-4-5",
    "claude-sonnet-4-5",
    "rexmle:gw/gpt-5",
    "gw/unknown",
)


def test_only_configured_aliases_are_served_on_every_route(llm_gateway, upstream, link):
    headers = {**bearer(link), "x-api-key": link.token, "anthropic-version": "2023-06-01"}
    for route, body in ROUTE_BODIES.items():
        for model in DEPLOYMENT_NAMES:
            status, _, text = answer_of(llm_gateway, route, {**body, "model": model}, headers)
            assert status == 400, (route, model, status, text)
            assert "is not served" in text
            assert "gw/gpt-5" in text  # names what to use
    assert upstream.completion_requests() == []
    assert [r for r in upstream.requests if r.method == "POST"] == []
    refused = usage_lines(link, len(ROUTE_BODIES) * len(DEPLOYMENT_NAMES))
    assert {x["status"] for x in refused} == {"refused"}
    assert {x["cost_usd"] for x in refused} == {0.0}
    assert {x["alias"] for x in refused} == set(DEPLOYMENT_NAMES)


def test_answers_name_no_deployment_and_calls_are_charged_by_it(llm_gateway, upstream, link):
    upstream.push(Reply(text="hi", input_tokens=1000, output_tokens=100))
    status, headers, text = answer_of(llm_gateway, "/v1/chat/completions", CHAT, bearer(link))
    assert status == 200, text
    assert_served_by_the_right_path(llm_gateway, upstream, 1)
    leaked = [k for k in headers if k.startswith(("x-litellm-", "llm_provider-"))]
    assert leaked == []
    assert "openai/gpt-5" not in json.dumps(headers)
    assert "rexmle:" not in json.dumps(headers)
    status, headers, _ = answer_of(
        llm_gateway, "/v1/embeddings", {"model": "gw/gpt-5", "input": "four words of text"},
        bearer(link),
    )  # fmt: skip
    assert status == 200
    assert [k for k in headers if k.startswith("x-litellm-")] == []
    chat, embedding = usage_lines(link, 2)
    # 1000 * 1.25 + 100 * 10 = 2250 per 1M; the embedding: 4 words * 1.25 per 1M
    assert (chat["alias"], chat["cost_usd"]) == ("gw/gpt-5", pytest.approx(2250e-6, abs=1e-12))
    assert (embedding["alias"], embedding["cost_usd"]) == ("gw/gpt-5", pytest.approx(5e-6))


def parallel_calls(gateway: Gateway, link: RunLink, body: dict[str, Any], n: int) -> list[int]:
    """The statuses of ``n`` calls sent at once."""
    statuses: list[int] = [0] * n

    def one(index: int) -> None:
        statuses[index] = call(gateway, "/v1/chat/completions", body, bearer(link))[0]

    workers = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    return statuses


LONG_PROMPT = {
    "model": "gw/gpt-5",
    "max_completion_tokens": 10,
    "messages": [{"role": "user", "content": "word " * 8000}],
}
"""8000 words (the stand-in counts 8000 input tokens; the gateway estimates 10000)."""
CALL_USD = (8000 * 1.25 + 1 * 10.0) / 1e6
"""What one LONG_PROMPT call answered "ok" (1 output token) costs."""


def test_forty_parallel_calls_stay_within_the_budget(llm_gateway, upstream, tmp_path):
    budget = 0.05  # room for 4.99 calls
    link = llm_gateway.register(
        "parallel", tmp_path,
        limits=Limits(budget_usd=budget, max_calls_per_minute=None),
    )  # fmt: skip
    upstream.reset(default=Reply(text="ok", delay_s=0.5))
    statuses = parallel_calls(llm_gateway, link, LONG_PROMPT, 40)
    totals = link.totals()
    reached = len(upstream.completion_requests())
    assert_served_by_the_right_path(llm_gateway, upstream, reached)
    # the bound: the estimates cover the calls, so only the last call may cross the budget
    assert reached == 5
    assert budget <= totals.cost_usd < budget + CALL_USD
    assert statuses.count(200) == reached
    assert set(statuses) <= {200, 403}
    assert totals.calls == 40  # every call is in the usage log, answered or refused
    assert totals.calls - totals.calls_refused == reached
    assert totals.calls_unfinished == 0
    assert totals.cost_usd == pytest.approx(reached * CALL_USD, abs=1e-12)
    assert "budget of 0.05 USD spent" in (link.stopped_reason() or "")


def test_calls_in_flight_per_run_are_capped(llm_gateway, upstream, tmp_path):
    delay = 0.6
    link = llm_gateway.register(
        "in-flight", tmp_path,
        limits=Limits(budget_usd=100.0, max_calls_per_minute=None, max_calls_in_flight=4),
    )  # fmt: skip
    upstream.reset(default=Reply(text="ok", delay_s=delay))
    statuses = parallel_calls(llm_gateway, link, CHAT, 12)
    assert statuses == [200] * 12  # held back, not refused
    assert_served_by_the_right_path(llm_gateway, upstream, 1)
    arrivals = sorted(r.received_at for r in upstream.completion_requests())
    overlapping = max(sum(t <= s < t + delay for t in arrivals) for s in arrivals)
    assert overlapping == 4
    assert link.totals().calls == 12


def test_calls_finishing_after_the_run_ends_are_in_its_totals(llm_gateway, upstream, tmp_path):
    link = llm_gateway.register("late", tmp_path, limits=Limits(budget_usd=1.0))
    upstream.reset(default=Reply(text="late", input_tokens=1000, output_tokens=1, delay_s=2.0))
    worker = threading.Thread(target=parallel_calls, args=(llm_gateway, link, CHAT, 3))
    worker.start()
    deadline = time.monotonic() + 30
    while len(upstream.completion_requests()) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    totals = link.totals()  # the run ends while its 3 calls are in flight
    worker.join()
    assert_served_by_the_right_path(llm_gateway, upstream, 3)
    assert totals.calls == 3
    assert totals.cost_usd == pytest.approx(3 * (1000 * 1.25 + 10.0) / 1e6, abs=1e-12)
    assert totals.calls_unfinished == 0
    status, _ = call(llm_gateway, "/v1/chat/completions", CHAT, bearer(link))
    assert status == 401  # the token ended with the run


def test_a_huge_model_name_and_a_huge_body_do_not_fill_the_logs(llm_gateway, upstream, link):
    name = "m" * (4 << 20)
    for _ in range(8):
        status, _, text = answer_of(
            llm_gateway, "/v1/chat/completions", {**CHAT, "model": name}, bearer(link)
        )
        assert status == 400
        assert len(text) < 4096  # the name is not echoed whole
    usage = usage_lines(link, 8)
    assert link.usage_path.stat().st_size < 8 * 2048
    assert all(len(x["alias"]) <= 256 and x["alias"].endswith("[rexmle: cut]") for x in usage)
    # a body over max_request_mb (32) is refused from its Content-Length, before it is read
    with socket.create_connection(("127.0.0.1", llm_gateway.port), timeout=30) as raw:
        raw.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {link.token}\r\nContent-Length: {33 << 20}\r\n\r\n".encode()
        )
        received = b""
        while chunk := raw.recv(65536):  # the gateway closes the connection after its answer
            received += chunk
        answer = received.decode()
    assert answer.startswith("HTTP/1.1 413"), answer
    assert "max_request_mb" in answer
    assert upstream.completion_requests() == []
