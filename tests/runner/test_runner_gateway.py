"""Runs with the LLM gateway: a network-less agent reaches LLMs through its relay, never holds a
provider key, and is stopped within seconds when its budget or rate cap is spent.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from runner_support import COPY_SAMPLE, needs_bwrap

from rexmle.agents.registry import load_agent
from rexmle.llm.config import parse_llm_config
from rexmle.llm.gateway import Gateway
from rexmle.llm.standin import Reply
from rexmle.records.runs import RunConfig, read_record, run_dir
from rexmle.runner.executor import RunJob, RunOptions, execute_run
from rexmle.runner.sandbox.bwrap import BwrapSandbox
from rexmle.runner.settings import RunSettings

pytestmark = [pytest.mark.slow, needs_bwrap()]

STANDIN_KEY = "sk-standin-provider-key-0123456789"  # tests/conftest.py

AGENT = """
import json, os, time, urllib.error, urllib.request

seen = {"env": dict(os.environ), "processes": []}
for pid in filter(str.isdigit, os.listdir("/proc")):
    for part in ("cmdline", "environ"):
        try:
            with open(f"/proc/{pid}/{part}", "rb") as handle:
                seen["processes"].append(handle.read().decode(errors="replace"))
        except OSError:
            pass
for root in (os.environ["WORKSPACE"], "/tmp", os.environ["HOME"]):
    for folder, _, files in os.walk(root):
        for name in files:
            try:
                with open(os.path.join(folder, name), "rb") as handle:
                    seen["processes"].append(handle.read(1 << 20).decode(errors="replace"))
            except OSError:
                pass
with open("seen.json", "w") as handle:
    json.dump(seen, handle)

body = json.dumps({"model": "gw/gpt-5", "messages": [{"role": "user", "content": "go"}]})
while True:
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"] + "/chat/completions",
        data=body.encode(),
        headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
                 "Content-Type": "application/json"},
    )
    try:
        answer = json.loads(urllib.request.urlopen(request, timeout=30).read())
        print("answer:", answer["choices"][0]["message"]["content"], flush=True)
    except urllib.error.HTTPError as error:
        print("refused:", error.code, error.read().decode()[:200], flush=True)
        time.sleep(3600)  # agents hang on a refused call: the harness must stop them
"""

COMMAND = f"{COPY_SAMPLE} && python - <<'EOF'\n{AGENT}\nEOF\n"


def standin_config(base_url: str, key_env: str, *, budget_usd: float, per_minute: int) -> str:
    """An LLM config with one model, gw/gpt-5 at 1 / 0.5 / 2 USD per 1M, on the stand-in."""
    return f"""
providers:
  standin: {{api: openai, base_url: "{base_url}/v1", key_env: {key_env}}}
models:
  gpt-5: {{provider: standin, upstream: gpt-5, price: {{input: 1.0, cached_input: 0.5, output: 2.0}}}}
