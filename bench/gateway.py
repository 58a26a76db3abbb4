"""LLM gateway figures: per-call overhead against direct calls, start time, memory, env install.

Run: ``.venv/bin/python bench/gateway.py [--calls 200] [--cold-install]``. A scripted stand-in
(``rexmle.llm.standin``) answers on 127.0.0.1; the same chat completion (plain, then streamed)
is sent ``--calls`` times directly to the stand-in and through a real gateway (LiteLLM proxy,
metering callback writing usage lines), one call at a time. Reported: p50/p95 latency of both and
their difference, the gateway's start time (process start to first healthy answer), its resident
memory (proxy process group, after the calls), and the time to install its environment (warm:
already installed; ``--cold-install`` installs into a fresh folder, re-using uv's download cache).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

from rexmle.llm.config import parse_llm_config
from rexmle.llm.environment import install_gateway
from rexmle.llm.gateway import Gateway
from rexmle.llm.standin import Reply, ScriptedUpstream

KEY_ENV = "REXMLE_BENCH_STANDIN_KEY"


def timed_calls(port: int, path: str, body: dict[str, object], token: str, n: int) -> list[float]:
    """Seconds per call for ``n`` sequential calls on one kept-alive connection."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    seconds = []
    for _ in range(n):
        started = time.perf_counter()
        connection.request("POST", path, json.dumps(body), headers)
        answer = connection.getresponse()
        answer.read()
        if answer.status != 200:
            msg = f"call failed with {answer.status}"
            raise RuntimeError(msg)
        seconds.append(time.perf_counter() - started)
    connection.close()
    return seconds


def percentile_ms(values: list[float], q: float) -> float:
    """The ``q``-quantile (0..1) of ``values`` in milliseconds (inclusive method)."""
    return 1000.0 * statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1]


def rss_mb(pgid: int) -> float:
    """Resident memory (MiB) of every process in the process group ``pgid``."""
    total_kb = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.getpgid(int(entry)) != pgid:
                continue
            with open(f"/proc/{entry}/status", encoding="utf-8") as handle:
                for line in handle:
                    if line.startswith("VmRSS:"):
                        total_kb += int(line.split()[1])
        except (OSError, ProcessLookupError):
            continue
    return total_kb / 1024.0


def main() -> None:
    """Print the figures (see the module docstring)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--cold-install", action="store_true")
    options = parser.parse_args()
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    started = time.monotonic()
    env, _ = install_gateway()
    print(f"env install (warm): {time.monotonic() - started:.2f} s")
    if options.cold_install:
        with tempfile.TemporaryDirectory(dir=Path.home()) as cache:
            started = time.monotonic()
            install_gateway(Path(cache))
            print(f"env install (cold folder, uv cache warm): {time.monotonic() - started:.1f} s")
    reply = Reply(text="a reply of about twelve words to measure the overhead of the gateway")
    os.environ[KEY_ENV] = "sk-bench-key-0123456789"
    with ScriptedUpstream(default=reply, api_keys={os.environ[KEY_ENV]}) as upstream:
        config = parse_llm_config(
            f"""
providers:
  standin: {{api: openai, base_url: "{upstream.base_url}/v1", key_env: {KEY_ENV}}}
models:
  gpt-5: {{provider: standin, upstream: gpt-5, price: {{input: 1.25, cached_input: 0.125, output: 10}}}}
limits: {{budget_usd: 1000.0, max_calls_per_minute: 100000}}
""",
            "bench",
        )
        with Gateway(config, env=env) as gateway, tempfile.TemporaryDirectory() as folder:
            print(f"gateway start: {gateway.startup_s:.1f} s")
            link = gateway.register("bench", Path(folder), socket_dir=Path(folder))
            for stream in (False, True):
                body = {
                    "model": "gw/gpt-5",
                    "messages": [{"role": "user", "content": "measure me"}],
                    "stream": stream,
                }
                direct_body = {**body, "model": "gpt-5"}
                timed_calls(gateway.port, "/v1/chat/completions", body, link.token, 10)  # warm-up
                direct = timed_calls(
                    upstream.port, "/v1/chat/completions", direct_body, os.environ[KEY_ENV],
                    options.calls,
                )  # fmt: skip
                through = timed_calls(
                    gateway.port, "/v1/chat/completions", body, link.token, options.calls
                )
                kind = "streamed" if stream else "plain"
                for q in (0.5, 0.95):
                    d, g = percentile_ms(direct, q), percentile_ms(through, q)
                    print(
                        f"{kind} p{round(q * 100)}: direct {d:.2f} ms, gateway {g:.2f} ms, "
                        f"overhead {g - d:.2f} ms ({options.calls} calls)"
                    )
            assert gateway.process is not None
            print(f"gateway RSS after the calls: {rss_mb(gateway.process.pid):.0f} MiB")
            lines = (Path(folder) / "llm_usage.jsonl").read_text().splitlines()
            print(f"usage lines written: {len(lines)}")


if __name__ == "__main__":
    main()
