"""Per-call overhead of the LLM gateway on each protocol's route, measured in one run.

Run: ``.venv/bin/python bench/gateway_routes.py [--calls 100]``. A scripted stand-in
(``rexmle.llm.standin``) answers on 127.0.0.1; the same short answer is asked ``--calls`` times,
one at a time on a kept-alive connection, directly from the stand-in and through a real gateway
(its direct path for the calls it takes, else the LiteLLM proxy; usage lines written either
way), on the OpenAI chat completions route,
the Anthropic Messages route and the Gemini generateContent route, each plain and streamed, and
Gemini's OpenAI-compatible route (its direct figure: the stand-in's generateContent, which the
gateway calls for it). Figures: p50/p95 of both and their difference, per route.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gateway import percentile_ms, timed_calls

KEY_ENV = "REXMLE_BENCH_STANDIN_KEY"
HELLO = [{"role": "user", "content": "measure me"}]
GEMINI = {"contents": [{"role": "user", "parts": [{"text": "measure me"}]}]}


def routes(token: str, key: str) -> list[tuple[str, str, dict[str, Any], dict, str, dict, dict]]:
    """(name, gateway path, gateway body, gateway headers, direct path, direct body, headers)."""
    gen = "/v1beta/models/{}:generateContent"
    stream = "/v1beta/models/{}:streamGenerateContent?alt=sse"
    anthropic = {"anthropic-version": "2023-06-01"}
    messages = {"max_tokens": 32, "messages": HELLO}
    return [
        ("openai chat", "/v1/chat/completions", {"model": "gw/gpt-5", "messages": HELLO},
         {"Authorization": f"Bearer {token}"}, "/v1/chat/completions",
         {"model": "gpt-5", "messages": HELLO}, {"Authorization": f"Bearer {key}"}),
        ("openai chat streamed", "/v1/chat/completions",
         {"model": "gw/gpt-5", "messages": HELLO, "stream": True},
         {"Authorization": f"Bearer {token}"}, "/v1/chat/completions",
         {"model": "gpt-5", "messages": HELLO, "stream": True}, {"Authorization": f"Bearer {key}"}),
        ("anthropic messages", "/v1/messages", {"model": "claude-sonnet-4-5", **messages},
         {"x-api-key": token, **anthropic}, "/v1/messages",
         {"model": "claude-sonnet-4-5-20250929", **messages}, {"x-api-key": key, **anthropic}),
        ("anthropic messages streamed", "/v1/messages",
         {"model": "claude-sonnet-4-5", **messages, "stream": True},
         {"x-api-key": token, **anthropic}, "/v1/messages",
         {"model": "claude-sonnet-4-5-20250929", **messages, "stream": True},
         {"x-api-key": key, **anthropic}),
        ("gemini generateContent", gen.format("gemini-3-pro"), GEMINI, {"x-goog-api-key": token},
         gen.format("gemini-3-pro-preview"), GEMINI, {"x-goog-api-key": key}),
        ("gemini streamGenerateContent", stream.format("gemini-3-pro"), GEMINI,
         {"x-goog-api-key": token}, stream.format("gemini-3-pro-preview"), GEMINI,
         {"x-goog-api-key": key}),
        ("gemini openai-compatible", "/v1beta/openai/chat/completions",
         {"model": "gemini-3-pro", "messages": HELLO}, {"Authorization": f"Bearer {token}"},
         gen.format("gemini-3-pro-preview"), GEMINI, {"x-goog-api-key": key}),
    ]  # fmt: skip


def measure(calls: int) -> dict[str, dict[str, float]]:
    """p50/p95 direct, through the gateway and their difference, per route (ms)."""
    from rexmle.llm.config import parse_llm_config
    from rexmle.llm.environment import install_gateway
    from rexmle.llm.gateway import Gateway
    from rexmle.llm.standin import Reply, ScriptedUpstream

    env, _ = install_gateway()
    reply = Reply(text="a reply of about twelve words to measure the overhead of the gateway")
    os.environ[KEY_ENV] = "sk-bench-key-0123456789"
    figures: dict[str, dict[str, float]] = {}
    with ScriptedUpstream(default=reply, api_keys={os.environ[KEY_ENV]}) as upstream:
        base = upstream.base_url
        config = parse_llm_config(
            f"""
providers:
  o: {{api: openai, base_url: "{base}/v1", key_env: {KEY_ENV}}}
  a: {{api: anthropic, base_url: "{base}", key_env: {KEY_ENV}}}
  g: {{api: gemini, base_url: "{base}/v1beta", key_env: {KEY_ENV}}}
models:
  gpt-5: {{provider: o, upstream: gpt-5, price: {{input: 1.25, cached_input: 0.125, output: 10}}}}
  claude-sonnet-4-5: {{provider: a, upstream: claude-sonnet-4-5-20250929,
                      price: {{input: 3, cached_input: 0.3, output: 15}}}}
  gemini-3-pro: {{provider: g, upstream: gemini-3-pro-preview,
                 price: {{input: 2, cached_input: 0.2, output: 12}}}}
limits: {{budget_usd: 1000.0, max_calls_per_minute: 100000}}
""",
            "bench",
        )
        with Gateway(config, env=env) as gateway, tempfile.TemporaryDirectory() as folder:
            link = gateway.register("bench", Path(folder))
            for name, path, body, headers, d_path, d_body, d_headers in routes(
                link.token, os.environ[KEY_ENV]
            ):
                timed_calls(gateway.port, path, body, headers, 10)  # warm-up
                direct = timed_calls(upstream.port, d_path, d_body, d_headers, calls)
                through = timed_calls(gateway.port, path, body, headers, calls)
                row: dict[str, float] = {}
                for q in (0.5, 0.95):
                    d, g = percentile_ms(direct, q), percentile_ms(through, q)
                    tag = f"p{round(q * 100)}"
                    row.update({f"{tag}_direct": d, f"{tag}_gateway": g, f"{tag}_overhead": g - d})
                figures[name] = row
    return figures


def main() -> None:
    """Print the figures as a Markdown table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=100)
    options = parser.parse_args()
    figures = measure(options.calls)
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    )
    print(f"| route ({options.calls} calls) | p50 direct / gateway / overhead (ms) | p95 (same) |")
    print("|---|---|---|")
    for name, row in figures.items():
        cells = [
            f"{row[f'{q}_direct']:.2f} / {row[f'{q}_gateway']:.2f} / **{row[f'{q}_overhead']:.2f}**"
            for q in ("p50", "p95")
        ]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
