"""LLM gateway figures, before and after a change, measured in the same run on the same machine.

Run: ``.venv/bin/python bench/gateway.py [--calls 200] [--before REV] [--repeat N]
[--cold-install]``. Each side runs in its own process: the working tree ("after") and, with
``--before``, the ``rexmle`` package of commit REV (``git archive``, same gateway lock, so the
same LiteLLM environment); with ``--repeat N`` the sides take turns N times and each figure is
the median of the N, the overheads with their range (min-max) beside it. A scripted stand-in
(``rexmle.llm.standin``) answers on 127.0.0.1. Figures:

- per-call overhead: the same chat completion (plain, then streamed) sent ``--calls`` times, one
  at a time on a kept-alive connection, directly to the stand-in and through a real gateway
  (LiteLLM proxy, metering callback writing usage lines; where the code has it, the guard's
  direct path, ``rexmle.llm.fast_path``, serves these calls): p50/p90 of both and their
  difference;
  the same through the relay a sandboxed agent uses (127.0.0.1 port -> unix socket -> gateway
  port, ``rexmle.runner.sandbox.shim``);
- the gateway's start time (process start to first healthy answer) and its resident memory
  (proxy process group, after the calls);
- the node's shared gateway (``rexmle.llm.node_gateway``, where the code has it): the time a
  first process takes to start it (keeper and proxy) and the time a second one takes to attach;
- budget overshoot: 40 calls sent at once to a stand-in that answers each after 0.5 s, for a run
  whose budget (0.05 USD) leaves room for 4.995 calls of 0.01001 USD: the calls that reached the
  upstream, those beyond the 5 the budget allows, the USD spent past the budget, and the calls the
  run's totals hold when they are taken as the harness does, once the gateway stops the run;
- the time to install the gateway's environment (warm: already installed; ``--cold-install``
  installs into a fresh folder, re-using uv's download cache).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import math
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

KEY_ENV = "REXMLE_BENCH_STANDIN_KEY"
REPO = Path(__file__).resolve().parent.parent
OVERSHOOT_BUDGET_USD = 0.05
OVERSHOOT_CALLS = 40
OVERSHOOT_DELAY_S = 0.5
LONG_PROMPT = {
    "model": "gw/gpt-5",
    "max_completion_tokens": 10,
    "messages": [{"role": "user", "content": "word " * 8000}],
}
CALL_USD = (8000 * 1.25 + 1 * 10.0) / 1e6
"""One LONG_PROMPT call answered "ok": 8000 input tokens, 1 output token at 1.25 / 10 per 1M."""


def post(port: int, path: str, body: dict[str, Any], token: str) -> int:
    """The status of one call on a fresh connection."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    connection.request("POST", path, json.dumps(body), headers)
    answer = connection.getresponse()
    answer.read()
    connection.close()
    return answer.status


def bearer(token: str) -> dict[str, str]:
    """The OpenAI-style authorisation header."""
    return {"Authorization": f"Bearer {token}"}


