"""The direct path on the native routes (Anthropic Messages, Gemini generateContent) against
LiteLLM on the same stand-in: the same upstream request and the same usage line for the same
answer; the budget held with parallel calls; a stream broken off mid-way charged; the calls it
must not take served by LiteLLM.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from llm_support import call, jsonl_lines, usage_lines

from rexmle.llm.config import Limits
from rexmle.llm.fast_path import BROKEN_OFF, REPORTED, USER_AGENT
from rexmle.llm.gateway import Gateway, RunLink
from rexmle.llm.metering import UNREPORTED, Price, cost_usd, estimated_tokens
from rexmle.llm.native_routes import estimate_view
from rexmle.llm.standin import Reply, ScriptedUpstream, ToolCall
from rexmle.llm.usage import TRAJECTORY_FILE

pytestmark = pytest.mark.slow

HELLO = [{"role": "user", "content": "hello there"}]
GEMINI_BODY = {"contents": [{"role": "user", "parts": [{"text": "hello there"}]}]}
GENERATE = "/v1beta/models/{}:generateContent"
COMPAT = "/v1beta/openai/chat/completions"
STREAM = "/v1beta/models/{}:streamGenerateContent"
CLAUDE = Price(input=3.0, cached_input=0.3, output=15.0)
GEMINI = Price(input=2.0, cached_input=0.2, output=12.0)
LIMITS = Limits(budget_usd=1.0, max_calls_per_minute=None)
STANDIN_KEY = "sk-standin-provider-key-0123456789"  # tests/conftest.py
VARYING = ("time", "latency_s")
"""Usage line fields that differ between two calls of the same answer."""


@pytest.fixture(scope="module")
def twins(start_standin_gateway: Any) -> Iterator[tuple[Gateway, Gateway]]:
    """(a gateway with its direct path, one with every call through LiteLLM), one stand-in."""
    with start_standin_gateway(direct=True) as direct, start_standin_gateway(direct=False) as via:
        yield direct, via


def anthropic(link: RunLink, **extra: str) -> dict[str, str]:
    return {"x-api-key": link.token, "anthropic-version": "2023-06-01", **extra}


def google(link: RunLink) -> dict[str, str]:
    return {"x-goog-api-key": link.token}


def bearer(link: RunLink) -> dict[str, str]:
    return {"Authorization": f"Bearer {link.token}"}


def on_both(
    twins: tuple[Gateway, Gateway], upstream: ScriptedUpstream, tmp_path: Any, name: str,
    reply: Reply, path: str, body: dict[str, Any], headers: Any,
) -> list[tuple[str, Any, dict[str, Any], list[dict[str, Any]]]]:  # fmt: skip
    """One call answered ``reply`` through each gateway (direct path first): (answer text,
    upstream request, usage line, trajectory entries) per gateway.
    """
    seen = []
    for gateway in twins:
        folder = tmp_path / str(gateway.direct_path)
        folder.mkdir()
        link = gateway.register(name, folder, limits=LIMITS)
        upstream.reset()
        upstream.push(reply)
        status, text = call(gateway, path, body, headers(link))
        assert status == 200, text
        (request,) = upstream.completion_requests()
        assert served_directly(request) == gateway.direct_path
        (line,) = usage_lines(link, 1)
        seen.append((text, request, line, trajectory(link)))
        gateway.unregister(link)
    return seen


def served_directly(request: Any) -> bool:
    return request.headers.get("user-agent") == USER_AGENT


def trajectory(link: RunLink, expected: int = 1) -> list[dict[str, Any]]:
    """The run's trajectory entries once ``expected`` are written."""
    return jsonl_lines(link.usage_path.with_name(TRAJECTORY_FILE), expected)


def without_ids(value: Any) -> Any:
    """``value`` without the answer ids the stand-in numbers (``id``, ``responseId``)."""
    if isinstance(value, dict):
        return {k: without_ids(v) for k, v in value.items() if k not in ("id", "responseId")}
    if isinstance(value, list):
        return [without_ids(v) for v in value]
    return value


def stream_text(text: str, protocol: str) -> str:
    """The text a streamed answer carried (Anthropic text deltas, Gemini parts)."""
    said = []
    for event in text.split("\n\n"):
        data = [x[5:].strip() for x in event.splitlines() if x.startswith("data:")]
        if not data:
            continue
        chunk = json.loads(data[0])
        if protocol == "anthropic" and chunk.get("type") == "content_block_delta":
            said.append(chunk["delta"].get("text", ""))
        if protocol == "gemini":
            said += [p.get("text", "") for p in chunk["candidates"][0]["content"]["parts"]]
    return "".join(said)


