"""A stream broken off after its answer began, served by LiteLLM (a gateway without its
direct path): charged as the direct path charges it, and parallel ones held to the budget.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from llm_support import call, usage_lines

from rexmle.llm.config import Limits
from rexmle.llm.fast_path import BROKEN_OFF
from rexmle.llm.gateway import Gateway, RunLink
from rexmle.llm.metering import UNREPORTED, Price, cost_usd, estimated_tokens
from rexmle.llm.native_routes import estimate_view
from rexmle.llm.standin import Reply

pytestmark = pytest.mark.slow

HELLO = [{"role": "user", "content": "hello there"}]
GEMINI_BODY = {"contents": [{"role": "user", "parts": [{"text": "hello there"}]}]}
TEXT = " ".join(f"word{i}" for i in range(40))
GPT = Price(input=1.25, cached_input=0.125, output=10.0)
CLAUDE = Price(input=3.0, cached_input=0.3, output=15.0)
GEMINI = Price(input=2.0, cached_input=0.2, output=12.0)


@pytest.fixture(scope="module")
def via(start_standin_gateway: Any) -> Iterator[Gateway]:
    """A gateway whose every call goes through LiteLLM."""
    with start_standin_gateway(direct=False) as gateway:
        yield gateway


def bearer(link: RunLink) -> dict[str, str]:
    return {"Authorization": f"Bearer {link.token}"}


def anthropic(link: RunLink) -> dict[str, str]:
    return {"x-api-key": link.token, "anthropic-version": "2023-06-01"}


def google(link: RunLink) -> dict[str, str]:
    return {"x-goog-api-key": link.token}


CASES = [
    # (name, path, body, headers maker, price)
    ("chat", "/v1/chat/completions",
     {"model": "gw/gpt-5", "messages": HELLO, "stream": True, "max_tokens": 200}, bearer, GPT),
    ("chat without a limit", "/v1/chat/completions",
     {"model": "gw/gpt-5", "messages": HELLO, "stream": True,
      "stream_options": {"include_usage": True}}, bearer, GPT),
    ("messages", "/v1/messages",
     {"model": "claude", "max_tokens": 200, "messages": HELLO, "stream": True}, anthropic,
     CLAUDE),
    ("gemini", "/v1beta/models/gemini-3-pro:streamGenerateContent?alt=sse",
     {**GEMINI_BODY, "generationConfig": {"maxOutputTokens": 200}}, google, GEMINI),
    ("gemini openai-compatible", "/v1beta/openai/chat/completions",
     {"model": "gemini-3-pro", "messages": HELLO, "stream": True, "max_tokens": 200}, bearer,
     GEMINI),
]  # fmt: skip


@pytest.mark.parametrize(("name", "path", "body", "headers", "price"), CASES,
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_a_stream_broken_off_on_litellm_is_charged(via, upstream, tmp_path, name, path, body,
                                                   headers, price):  # fmt: skip
    link = via.register(name, tmp_path, limits=Limits(budget_usd=1.0,
                                                      max_calls_per_minute=None))  # fmt: skip
    upstream.reset()
    upstream.push(Reply(status=500, error="upstream down"))  # fails before its answer: free
    upstream.push(Reply(text=TEXT, input_tokens=70, output_tokens=90, break_after=4))
    assert call(via, path, body, headers(link))[0] >= 500
    call(via, path, body, headers(link))
    assert len(upstream.completion_requests()) == 2
    failed, line = usage_lines(link, 2)
    assert (failed["status"], failed["cost_usd"]) == ("error", 0.0)
    assert not (failed["error"] or "").startswith(BROKEN_OFF)
    assert line["status"] == "error"
    assert line["error"].startswith(BROKEN_OFF), line
    assert line["error"].endswith(UNREPORTED), line
    assert line["stream"] is True
    tokens_in, tokens_out = estimated_tokens(estimate_view(body), 4096)
    assert (line["tokens_in"], line["tokens_out"]) == (tokens_in, tokens_out)
    expected = cost_usd(price, tokens_in=tokens_in, tokens_cached=0, tokens_out=tokens_out)
    assert line["cost_usd"] == pytest.approx(expected, abs=1e-12)
    assert line["cost_usd"] > 0
    assert link.totals().cost_usd == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("protocol", ["chat", "messages"])
def test_parallel_broken_streams_on_litellm_never_spend_past_the_budget(
    via, upstream, tmp_path, protocol
):
    if protocol == "chat":
        path = "/v1/chat/completions"
        body: dict[str, Any] = {"model": "gw/gpt-5", "messages": HELLO, "stream": True,
                                "max_tokens": 200}  # fmt: skip
        price, headers_of = GPT, bearer
    else:
        path = "/v1/messages"
        body = {"model": "claude", "max_tokens": 200, "messages": HELLO, "stream": True}
        price, headers_of = CLAUDE, anthropic
    tokens_in, tokens_out = estimated_tokens(body, 4096)
    cost = cost_usd(price, tokens_in=tokens_in, tokens_cached=0, tokens_out=tokens_out)
    budget = cost + cost + cost  # summed as the meter sums: three calls fit exactly
    link = via.register("budget", tmp_path, limits=Limits(budget_usd=budget,
                                                          max_calls_per_minute=None))  # fmt: skip
    upstream.reset(default=Reply(text=TEXT, input_tokens=70, output_tokens=90, delay_s=0.3,
                                 break_after=4))  # fmt: skip
    headers = headers_of(link)
    workers = [threading.Thread(target=call, args=(via, path, body, headers)) for _ in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert len(upstream.completion_requests()) == 3
    assert "budget" in (link.stopped_reason() or "")
    totals = link.totals()
    assert totals.cost_usd <= budget + 1e-12
    assert totals.cost_usd == pytest.approx(3 * cost, abs=1e-12)