def timed_calls(
    port: int, path: str, body: dict[str, Any], headers: dict[str, str], n: int
) -> list[float]:
    """Seconds per call for ``n`` sequential calls on one kept-alive connection."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    sent = {"Content-Type": "application/json", **headers}
    seconds = []
    for _ in range(n):
        started = time.perf_counter()
        connection.request("POST", path, json.dumps(body), sent)
        answer = connection.getresponse()
        answer.read()
        if answer.status != 200:
            msg = f"{path}: call failed with {answer.status}"
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


def overshoot(gateway: Any, upstream: Any, folder: Path) -> dict[str, float]:
    """40 parallel calls against a slow stand-in for a run with room for 4.995 calls."""
    from rexmle.llm.config import Limits
    from rexmle.llm.standin import Reply

    run = folder / "overshoot"
    run.mkdir()
    limits = Limits(budget_usd=OVERSHOOT_BUDGET_USD, max_calls_per_minute=None)
    link = gateway.register("overshoot", run, limits=limits)
    upstream.reset(default=Reply(text="ok", delay_s=OVERSHOOT_DELAY_S))
    workers = [
        threading.Thread(
            target=post,
            args=(gateway.port, "/v1/chat/completions", LONG_PROMPT, link.token),
        )
        for _ in range(OVERSHOOT_CALLS)
    ]
    for worker in workers:
        worker.start()
    deadline = time.monotonic() + 120
    while not link.stop_path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    recorded = link.totals()  # what the harness does once the gateway stops the run
    for worker in workers:
        worker.join()
    reached = len(upstream.completion_requests())
    allowed = math.ceil(OVERSHOOT_BUDGET_USD / CALL_USD)
    return {
        "reached": reached,
        "past_cap_calls": reached - allowed,
        "past_cap_usd": reached * CALL_USD - OVERSHOOT_BUDGET_USD,
        "recorded": recorded.calls - recorded.calls_refused,
    }


def measure(calls: int) -> dict[str, float]:
    """Every figure of the module docstring but the install times, for the code importable."""
    from rexmle.llm.config import parse_llm_config
    from rexmle.llm.environment import install_gateway
    from rexmle.llm.gateway import Gateway
    from rexmle.llm.standin import Reply, ScriptedUpstream

    env, _ = install_gateway()
    figures: dict[str, float] = {}
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
            figures["start_s"] = gateway.startup_s
            link = gateway.register("bench", Path(folder))
            for stream in (False, True):
                body = {
                    "model": "gw/gpt-5",
                    "messages": [{"role": "user", "content": "measure me"}],
                    "stream": stream,
                }
                direct_body = {**body, "model": "gpt-5"}
                timed_calls(
                    gateway.port, "/v1/chat/completions", body, bearer(link.token), 20
                )  # warm-up
                direct = timed_calls(
                    upstream.port,
                    "/v1/chat/completions",
                    direct_body,
                    bearer(os.environ[KEY_ENV]),
                    calls,
                )
                through = timed_calls(
                    gateway.port, "/v1/chat/completions", body, bearer(link.token), calls
                )
                with relayed(gateway.port, Path(folder)) as relay_port:
                    timed_calls(relay_port, "/v1/chat/completions", body, bearer(link.token), 5)
                    relay = timed_calls(
                        relay_port, "/v1/chat/completions", body, bearer(link.token), calls
                    )
                kind = "streamed" if stream else "plain"
                for q in (0.5, 0.9):
                    d, g = percentile_ms(direct, q), percentile_ms(through, q)
                    name = f"{kind}_p{round(q * 100)}"
                    figures[f"{name}_direct_ms"] = d
                    figures[f"{name}_gateway_ms"] = g
                    figures[f"{name}_overhead_ms"] = g - d
                    figures[f"relay_{name}_direct_ms"] = d
                    figures[f"relay_{name}_gateway_ms"] = percentile_ms(relay, q)
                    figures[f"relay_{name}_overhead_ms"] = percentile_ms(relay, q) - d
            assert gateway.process is not None
            figures["rss_mib"] = rss_mb(gateway.process.pid)
            figures.update(
                {f"overshoot_{k}": v for k, v in overshoot(gateway, upstream, Path(folder)).items()}
            )
        figures.update(shared_start(config, env))
    return figures


@contextlib.contextmanager
def relayed(port: int, folder: Path) -> Iterator[int]:
    """A port that reaches ``port`` the way a sandboxed agent does: the sandbox side's TCP relay
    to a unix socket, the host side's bridge from it to the gateway (both in this process).
    """
    from rexmle.runner.sandbox.shim import start_relay, start_unix_bridge

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        relay_port = int(probe.getsockname()[1])
    path = folder / "relay.sock"
    bridge = start_unix_bridge(path, port)
    relay = start_relay(relay_port, path)
    try:
        yield relay_port
    finally:
        relay.close()
        bridge.close()
        path.unlink(missing_ok=True)


def shared_start(config: Any, env: Any) -> dict[str, float]:
    """Seconds to start the node's shared gateway and to attach a second user to it (NaN
    where the code has no shared gateway).
    """
    try:
        from rexmle.llm.node_gateway import RUNTIME_ENV, SharedGateway
    except ImportError:
        return {"shared_start_s": math.nan, "shared_attach_s": math.nan}
    with tempfile.TemporaryDirectory() as runtime:
        os.environ[RUNTIME_ENV] = runtime
        first = SharedGateway(config, env=env).start()
        second = SharedGateway(config, env=env).start()
        assert second.port == first.port
        figures = {"shared_start_s": first.startup_s, "shared_attach_s": second.startup_s}
        second.stop()
        first.stop()
        del os.environ[RUNTIME_ENV]
    return figures


def run_side(root: Path, calls: int) -> dict[str, float]:
    """:func:`measure` in a fresh process importing ``rexmle`` from ``root``."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--calls", str(calls), "--json"],
        env=env, cwd=root, capture_output=True, text=True, timeout=1800, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        msg = f"the measurement with the code in {root} failed:\n{done.stderr[-3000:]}"
        raise RuntimeError(msg)
    return json.loads(done.stdout.strip().splitlines()[-1])