CASES = [
    # (name, path, body, headers maker, protocol, streamed)
    ("messages", "/v1/messages",
     {"model": "claude", "max_tokens": 64, "messages": HELLO, "temperature": 0.5}, anthropic,
     "anthropic", False),
    ("messages streamed", "/v1/messages",
     {"model": "gw/claude", "max_tokens": 64, "messages": HELLO, "stream": True,
      "system": "be brief", "tools": [{"name": "f", "input_schema": {"type": "object"}}]},
     anthropic, "anthropic", True),
    ("generateContent", GENERATE.format("gemini-3-pro"),
     {**GEMINI_BODY, "generationConfig": {"maxOutputTokens": 50, "temperature": 0.2}}, google,
     "gemini", False),
    ("streamGenerateContent sse", STREAM.format("gw/gemini-3-pro") + "?alt=sse",
     {**GEMINI_BODY, "systemInstruction": {"parts": [{"text": "be brief"}]}}, google, "gemini",
     True),
    ("streamGenerateContent", STREAM.format("gemini-3-pro"), GEMINI_BODY, google, "gemini", True),
]  # fmt: skip


@pytest.mark.parametrize(("name", "path", "body", "headers", "protocol", "streamed"), CASES,
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_the_direct_path_sends_and_charges_what_litellm_does(
    twins, upstream, tmp_path, name, path, body, headers, protocol, streamed
):
    reply = Reply(text="the same answer from both paths", input_tokens=300, cached_tokens=120,
                  output_tokens=40, reasoning_tokens=10 if protocol == "gemini" else 0)  # fmt: skip
    (answers, sent, lines, entries) = zip(*on_both(twins, upstream, tmp_path, name, reply, path,
                                                   body, headers), strict=True)  # fmt: skip
    direct, via = sent
    assert (direct.path, direct.body) == (via.path, via.body)
    for header in ("anthropic-version", "x-api-key", "x-goog-api-key", "anthropic-beta"):
        assert direct.headers.get(header) == via.headers.get(header), header
    if streamed:
        assert stream_text(answers[0], protocol) == stream_text(answers[1], protocol) != ""
    else:
        assert without_ids(json.loads(answers[0])) == without_ids(json.loads(answers[1]))
    fields = {k: v for k, v in lines[0].items() if k not in VARYING}
    assert fields == {k: v for k, v in lines[1].items() if k not in VARYING}
    assert (fields["status"], fields["stream"], fields["error"]) == ("ok", streamed, None)
    assert (fields["tokens_in"], fields["tokens_cached"], fields["tokens_out"]) == (300, 120, 40)
    price = CLAUDE if protocol == "anthropic" else GEMINI
    expected = cost_usd(price, tokens_in=300, tokens_cached=120, tokens_out=40)
    assert fields["cost_usd"] == pytest.approx(expected, abs=1e-12)
    assert [set(e) for e in entries[0]] == [set(e) for e in entries[1]]


COMPAT_CASES = [
    ("plain", {"model": "gemini-3-pro", "messages": HELLO, "max_tokens": 50,
               "temperature": 0.2}),
    ("streamed", {"model": "gw/gemini-3-pro", "messages": HELLO, "stream": True}),
    ("streamed with usage", {"model": "gemini-3-pro", "messages": HELLO, "stream": True,
                             "stream_options": {"include_usage": True}}),
]  # fmt: skip


def compat_text(answer: str, streamed: bool) -> tuple[str, list[Any]]:
    """(the text an OpenAI-format answer carried, its usage chunks' usage)."""
    if not streamed:
        parsed = json.loads(answer)
        return parsed["choices"][0]["message"]["content"], [parsed.get("usage")]
    said, usages = [], []
    for event in answer.split("\n\n"):
        data = event.strip().removeprefix("data:").strip()
        if not data or data == "[DONE]":
            continue
        chunk = json.loads(data)
        said += [c["delta"].get("content") or "" for c in chunk.get("choices") or ()]
        if chunk.get("usage"):
            usages.append(chunk["usage"])
    return "".join(said), usages


@pytest.mark.parametrize(("name", "body"), COMPAT_CASES, ids=[c[0] for c in COMPAT_CASES])
def test_geminis_openai_compatible_route_goes_to_googles_endpoint_charged_as_litellm_charges(
    twins, upstream, tmp_path, name, body
):
    streamed = bool(body.get("stream"))
    reply = Reply(text="the same answer from both paths", input_tokens=300, cached_tokens=120,
                  output_tokens=40)  # fmt: skip
    texts, (request, _), lines, entries = zip(*on_both(twins, upstream, tmp_path, name, reply,
                                                       COMPAT, body, bearer), strict=True)  # fmt: skip
    answers = [compat_text(text, streamed) for text in texts]
    assert request.path == COMPAT  # the body as the agent sent it, to Google's endpoint
    expected = {**body, "model": "gemini-3-pro-preview"}
    if streamed:
        expected["stream_options"] = {**body.get("stream_options", {}), "include_usage": True}
    assert request.body == expected
    assert request.headers["authorization"] == f"Bearer {STANDIN_KEY}"
    assert answers[0][0] == answers[1][0] == reply.text
    asked = bool(body.get("stream_options")) or not streamed
    assert bool(answers[0][1]) == asked  # the usage chunk only when the agent asked for it
    # LiteLLM's line names the parameters it renamed into generationConfig; nothing is
    # dropped or renamed on the way to Google's endpoint
    unlike = (*VARYING, "dropped_params")
    fields = {k: v for k, v in lines[0].items() if k not in unlike}
    assert fields == {k: v for k, v in lines[1].items() if k not in unlike}
    assert lines[0]["dropped_params"] == []
    assert (fields["status"], fields["stream"], fields["error"]) == ("ok", streamed, None)
    assert fields["alias"] == "gw/gemini-3-pro"
    assert (fields["tokens_in"], fields["tokens_cached"], fields["tokens_out"]) == (300, 120, 40)
    expected_cost = cost_usd(GEMINI, tokens_in=300, tokens_cached=120, tokens_out=40)
    assert fields["cost_usd"] == pytest.approx(expected_cost, abs=1e-12)
    assert [set(e) for e in entries[0]] == [set(e) for e in entries[1]]


def test_geminis_openai_compatible_route_can_stay_on_litellm(start_standin_gateway, upstream,
                                                              tmp_path):  # fmt: skip
    with start_standin_gateway(direct=True, extra="gemini_openai_route: litellm") as gateway:
        link = gateway.register("litellm", tmp_path, limits=LIMITS)
        upstream.reset()
        body = {"model": "gemini-3-pro", "messages": HELLO}
        status, text = call(gateway, COMPAT, body, {"Authorization": f"Bearer {link.token}"})
        assert status == 200, text
        (request,) = upstream.completion_requests()
        assert not served_directly(request)
        assert request.path == GENERATE.format("gemini-3-pro-preview")


def priced_call(protocol: str) -> tuple[str, dict[str, Any], Reply, float]:
    """A call whose answer costs exactly its estimate: (path, body, reply, cost)."""
    if protocol == "anthropic":
        body: dict[str, Any] = {"model": "claude", "max_tokens": 200, "messages": HELLO}
        path, price, view = "/v1/messages", CLAUDE, body
    elif protocol == "gemini-openai":
        body = {"model": "gemini-3-pro", "max_tokens": 200, "messages": HELLO}
        path, price, view = COMPAT, GEMINI, body
    else:
        body = {**GEMINI_BODY, "generationConfig": {"maxOutputTokens": 200}}
        path, price, view = GENERATE.format("gemini-3-pro"), GEMINI, estimate_view(body)
    tokens_in, tokens_out = estimated_tokens(view, 4096)
    reply = Reply(text="x", input_tokens=tokens_in, output_tokens=tokens_out, delay_s=0.3)
    cost = cost_usd(price, tokens_in=tokens_in, tokens_cached=0, tokens_out=tokens_out)
    return path, body, reply, cost


@pytest.mark.parametrize("protocol", ["anthropic", "gemini", "gemini-openai"])
def test_parallel_direct_calls_never_spend_past_the_budget(twins, upstream, tmp_path, protocol):
    direct, _ = twins
    path, body, reply, cost = priced_call(protocol)
    budget = cost + cost + cost  # summed as the meter sums: three calls fit exactly
    link = direct.register("budget", tmp_path, limits=Limits(budget_usd=budget,
                                                             max_calls_per_minute=None))  # fmt: skip
    upstream.reset(default=reply)
    headers = anthropic(link) if protocol == "anthropic" else google(link)
    if protocol == "gemini-openai":
        headers = {"Authorization": f"Bearer {link.token}"}
    statuses = [0] * 8

    def one(index: int) -> None:
        statuses[index] = call(direct, path, body, headers)[0]

    workers = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    sent = upstream.completion_requests()
    assert len(sent) == 3
    assert all(served_directly(r) for r in sent)
    assert sorted(statuses) == [200] * 3 + [403] * 5
    assert "budget" in (link.stopped_reason() or "")
    totals = link.totals()
    assert totals.cost_usd <= budget + 1e-12
    assert totals.cost_usd == pytest.approx(3 * cost, abs=1e-12)


BROKEN = [
    # (name, path, body, headers maker, events before the break, charged as reported)
    ("chat", "/v1/chat/completions", {"model": "gw/gpt-5", "messages": HELLO, "stream": True},
     lambda link: {"Authorization": f"Bearer {link.token}"}, 3, False),
    ("chat after its usage", "/v1/chat/completions",
     {"model": "gw/gpt-5", "messages": HELLO, "stream": True,
      "stream_options": {"include_usage": True}},
     lambda link: {"Authorization": f"Bearer {link.token}"}, -1, True),
    ("messages", "/v1/messages",
     {"model": "claude", "max_tokens": 500, "messages": HELLO, "stream": True}, anthropic, 3,
     False),
    ("messages after message_delta", "/v1/messages",
     {"model": "claude", "max_tokens": 500, "messages": HELLO, "stream": True}, anthropic, -1,
     True),
    ("gemini", STREAM.format("gemini-3-pro") + "?alt=sse",
     {**GEMINI_BODY, "generationConfig": {"maxOutputTokens": 500}}, google, 2, False),
    ("gemini openai-compatible", COMPAT,
     {"model": "gemini-3-pro", "messages": HELLO, "stream": True, "max_tokens": 500},
     lambda link: {"Authorization": f"Bearer {link.token}"}, 3, False),
]  # fmt: skip
PRICES = {"chat": Price(input=1.25, cached_input=0.125, output=10.0), "messages": CLAUDE,
          "gemini": GEMINI}  # fmt: skip


@pytest.mark.parametrize(("name", "path", "body", "headers", "events", "reported"), BROKEN,
                         ids=[b[0] for b in BROKEN])  # fmt: skip
def test_a_stream_broken_off_mid_way_is_charged(
    twins, upstream, tmp_path, name, path, body, headers, events, reported
):
    direct, _ = twins
    link = direct.register("broken", tmp_path, limits=LIMITS)
    text = " ".join(f"word{i}" for i in range(40))
    full = Reply(text=text, input_tokens=70, output_tokens=90)
    count = len(_events(upstream, direct, path, body, headers(link), full))
    upstream.reset()
    upstream.push(Reply(text=text, input_tokens=70, output_tokens=90,
                        break_after=count - 1 if events < 0 else events))  # fmt: skip
    status, _ = call(direct, path, body, headers(link))
    assert status == 200
    assert all(served_directly(r) for r in upstream.completion_requests())
    first, line = usage_lines(link, 2)
    assert first["status"] == "ok"
    assert line["status"] == "error"
    assert line["error"].startswith(BROKEN_OFF)
    price = PRICES[name.split()[0]]
    if reported:
        assert line["error"].endswith(REPORTED)
        assert (line["tokens_in"], line["tokens_out"]) == (70, 90)
    else:
        assert line["error"].endswith(UNREPORTED)
        view = estimate_view(body)
        tokens_in, tokens_out = estimated_tokens(view, 4096)
        assert (line["tokens_in"], line["tokens_out"]) == (tokens_in, tokens_out)
    expected = cost_usd(price, tokens_in=line["tokens_in"], tokens_cached=0,
                        tokens_out=line["tokens_out"])  # fmt: skip
    assert line["cost_usd"] == pytest.approx(expected, abs=1e-12)
    assert line["cost_usd"] > 0
    assert link.totals().cost_usd == pytest.approx(first["cost_usd"] + line["cost_usd"])


def _events(
    upstream: ScriptedUpstream, gateway: Gateway, path: str, body: dict[str, Any],
    headers: dict[str, str], reply: Reply,
) -> list[str]:  # fmt: skip
    """The events of the whole streamed answer (one call, counted by the test as its first)."""
    upstream.reset()
    upstream.push(reply)
    status, text = call(gateway, path, body, headers)
    assert status == 200, text
    return [event for event in text.split("\n\n") if event.strip()]


FALLBACK = [
    # (name, path, body, extra headers): served by LiteLLM on the direct path's gateway
    ("beta header", "/v1/messages", {"model": "claude", "max_tokens": 8, "messages": HELLO},
     {"anthropic-beta": "prompt-caching-2024-07-31"}),
    ("empty text block", "/v1/messages",
     {"model": "claude", "max_tokens": 8,
      "messages": [{"role": "user", "content": [{"type": "text", "text": ""},
                                                {"type": "text", "text": "hi"}]}]}, {}),
    ("tool id LiteLLM renames", "/v1/messages",
     {"model": "claude", "max_tokens": 8, "messages": [
         {"role": "user", "content": "go"},
         {"role": "assistant", "content": [{"type": "tool_use", "id": "call 1", "name": "f",
                                            "input": {}}]},
         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call 1",
                                       "content": "ok"}]}]}, {}),
    ("thinking", "/v1/messages",
     {"model": "claude", "max_tokens": 2048, "messages": HELLO,
      "thinking": {"type": "enabled", "budget_tokens": 1024}}, {}),
    ("unknown key", "/v1/messages",
     {"model": "claude", "max_tokens": 8, "messages": HELLO, "not_a_parameter": 1}, {}),
    ("system turn", "/v1/messages",
     {"model": "claude", "max_tokens": 8,
      "messages": [*HELLO, {"role": "system", "content": "be brief"}]}, {}),
    ("openai alias on messages", "/v1/messages",
     {"model": "gw/gpt-5", "max_tokens": 8, "messages": HELLO}, {}),
    ("snake-case config", GENERATE.format("gemini-3-pro"),
     {**GEMINI_BODY, "generation_config": {"max_output_tokens": 5}}, {}),
    ("response schema", GENERATE.format("gemini-3-pro"),
     {**GEMINI_BODY, "generationConfig": {"responseSchema": {"type": "OBJECT"}}}, {}),
    ("unknown config key", GENERATE.format("gemini-3-pro"),
     {**GEMINI_BODY, "generationConfig": {"notAKey": 1}}, {}),
    ("other query", GENERATE.format("gemini-3-pro") + "?alt=json", GEMINI_BODY, {}),
]  # fmt: skip


