"""Metering inside the gateway: cost, budget, rate cap, usage lines, redaction, trajectory cap."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rexmle.llm.metering import (
    CUT_MARK,
    REDACTED,
    TRUNCATED_MARK,
    USAGE_TRUNCATED_MARK,
    HoldBack,
    Price,
    Refusal,
    Registry,
    RunEntry,
    RunMeter,
    UsageLine,
    cost_usd,
    estimate_usd,
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


def test_estimate_counts_prompt_characters_and_the_output_limit():
    body = {"messages": [{"role": "user", "content": "x" * 3999}], "max_tokens": 100}
    # chars: "role" + "user" + "content" + 3999 = 4014 -> ceil(4014 / 4) = 1004 tokens in
    assert estimate_usd(GPT5, body, 4096) == pytest.approx((1004 * 1.25 + 100 * 10) / 1e6)
    no_limit = {"input": "abcd"}
    assert estimate_usd(GPT5, no_limit, 4096) == pytest.approx((1 * 1.25 + 4096 * 10) / 1e6)
    responses = {"input": "abcd", "max_output_tokens": 7}
    assert estimate_usd(GPT5, responses, 4096) == pytest.approx((1 * 1.25 + 7 * 10) / 1e6)


def test_calls_are_held_back_while_their_estimates_would_pass_the_budget(tmp_path):
    meter = RunMeter(entry(tmp_path, budget_usd=1.0), [])
    meter.admit("a", 0.4, now=0.0)
    meter.admit("b", 0.4, now=0.0)
    with pytest.raises(HoldBack, match=r"hold 0\.8000 USD"):
        meter.admit("c", 0.4, now=0.0)  # 0.8 reserved + 0.4 > 1.0
    assert not (tmp_path / "stop").exists()  # held back, the run goes on
    meter.record(line(0.1), call_id="a")  # a cost less than its estimate
    meter.admit("c", 0.4, now=0.0)  # 0.1 spent + 0.8 reserved <= 1.0
    meter.record(line(0.5), call_id="b")
    meter.record(line(0.45), call_id="c")
    assert meter.spent_usd == pytest.approx(1.05)
    with pytest.raises(Refusal) as refused:
        meter.admit("d", 0.01, now=0.0)
    assert refused.value.status == 403


def test_a_call_is_admitted_alone_while_budget_is_left_even_over_its_estimate(tmp_path):
    meter = RunMeter(entry(tmp_path, budget_usd=0.01), [])
    meter.admit("a", 0.5, now=0.0)  # nothing in flight: admitted, spent 0 < 0.01
    with pytest.raises(HoldBack):
        meter.admit("b", 0.0, now=0.0)


def test_calls_in_flight_are_capped_and_counted_in_the_busy_file(tmp_path):
    run = entry(tmp_path, max_calls_in_flight=2)
    meter = RunMeter(run, [])
    meter.admit("a", now=0.0)
    meter.admit("b", now=0.0)
    assert run.busy_path.read_text().strip() == "2"
    with pytest.raises(HoldBack, match="2 calls in flight"):
        meter.admit("c", now=0.0)
    meter.record(line(), call_id="a")
    meter.record(line(), call_id="a")  # a second report of the same call is ignored
    assert run.busy_path.read_text().strip() == "1"
    meter.admit("c", now=0.0)
    meter.release("b")
    meter.record(line(), call_id="c")
    assert run.busy_path.read_text().strip() == "0"
    assert len((tmp_path / "llm_usage.jsonl").read_text().splitlines()) == 2


def test_a_call_whose_end_is_never_reported_leaves_the_count_after_the_stale_time(tmp_path):
    meter = RunMeter(entry(tmp_path, max_calls_in_flight=1, stale_after_s=100.0), [])
    meter.admit("lost", now=0.0)
    with pytest.raises(HoldBack):
        meter.admit("next", now=50.0)
    meter.admit("next", now=101.0)


def test_usage_fields_are_cut_and_the_log_is_capped_with_exact_totals(tmp_path):
    meter = RunMeter(entry(tmp_path, usage_max_bytes=30_000), [])  # 2 lines of 11 kB
    huge = "m" * (4 << 20)
    for _ in range(20):
        meter.record(line(0.25, alias=huge, error=huge, dropped_params=[huge] * 1000, tokens_in=3))
    path = tmp_path / "llm_usage.jsonl"
    text = path.read_text()
    assert len(text) < 30_000 + 200
    lines = [json.loads(x) for x in text.splitlines()]
    assert len(lines) == 3
    assert lines[-1]["note"].startswith(USAGE_TRUNCATED_MARK)
    first = lines[0]
    assert len(first["alias"]) == 256
    assert first["alias"].endswith(CUT_MARK)
    assert len(first["error"]) == 2000
    assert len(first["dropped_params"]) == 32
    totals = summarize_usage(path)
    assert totals.usage_truncated
    assert totals.calls == 20
    assert totals.tokens_in == 60
    assert totals.cost_usd == pytest.approx(5.0)


def test_trajectory_strings_are_cut(tmp_path):
    meter = RunMeter(entry(tmp_path, trajectory_max_bytes=64 << 20), [])
    meter.record(line(), {"request": {"messages": [{"content": "y" * (3 << 20)}]}, "k" * 999: 1})
    (entry_line,) = (tmp_path / "llm_trajectory.jsonl").read_text().splitlines()
    assert len(entry_line) < (1 << 20) + 1000
    kept = json.loads(entry_line)
    assert kept["request"]["messages"][0]["content"].endswith(CUT_MARK)
    assert all(len(key) <= 256 for key in kept)