limits: {{budget_usd: {budget_usd}, max_calls_per_minute: {per_minute}}}
"""


def run_with_gateway(
    gateway,
    dirs,
    tmp_path: Path,
    *,
    env: list[str] | None = None,
    budget: float | None = None,
    uncapped: bool | None = None,
):
    spec = load_agent("command").with_overrides(
        command=COMMAND, time_limit_s=120.0, network=False, env=env
    )
    config = RunConfig(
        task="isles22",
        task_spec_version=1,
        agent=spec,
        seed=0,
        time_limit_s=spec.time_limit_s,
        mini=True,
        llm_budget_usd=budget,
        llm_uncapped=uncapped,
    )
    runs_dir = tmp_path / "runs"
    folder = run_dir(runs_dir, "test", "isles22", spec.id, 0)
    options = RunOptions(
        settings=RunSettings(
            runs_dir=runs_dir,
            data_dir=dirs.root.parent,
            kill_grace_s=1.0,
            grade_workers=1,
            llm_for_every_run=True,
        ),
        sandbox=BwrapSandbox(),
        gateway=gateway,
    )
    started = time.monotonic()
    record = execute_run(RunJob(config=config, group="test", folder=folder), options)
    return record, folder, time.monotonic() - started


def test_budget_stop_ends_a_hanging_agent_and_grades_its_submission(
    llm_gateway, upstream, isles22_dirs, tmp_path, monkeypatch
):
    # one call of 10000 input tokens costs 0.0125 USD: over the 0.01 USD budget at once
    upstream.reset(default=Reply(text="costly", input_tokens=10_000, output_tokens=1))
    monkeypatch.setenv("OPENAI_API_KEY", STANDIN_KEY)
    record, folder, seconds = run_with_gateway(
        llm_gateway, isles22_dirs, tmp_path, env=["OPENAI_API_KEY"]
    )
    assert record.status == "budget_exceeded", record.error
    assert "budget of 0.01 USD spent" in (record.error or "")
    assert seconds < 60  # the agent would sleep for an hour, the time limit is 120 s
    assert record.grade is not None
    assert record.grade.valid
    assert record.llm is not None
    assert record.llm.calls - record.llm.calls_refused == 1
    assert record.llm.cost_usd == pytest.approx(0.01251, abs=1e-12)
    assert record.llm.budget_usd == 0.01
    assert read_record(folder).llm == record.llm
    assert "answer: costly" in (folder / "agent.stdout.log").read_text()
    assert (folder / "llm_usage.jsonl").is_file()
    assert (folder / "llm_trajectory.jsonl").is_file()
    assert record.sandbox is not None
    assert record.sandbox.network_isolated


def test_a_run_budget_from_its_config_replaces_the_gateway_default(
    llm_gateway, upstream, isles22_dirs, tmp_path
):
    upstream.reset(default=Reply(text="costly", input_tokens=10_000, output_tokens=1))
    record, _, _ = run_with_gateway(llm_gateway, isles22_dirs, tmp_path, budget=1.0)
    # 0.01251 USD per call stays under 1.0 USD: the rate cap (3 per minute) stops the run
    assert record.status == "budget_exceeded"
    assert "3 calls per minute" in (record.error or "")
    assert record.llm is not None
    assert record.llm.budget_usd == 1.0
    assert record.llm.cost_usd == pytest.approx(3 * 0.01251, abs=1e-12)


def test_an_uncapped_run_has_no_usd_cap_and_is_still_metered(
    llm_gateway, upstream, isles22_dirs, tmp_path
):
    # the gateway's default is 0.01 USD (one call of 0.01251 USD passes it); the paper condition's
    # budget_usd: none lifts it, so only the rate cap (3 per minute) stops the looping agent
    upstream.reset(default=Reply(text="costly", input_tokens=10_000, output_tokens=1))
    record, _, _ = run_with_gateway(llm_gateway, isles22_dirs, tmp_path, uncapped=True)
    assert record.status == "budget_exceeded"
    assert "3 calls per minute" in (record.error or "")
    assert record.llm is not None
    assert record.llm.budget_usd is None
    assert record.llm.cost_usd == pytest.approx(3 * 0.01251, abs=1e-12)


def test_the_provider_key_never_enters_the_sandbox(
    llm_gateway, upstream, isles22_dirs, tmp_path, monkeypatch
):
    upstream.reset(default=Reply(text="cheap", input_tokens=1, output_tokens=1))
    monkeypatch.setenv("OPENAI_API_KEY", STANDIN_KEY)  # even when the host has it and env asks
    record, folder, _ = run_with_gateway(
        llm_gateway, isles22_dirs, tmp_path, env=["OPENAI_API_KEY"]
    )
    seen_text = (folder / "workspace" / "seen.json").read_text()
    seen = json.loads(seen_text)
    assert STANDIN_KEY not in seen_text
    assert seen["env"]["OPENAI_API_KEY"].startswith("rxg-")
    assert seen["env"]["OPENAI_BASE_URL"] == f"{llm_gateway.base_url}/v1"
    assert all(r.headers["authorization"] == f"Bearer {STANDIN_KEY}"
               for r in upstream.completion_requests())  # fmt: skip
    # the rate cap (3 calls per minute) stops the looping agent
    assert record.status == "budget_exceeded"
    assert "3 calls per minute" in (record.error or "")
    assert record.llm is not None
    assert record.llm.calls_refused >= 1
    assert STANDIN_KEY not in (folder / "llm_trajectory.jsonl").read_text()
    assert os.environ["OPENAI_API_KEY"] == STANDIN_KEY


def serves(port: int) -> bool:
    """Whether something accepts connections on 127.0.0.1:``port``."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except OSError:
        return False
    return True