def test_calls_the_direct_path_must_not_take_go_through_litellm(twins, upstream, tmp_path):
    direct, _ = twins
    link = direct.register("fallback", tmp_path, limits=LIMITS)
    for name, path, body, extra in FALLBACK:
        upstream.reset()
        base = anthropic(link) if path == "/v1/messages" else google(link)
        status, text = call(direct, path, body, {**base, **extra})
        assert status == 200, (name, text)
        (sent,) = upstream.completion_requests()
        assert not served_directly(sent), name
    for body in ({"model": "claude", "messages": HELLO},  # not a Gemini model: refused
                 {"model": "gemini-3-pro", "messages": "not a list"}):  # fmt: skip
        upstream.reset()
        call(direct, COMPAT, body, {"Authorization": f"Bearer {link.token}"})
        assert not any(served_directly(r) for r in upstream.completion_requests())
    *lines, claude, not_a_list = usage_lines(link, len(FALLBACK) + 2)
    assert {x["status"] for x in lines} == {"ok"}
    assert (claude["status"], not_a_list["status"]) == ("refused", "error")


def test_a_tool_call_answer_reads_the_same_on_both_paths(twins, upstream, tmp_path):
    tool = ToolCall("submit", {"path": "submission.csv"}, id="toolu_1")
    body = {"model": "claude", "max_tokens": 64, "messages": HELLO, "stream": True,
            "tools": [{"name": "submit", "input_schema": {"type": "object"}}]}  # fmt: skip
    answers = []
    for gateway in twins:
        folder = tmp_path / str(gateway.direct_path)
        folder.mkdir()
        link = gateway.register("tools", folder, limits=LIMITS)
        upstream.reset()
        upstream.push(Reply(tool_calls=(tool,), input_tokens=10, output_tokens=5))
        status, text = call(gateway, "/v1/messages", body, anthropic(link))
        assert status == 200, text
        answers.append([json.loads(e.split("data: ", 1)[1]) for e in text.split("\n\n")
                        if "data: " in e])  # fmt: skip
        (entry,) = trajectory(link)
        assert entry["status"] == "ok"
        gateway.unregister(link)
    assert without_ids(answers[0]) == without_ids(answers[1])
    assert answers[0][0]["message"]["model"] == "claude"
