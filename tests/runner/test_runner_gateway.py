"""Runs with the LLM gateway: a network-less agent reaches LLMs through its relay, never holds a
provider key, and is stopped within seconds when its budget or rate cap is spent."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from conftest import COPY_SAMPLE, needs_bwrap

from rexmle.agents.registry import load_agent
from rexmle.llm.standin import Reply
from rexmle.runner.executor import RunJob, RunOptions, execute_run
from rexmle.runner.records import RunConfig, read_record, run_dir
from rexmle.runner.sandbox.bwrap import BwrapSandbox

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


def run_with_gateway(gateway, dirs, tmp_path: Path, *, env: list[str] | None = None):
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
    )
    runs_dir = tmp_path / "runs"
    folder = run_dir(runs_dir, "test", "isles22", spec.id, 0)
    options = RunOptions(
        runs_dir=runs_dir,
        data_dir=dirs.root.parent,
        sandbox=BwrapSandbox(),
        kill_grace_s=1.0,
        grade_workers=1,
        gateway=gateway,
        llm_for_every_run=True,
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
    assert record.grade is not None and record.grade.valid
    assert record.llm is not None
    assert record.llm.calls - record.llm.calls_refused == 1
    assert record.llm.cost_usd == pytest.approx(0.01251, abs=1e-12)
    assert record.llm.budget_usd == 0.01
    assert read_record(folder).llm == record.llm
    assert "answer: costly" in (folder / "agent.stdout.log").read_text()
    assert (folder / "llm_usage.jsonl").is_file()
    assert (folder / "llm_trajectory.jsonl").is_file()
    assert record.sandbox is not None and record.sandbox.network_isolated


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
    assert record.llm is not None and record.llm.calls_refused >= 1
    assert STANDIN_KEY not in (folder / "llm_trajectory.jsonl").read_text()
    assert os.environ["OPENAI_API_KEY"] == STANDIN_KEY
