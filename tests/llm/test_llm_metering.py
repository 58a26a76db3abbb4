"""Metering inside the gateway: cost, budget, rate cap, usage lines, redaction, trajectory cap."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rexmle.llm.metering import (
    REDACTED,
    TRUNCATED_MARK,
    Price,
    Refusal,
    Registry,
    RunEntry,
    RunMeter,
    UsageLine,
    cost_usd,
    register,
    token_id,
)
from rexmle.llm.usage import summarize_usage

GPT5 = Price(input=1.25, cached_input=0.125, output=10.0)


def entry(tmp_path: Path, **overrides: object) -> RunEntry:
    fields: dict[str, object] = {
        "run_id": "r",
        "usage_path": str(tmp_path / "llm_usage.jsonl"),
        "trajectory_path": str(tmp_path / "llm_trajectory.jsonl"),
        "stop_path": str(tmp_path / "stop"),
        "budget_usd": None,
        "max_calls_per_minute": None,
        "trajectory_max_bytes": 1 << 20,
    }
    return RunEntry(**{**fields, **overrides})  # type: ignore[arg-type]


def line(cost: float = 0.0, **overrides: object) -> UsageLine:
    fields: dict[str, object] = {
        "time": "t",
        "alias": "gw/gpt-5",
        "upstream_model": "gpt-5",
        "status": "ok",
        "cost_usd": cost,
    }
    return UsageLine(**{**fields, **overrides})  # type: ignore[arg-type]


def test_cost_charges_cached_input_at_its_own_price():
    # 1000 in (400 cached) and 200 out at 1.25 / 0.125 / 10 USD per 1M:
    # 600 * 1.25 + 400 * 0.125 + 200 * 10 = 750 + 50 + 2000 = 2800 -> 0.0028 USD
    got = cost_usd(GPT5, tokens_in=1000, tokens_cached=400, tokens_out=200)
    assert got == pytest.approx(0.0028, abs=1e-12)


def test_cost_of_nothing_is_zero():
    assert cost_usd(GPT5, tokens_in=0, tokens_cached=0, tokens_out=0) == 0.0


def test_budget_refuses_the_call_after_it_is_spent_and_writes_the_stop_file(tmp_path):
    meter = RunMeter(entry(tmp_path, budget_usd=0.01), [])
    meter.admit(now=0.0)
    meter.record(line(0.006))
    assert not (tmp_path / "stop").exists()
    meter.admit(now=1.0)
    meter.record(line(0.006))  # 0.012 >= 0.01: spent, stop now (no need to wait for a call)
    assert "budget of 0.01 USD spent" in (tmp_path / "stop").read_text()
    with pytest.raises(Refusal) as refused:
        meter.admit(now=2.0)
    assert refused.value.status == 403
    assert "0.0120 USD" in refused.value.message


def test_rate_cap_counts_admitted_calls_in_the_last_minute(tmp_path):
    meter = RunMeter(entry(tmp_path, max_calls_per_minute=3), [])
    for now in (0.0, 10.0, 20.0):
        meter.admit(now=now)
    with pytest.raises(Refusal) as refused:
        meter.admit(now=59.0)
    assert refused.value.status == 429
    assert "3 calls per minute" in (tmp_path / "stop").read_text()
    meter.stopped = None
    meter.admit(now=60.5)  # the call at 0.0 left the window


def test_usage_and_trajectory_never_hold_secrets(tmp_path):
    secret = "sk-provider-0123456789"
    meter = RunMeter(entry(tmp_path), [secret, "rxg-run-token-abcdef"])
    meter.record(
        line(error=f"upstream said: bad key {secret}"),
        {"request": {"messages": [{"content": "my token is rxg-run-token-abcdef"}]}},
    )
    usage = (tmp_path / "llm_usage.jsonl").read_text()
    trajectory = (tmp_path / "llm_trajectory.jsonl").read_text()
    assert secret not in usage
    assert REDACTED in usage
    assert "rxg-run-token-abcdef" not in trajectory
    assert REDACTED in trajectory


def test_trajectory_stops_at_its_size_cap_with_a_mark(tmp_path):
    meter = RunMeter(entry(tmp_path, trajectory_max_bytes=300), [])
    for _ in range(10):
        meter.record(line(), {"response": "x" * 100})
    lines = (tmp_path / "llm_trajectory.jsonl").read_text().splitlines()
    assert json.loads(lines[-1]) == {"note": TRUNCATED_MARK}
    assert sum(len(x) + 1 for x in lines[:-1]) <= 300
    assert len((tmp_path / "llm_usage.jsonl").read_text().splitlines()) == 10  # usage uncapped


def test_registry_finds_registered_tokens_only_while_registered(tmp_path):
    registry = Registry(tmp_path, [])
    path = register(tmp_path, "rxg-token-1", entry(tmp_path))
    assert path.name == f"{token_id('rxg-token-1')}.json"
    assert "rxg-token-1" not in path.read_text()
    meter = registry.meter("rxg-token-1")
    assert meter is not None
    assert registry.meter_by_id(token_id("rxg-token-1")) is meter
    assert registry.meter("rxg-token-2") is None
    assert registry.meter_by_id("../runs/x") is None
    path.unlink()
    assert registry.meter("rxg-token-1") is None


def test_summarize_usage_adds_every_line(tmp_path):
    meter = RunMeter(entry(tmp_path), [])
    meter.record(line(0.5, tokens_in=10, tokens_out=4, tokens_cached=3, tokens_reasoning=1))
    meter.record(line(0.25, tokens_in=5, tokens_out=2))
    meter.record(line(status="refused"))
    meter.record(line(status="error"))
    totals = summarize_usage(tmp_path / "llm_usage.jsonl", budget_usd=2.0)
    assert (totals.calls, totals.calls_refused, totals.calls_failed) == (4, 1, 1)
    assert (totals.tokens_in, totals.tokens_out, totals.tokens_cached) == (15, 6, 3)
    assert totals.tokens_reasoning == 1
    assert totals.cost_usd == pytest.approx(0.75)
    assert totals.budget_usd == 2.0
    assert summarize_usage(tmp_path / "absent.jsonl").calls == 0


def test_summarize_usage_names_a_broken_line(tmp_path):
    path = tmp_path / "llm_usage.jsonl"
    path.write_text('{"status": "ok"}\n')
    with pytest.raises(ValueError, match="line 1 is not a usage line"):
        summarize_usage(path)
