"""Two ``rexmle run`` commands at once with ``--llm-shared-gateway``: one gateway on the node,
each run metered in its own run.json, the gateway gone after the last command ends.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from runner_support import COPY_SAMPLE, needs_bwrap

from rexmle.llm.node_gateway import RUNTIME_ENV
from rexmle.llm.standin import Reply

pytestmark = [pytest.mark.slow, needs_bwrap()]

STANDIN_KEY = "sk-standin-provider-key-0123456789"  # tests/conftest.py
CONFIG = """
providers:
  standin: {{api: openai, base_url: "{base}/v1", key_env: STANDIN_KEY}}
models:
  gpt-5: {{provider: standin, upstream: gpt-5, price: {{input: 1.0, cached_input: 0.5, output: 2.0}}}}
limits: {{budget_usd: 1.0, max_calls_per_minute: 60}}
"""


def agent(calls: int, then_sleep_s: int) -> str:
    """A command agent making ``calls`` chat completions, then sleeping."""
    code = (
        "import json, os, time, urllib.request\n"
        f"for _ in range({calls}):\n"
        "    r = urllib.request.Request(os.environ['OPENAI_BASE_URL'] + '/chat/completions',\n"
        "        data=json.dumps({'model': 'gw/gpt-5',\n"
        "                         'messages': [{'role': 'user', 'content': 'x'}]}).encode(),\n"
        "        headers={'Authorization': 'Bearer ' + os.environ['OPENAI_API_KEY'],\n"
        "                 'Content-Type': 'application/json'})\n"
        "    answer = json.loads(urllib.request.urlopen(r).read())\n"
        "    print('answer:', answer['choices'][0]['message']['content'], flush=True)\n"
        f"time.sleep({then_sleep_s})\n"
    )
    return f"{COPY_SAMPLE} && python - <<'EOF'\n{code}EOF\n"


def serves(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except OSError:
        return False
    return True


def start(command_agent: str, runs: Path, config: Path, data: Path, runtime: Path):
    argv = [sys.executable, "-m", "rexmle.cli", "run", "--agent", "command", "--agent-cmd",
            command_agent, "--task", "isles22", "--mini", "--data-dir", str(data), "--runs-dir",
            str(runs), "--sandbox", "bwrap", "--no-network", "--llm-config", str(config),
            "--llm-shared-gateway", "--json"]  # fmt: skip
    env = {**os.environ, "STANDIN_KEY": STANDIN_KEY, RUNTIME_ENV: str(runtime)}
    return subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_two_run_commands_share_one_gateway_and_meter_their_runs_apart(
    llm_standin, upstream, isles22_dirs, tmp_path
):
    upstream.reset(default=Reply(text="shared", input_tokens=100, output_tokens=10))
    config = tmp_path / "llm.yaml"
    config.write_text(CONFIG.format(base=llm_standin.base_url))
    runtime, data = tmp_path / "runtime", isles22_dirs.root.parent
    first = start(agent(1, 25), tmp_path / "runs-a", config, data, runtime)
    deadline = time.monotonic() + 200
    logs: list[Path] = []
    while time.monotonic() < deadline and not (logs and "answer:" in logs[0].read_text()):
        time.sleep(0.2)
        logs = list((tmp_path / "runs-a").glob("**/agent.stdout.log"))
    assert logs, "the first run's agent never got an answer"
    second = start(agent(2, 0), tmp_path / "runs-b", config, data, runtime)
    out_b, err_b = second.communicate(timeout=300)
    out_a, err_a = first.communicate(timeout=300)
    assert (first.returncode, second.returncode) == (0, 0), err_a + err_b
    ports = [
        re.search(r"LLM gateway on http://127\.0\.0\.1:(\d+) \(.*shared", err)
        for err in (err_a, err_b)
    ]
    assert ports[0] is not None, err_a
    assert ports[1] is not None, err_b
    assert ports[0].group(1) == ports[1].group(1)  # the second command used the first's gateway
    ((record_a,), (record_b,)) = json.loads(out_a), json.loads(out_b)
    assert record_a["status"] == record_b["status"] == "completed"
    assert (record_a["llm"]["calls"], record_b["llm"]["calls"]) == (1, 2)
    # 100 * 1.0 + 10 * 2.0 = 120 per 1M a call
    assert record_b["llm"]["cost_usd"] == pytest.approx(240e-6, abs=1e-12)
    assert record_a["settings"]["llm_gateway_shared"] is True
    for record in (record_a, record_b):
        usage = Path(record["folder"]) / "llm_usage.jsonl"
        assert len(usage.read_text().splitlines()) == record["llm"]["calls"]
    port = int(ports[0].group(1))
    deadline = time.monotonic() + 30
    while serves(port) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not serves(port), "the shared gateway outlived the last command"
    log = next(runtime.glob("gateway-*/proxy.log")).read_text()
    assert STANDIN_KEY not in log
