"""The node's shared gateway with real processes: two runs of two processes metered apart, the
gateway gone once the last leaves (killed included), the runtime folder's safety checks.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from rexmle.llm.config import parse_llm_config
from rexmle.llm.gateway import GatewayError
from rexmle.llm.node_gateway import RUNTIME_ENV, SharedGateway, gateway_key, runtime_dir
from rexmle.llm.standin import Reply
from rexmle.llm.usage import summarize_usage

STANDIN_KEY_ENV = "REXMLE_TEST_STANDIN_KEY"
STANDIN_KEY = "sk-standin-provider-key-0123456789"  # tests/conftest.py
CLIENT = Path(__file__).with_name("shared_gateway_client.py")


def config_text(base_url: str, price: float = 1.25) -> str:
    return f"""
providers:
  openai-like: {{api: openai, base_url: "{base_url}/v1", key_env: {STANDIN_KEY_ENV}}}
models:
  gpt-5: {{provider: openai-like, upstream: gpt-5,
          price: {{input: {price}, cached_input: 0.125, output: 10.0}}}}
limits: {{budget_usd: 1.0, max_calls_per_minute: 100}}
"""


class Client:
    """One child process using the shared gateway (tests/llm/shared_gateway_client.py)."""

    def __init__(self, config: Path, folder: Path, budget: float, runtime: Path) -> None:
        folder.mkdir()
        env = {**os.environ, RUNTIME_ENV: str(runtime), STANDIN_KEY_ENV: STANDIN_KEY}
        self.process = subprocess.Popen(
            [sys.executable, str(CLIENT), str(config), str(folder), str(budget)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        self.hello: dict[str, Any] = json.loads(self._line())

    def _line(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, f"the client exited with {self.process.wait()}"
        return line

    def ask(self, command: str) -> str:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self._line().strip()


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def port_open(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def wait_until(condition, timeout_s: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


@pytest.mark.slow
def test_two_processes_share_one_gateway_each_run_metered_apart(upstream, tmp_path):
    upstream.reset(default=Reply(text="ok", input_tokens=1000, output_tokens=100))
    runtime = tmp_path / "runtime"
    config = tmp_path / "llm.yaml"
    config.write_text(config_text(upstream.base_url), encoding="utf-8")
    call_usd = (1000 * 1.25 + 100 * 10.0) / 1e6
    first = Client(config, tmp_path / "run-a", 1.0, runtime)
    second = Client(config, tmp_path / "run-b", 1.5 * call_usd, runtime)
    try:
        # one gateway: the second process attached to the first one's keeper and port
        assert second.hello["port"] == first.hello["port"]
        assert second.hello["keeper"] == first.hello["keeper"]
        keeper, port = first.hello["keeper"], first.hello["port"]
        assert [first.ask("call") for _ in range(3)] == ["200"] * 3
        # run B's budget (1.5 calls) is its own: its second call is allowed, its third refused
        assert [second.ask("call") for _ in range(3)] == ["200", "200", "403"]
        assert first.ask("call") == "200"  # run A is not stopped by B's spent budget
        assert second.ask("call not-a-registered-token") == "401"
        totals_a = json.loads(first.ask("leave"))
        assert first.process.wait(timeout=30) == 0
        # A's token ended with its run: another process cannot spend with it
        assert second.ask(f"call {first.hello['token']}") == "401"
        assert alive(keeper), "the gateway stopped while a run still used it"
        assert (totals_a["calls"], totals_a["calls_refused"]) == (4, 0)
        assert totals_a["cost_usd"] == pytest.approx(4 * call_usd)
        usage_b = summarize_usage(tmp_path / "run-b" / "llm_usage.jsonl", budget_usd=None)
        assert (usage_b.calls, usage_b.calls_refused) == (3, 1)
        assert usage_b.cost_usd == pytest.approx(2 * call_usd)
        assert not (tmp_path / "run-a" / "llm_trajectory.jsonl").read_text().count("403")
        # the last run's process is killed: its dead lease does not keep the gateway
        second.process.send_signal(signal.SIGKILL)
        second.process.wait(timeout=30)
        assert wait_until(lambda: not alive(keeper)), "the gateway outlived its last run"
        assert not port_open(port)
        (folder,) = runtime.iterdir()
        assert not (folder / "state.json").exists()
        assert not list((folder / "leases").iterdir())
    finally:
        for client in (first, second):
            if client.process.poll() is None:
                client.process.kill()


def test_the_key_separates_configs_prices_and_provider_keys(tmp_path):
    python = tmp_path / "python"
    base = parse_llm_config(config_text("http://127.0.0.1:9"), "a")
    dearer = parse_llm_config(config_text("http://127.0.0.1:9", price=2.5), "b")
    environ = {STANDIN_KEY_ENV: "sk-one-key-0123456789"}
    key = gateway_key(base, environ, python)
    assert gateway_key(base, dict(environ), python) == key
    assert gateway_key(dearer, environ, python) != key
    assert gateway_key(base, {STANDIN_KEY_ENV: "sk-other-key-0123456"}, python) != key
    assert gateway_key(base, environ, tmp_path / "other-python") != key
    in_job = gateway_key(base, {**environ, "SLURM_JOB_ID": "41"}, python)
    assert in_job != key
    assert gateway_key(base, {**environ, "SLURM_JOB_ID": "42"}, python) != in_job
    assert "sk-one-key" not in key


def test_the_runtime_folder_must_be_private(tmp_path, monkeypatch):
    folder = tmp_path / "rt"
    monkeypatch.setenv(RUNTIME_ENV, str(folder))
    assert runtime_dir() == folder
    assert folder.stat().st_mode & 0o777 == 0o700
    folder.chmod(0o755)
    with pytest.raises(GatewayError, match="open to other users"):
        runtime_dir()


@pytest.mark.slow
def test_a_killed_keeper_takes_its_proxy_along_and_its_runs_see_it(upstream, tmp_path, monkeypatch):
    monkeypatch.setenv(RUNTIME_ENV, str(tmp_path / "runtime"))
    monkeypatch.setenv(STANDIN_KEY_ENV, STANDIN_KEY)
    gateway = SharedGateway(parse_llm_config(config_text(upstream.base_url), "test")).start()
    try:
        link = gateway.register("run", tmp_path)
        assert link.check_gateway() is None
        assert gateway.keeper is not None
        os.kill(gateway.keeper.pid, signal.SIGKILL)
        assert wait_until(lambda: not port_open(gateway.port)), "the proxy outlived its keeper"
        assert "the LLM gateway exited" in (link.check_gateway() or "")
    finally:
        gateway.stop()


@pytest.mark.slow
def test_a_killed_harness_leaves_no_token_another_run_could_spend(upstream, tmp_path):
    # a harness killed before it unregistered its run: the keeper lives on for the other
    # process, but the dead process's token is refused once its lease is gone
    runtime = tmp_path / "runtime"
    config = tmp_path / "llm.yaml"
    config.write_text(config_text(upstream.base_url), encoding="utf-8")
    first = Client(config, tmp_path / "run-a", 1.0, runtime)
    second = Client(config, tmp_path / "run-b", 1.0, runtime)
    try:
        orphan = first.hello["token"]
        assert second.ask(f"call {orphan}") == "200"  # valid while its harness lives
        first.process.send_signal(signal.SIGKILL)
        first.process.wait(timeout=30)
        (folder,) = runtime.iterdir()
        assert wait_until(lambda: not list((folder / "leases").glob(f"{first.process.pid}-*")))
        assert wait_until(lambda: second.ask(f"call {orphan}") == "401", timeout_s=10)
        assert second.ask("call") == "200"  # the living run keeps its own
        assert alive(second.hello["keeper"])
    finally:
        for client in (first, second):
            if client.process.poll() is None:
                client.process.kill()