ROWS = (
    ("plain p50: direct / gateway / overhead (ms)", "plain_p50"),
    ("plain p90: direct / gateway / overhead (ms)", "plain_p90"),
    ("streamed p50: direct / gateway / overhead (ms)", "streamed_p50"),
    ("streamed p90: direct / gateway / overhead (ms)", "streamed_p90"),
    ("plain p50 through the relay: direct / gateway / overhead (ms)", "relay_plain_p50"),
    ("plain p90 through the relay: direct / gateway / overhead (ms)", "relay_plain_p90"),
    ("streamed p50 through the relay: direct / gateway / overhead (ms)", "relay_streamed_p50"),
    ("streamed p90 through the relay: direct / gateway / overhead (ms)", "relay_streamed_p90"),
)


def median_figures(runs: list[dict[str, float]]) -> dict[str, float]:
    """Each figure's median over ``runs``; ``<name>_min`` / ``<name>_max`` for the overheads."""
    figures = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
    for key in [k for k in runs[0] if k.endswith("_overhead_ms")]:
        figures[key + "_min"] = min(run[key] for run in runs)
        figures[key + "_max"] = max(run[key] for run in runs)
    return figures


def table(sides: dict[str, dict[str, float]], calls: int, repeats: int = 1) -> str:
    """The figures of each side as a Markdown table."""
    names = list(sides)
    runs = f", median of {repeats} runs (range)" if repeats > 1 else ""
    lines = [
        f"| figure ({calls} calls{runs}) | " + " | ".join(names) + " |",
        "|---" * (1 + len(names)) + "|",
    ]
    for label, key in ROWS:
        cells = []
        for s in sides.values():
            spread = key + "_overhead_ms_min"
            extra = f" ({s[spread]:.2f}-{s[key + '_overhead_ms_max']:.2f})" if repeats > 1 else ""
            cells.append(
                f"{s[key + '_direct_ms']:.2f} / {s[key + '_gateway_ms']:.2f} / "
                f"**{s[key + '_overhead_ms']:.2f}**{extra}"
            )
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines.append(
        "| gateway start (s) | " + " | ".join(f"{s['start_s']:.1f}" for s in sides.values()) + " |"
    )
    lines.append(
        "| shared gateway: first start / a second process attaching (s) | "
        + " | ".join(
            f"{s.get('shared_start_s', math.nan):.2f} / {s.get('shared_attach_s', math.nan):.3f}"
            for s in sides.values()
        )
        + " |"
    )
    lines.append(
        "| gateway RSS after the calls (MiB) | "
        + " | ".join(f"{s['rss_mib']:.0f}" for s in sides.values())
        + " |"
    )
    lines.append(
        f"| {OVERSHOOT_CALLS} parallel calls, budget {OVERSHOOT_BUDGET_USD} USD: reached the upstream | "
        + " | ".join(f"{s['overshoot_reached']:.0f}" for s in sides.values())
        + " |"
    )
    lines.append(
        "| calls / USD past the budget | "
        + " | ".join(
            f"{s['overshoot_past_cap_calls']:.0f} / {s['overshoot_past_cap_usd']:.5f}"
            for s in sides.values()
        )
        + " |"
    )
    lines.append(
        "| answered calls in the run's totals | "
        + " | ".join(f"{s['overshoot_recorded']:.0f}" for s in sides.values())
        + " |"
    )
    return "\n".join(lines)


def checkout(rev: str, into: Path) -> Path:
    """The ``rexmle`` package of commit ``rev``, extracted under ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", rev, "rexmle"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def main() -> None:
    """Print the figures (see the module docstring)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--before", default=None, help="a commit to measure first, e.g. main")
    parser.add_argument("--repeat", type=int, default=1, help="runs per side, taking turns")
    parser.add_argument("--cold-install", action="store_true")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.json:
        print(json.dumps(measure(options.calls)))
        return
    from rexmle.llm.environment import install_gateway

    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    started = time.monotonic()
    install_gateway()
    print(f"env install (warm): {time.monotonic() - started:.2f} s")
    if options.cold_install:
        with tempfile.TemporaryDirectory(dir=Path.home()) as cache:
            started = time.monotonic()
            install_gateway(Path(cache))
            print(f"env install (cold folder, uv cache warm): {time.monotonic() - started:.1f} s")
    runs: dict[str, list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as before_root:
        roots = {"after (working tree)": REPO}
        if options.before:
            before = checkout(options.before, Path(before_root))
            roots = {f"before ({options.before})": before, **roots}
        for _ in range(options.repeat):
            for name, root in roots.items():
                runs.setdefault(name, []).append(run_side(root, options.calls))
    sides = {name: median_figures(found) for name, found in runs.items()}
    print(table(sides, options.calls, options.repeat))


if __name__ == "__main__":
    main()