def test_run_command_with_llm_config_meters_a_command_agent_and_stops_the_gateway(
    llm_standin, upstream, isles22_dirs, tmp_path
):
    upstream.reset(default=Reply(text="from the stand-in", input_tokens=100, output_tokens=10))
    config = tmp_path / "llm.yaml"
    config.write_text(
        standin_config(llm_standin.base_url, "STANDIN_KEY", budget_usd=1.0, per_minute=60)
    )
    agent = (
        f'{COPY_SAMPLE} && python -c "import json, os, urllib.request; '
        "r = urllib.request.Request(os.environ['OPENAI_BASE_URL'] + '/chat/completions', "
        "data=json.dumps({'model': 'gw/gpt-5', 'messages': [{'role': 'user', 'content': 'x'}]})"
        ".encode(), headers={'Authorization': 'Bearer ' + os.environ['OPENAI_API_KEY'], "
        "'Content-Type': 'application/json'}); "
        "print(json.loads(urllib.request.urlopen(r).read())['choices'][0]['message']['content'])\""
    )
    done = subprocess.run(
        [sys.executable, "-m", "rexmle.cli", "run", "--agent", "command", "--agent-cmd", agent,
         "--task", "isles22", "--mini", "--data-dir", str(isles22_dirs.root.parent), "--runs-dir",
         str(tmp_path / "runs"), "--sandbox", "bwrap", "--no-network", "--llm-config",
         str(config), "--json"],
        env={**os.environ, "STANDIN_KEY": STANDIN_KEY},
        capture_output=True, text=True, timeout=400, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (record,) = json.loads(done.stdout)
    assert record["status"] == "completed"
    assert record["llm"]["calls"] == 1
    # 100 * 1.0 + 10 * 2.0 = 120 per 1M
    assert record["llm"]["cost_usd"] == pytest.approx(120e-6, abs=1e-12)
    folder = Path(record["folder"])
    assert "from the stand-in" in (folder / "agent.stdout.log").read_text()
    assert "LLM gateway on http://127.0.0.1:" in done.stderr
    shown = re.search(r"LLM gateway on http://127\.0\.0\.1:(\d+)", done.stderr)
    assert shown is not None
    assert not serves(int(shown.group(1)))  # the gateway was stopped with the command
    gateway_log = (tmp_path / "runs" / "default" / "llm_gateway.log").read_text()
    assert "Uvicorn running" in gateway_log
    assert STANDIN_KEY not in gateway_log


def test_a_gateway_that_dies_during_a_run_makes_it_a_harness_failure(
    llm_standin, upstream, isles22_dirs, tmp_path, monkeypatch
):
    upstream.reset(default=Reply(text="first", input_tokens=1, output_tokens=1))
    monkeypatch.setenv("REXMLE_TEST_STANDIN_KEY", STANDIN_KEY)
    text = standin_config(
        llm_standin.base_url, "REXMLE_TEST_STANDIN_KEY", budget_usd=10.0, per_minute=1000
    )
    config = parse_llm_config(text, "test")
    with Gateway(config) as gateway:
        outcome: dict[str, object] = {}
        worker = threading.Thread(
            target=lambda: outcome.update(run=run_with_gateway(gateway, isles22_dirs, tmp_path))
        )
        worker.start()
        logs = list((tmp_path / "runs").glob("**/agent.stdout.log"))
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (logs and "answer: first" in logs[0].read_text()):
            time.sleep(0.1)
            logs = list((tmp_path / "runs").glob("**/agent.stdout.log"))
        assert gateway.process is not None
        os.killpg(gateway.process.pid, signal.SIGKILL)
        worker.join(timeout=120)
    record, _, seconds = outcome["run"]  # type: ignore[misc]
    assert record.status == "infra_error"
    assert "the LLM gateway exited" in (record.error or "")
    assert seconds < 100
