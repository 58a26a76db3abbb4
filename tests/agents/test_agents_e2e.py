"""The paper's agents end to end (``make test-agents``, opt-in: marker ``agents``).

Each agent's locked environment is installed (network to PyPI on first use), then ``rexmle run``
runs it for a few steps on ``isles22 --mini`` in the default sandbox with the network OFF. Its
LLM calls go through the LLM gateway (``--llm-config``) to a scripted upstream on 127.0.0.1
whose replies are code the agent runs (``scripted_agent``). Checked: a GRADED valid
submission, usage recorded by the gateway, the environment's lock hash in run.json, and no
provider key in the sandbox.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rexmle.agents.environments import install_env, resolve_env
from tests.agents import scripted_agent, scripted_rdagent

pytestmark = pytest.mark.agents

STANDIN_KEY_ENV = "REXMLE_TEST_UPSTREAM_KEY"
STANDIN_KEY = "sk-upstream-test-key-never-in-a-sandbox"
ACCEPTED_STATUSES = {
    "aide": {"completed"},
    "ml-master": {"completed", "agent_error"},  # it exits 1 from a logging error at its end
    "rdagent": {"completed"},
}
RESPONDERS = {"aide": scripted_agent, "ml-master": scripted_agent, "rdagent": scripted_rdagent}
CURRENT = {"agent": "aide"}
"""The agent whose scripted replies the stand-in gives now (the tests run one at a time)."""


@pytest.fixture(scope="module")
def upstream():
    standin = pytest.importorskip("rexmle.llm.standin", reason="the LLM gateway is not installed")

    def respond(request):
        text, calls = RESPONDERS[CURRENT["agent"]].reply_for(request.body or {})
        return standin.Reply(
            text=text, tool_calls=tuple(standin.ToolCall(name=n, arguments=a) for n, a in calls)
        )

    with standin.ScriptedUpstream(api_keys={STANDIN_KEY}, responder=respond) as live:
        yield live


def llm_config(path: Path, base_url: str) -> Path:
    path.write_text(
        f"""
providers:
  scripted: {{api: openai, base_url: "{base_url}/v1", key_env: {STANDIN_KEY_ENV}}}
models:
  gpt-5: {{provider: scripted, upstream: gpt-5,
          price: {{input: 1.25, cached_input: 0.125, output: 10.0}}}}
  text-embedding-3-small: {{provider: scripted, upstream: text-embedding-3-small,
          price: {{input: 0.02, cached_input: 0.02, output: 0.0}}}}
limits: {{budget_usd: 5.0, max_calls_per_minute: 600}}
"""
    )
    return path


def ml_master_declaration(folder: Path) -> Path:
    """ML-Master with one parallel search (the paper's 3 need 3 CPU cores)."""
    from rexmle.agents.registry import load_agent

    spec = load_agent("ml-master")
    data = spec.model_dump()
    data["id"] = "ml-master-e2e"
    data["llm"]["options"]["agent.search.parallel_search_num"] = 1
    path = folder / "ml-master-e2e.yaml"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("agent", sorted(ACCEPTED_STATUSES))
def test_agent_runs_end_to_end_to_a_graded_submission(agent, upstream, tmp_path: Path):
    env = resolve_env(agent)
    install_env(env, progress=lambda _line: None)
    CURRENT["agent"] = agent
    accepted = ACCEPTED_STATUSES[agent]
    agent_arg = ["--agent", agent]
    if agent == "ml-master":
        agent_arg = ["--agent", str(ml_master_declaration(tmp_path))]
    runs = tmp_path / "runs"
    argv = [sys.executable, "-m", "rexmle.cli", "run", *agent_arg]
    argv += ["--task", "isles22", "--mini", "--data-dir", str(tmp_path / "data")]
    argv += ["--runs-dir", str(runs), "--steps", "2", "--step-timeout", "120"]
    argv += [
        "--time-limit",
        "900",
        "--llm-config",
        str(llm_config(tmp_path / "llm.yaml", upstream.base_url)),
    ]
    host_env = {**os.environ, STANDIN_KEY_ENV: STANDIN_KEY}
    done = subprocess.run(argv, env=host_env, capture_output=True, text=True, timeout=1500)
    (record_file,) = runs.glob("default/isles22/*/seed-0/run.json")
    folder = record_file.parent
    record = json.loads(record_file.read_text())
    logs = (folder / "agent.stderr.log").read_text(errors="replace")[-3000:]
    assert record["status"] in accepted, (
        record["status"],
        record["error"],
        done.stderr[-2000:],
        logs,
    )
    assert record["grade"]["valid"] is True, (record["grade"], logs)
    assert record["sandbox"]["network_isolated"] is True
    assert record["agent_env"]["lock_hash"] == env.lock_hash
    usage = [json.loads(line) for line in (folder / "llm_usage.jsonl").read_text().splitlines()]
    assert len(usage) >= 2
    assert record["llm"]["calls"] == len(usage)
    assert len(upstream.completion_requests()) >= 2
    kept = [json.loads(line) for line in (folder / "agent_output" / "submissions.jsonl").open()]
    assert any(entry["kept"] for entry in kept)
    assert any((folder / "agent_output").glob("log*/*"))  # the agent's own logs were collected
    workspace_text = "".join(
        p.read_text(errors="replace")
        for p in (folder / "workspace").rglob("*")
        if p.is_file() and p.stat().st_size < 10**6
    )
    assert STANDIN_KEY not in workspace_text
    assert STANDIN_KEY not in (folder / "agent.stdout.log").read_text(errors="replace")
