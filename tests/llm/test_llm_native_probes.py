"""The native direct path's start-up probes, run against the gateway's own LiteLLM: the keys
they keep, and the bodies LiteLLM rewrites that the per-call checks leave to LiteLLM.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from rexmle.llm.environment import install_gateway

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
HELLO = [{"role": "user", "content": "hi"}]
REWRITTEN = [
    # Messages bodies LiteLLM does not forward as they are
    {"model": "m", "max_tokens": 8, "messages": [
        {"role": "user", "content": [{"type": "text", "text": ""}, {"type": "text", "text": "x"}]}]},
    {"model": "m", "max_tokens": 8, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "  "}]}]},
    {"model": "m", "max_tokens": 8, "messages": [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a b", "name": "f",
                                           "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a b",
                                      "content": "ok"}]}]},
    {"model": "m", "max_tokens": 8, "messages": HELLO, "not_a_parameter": 1},
]  # fmt: skip
SCRIPT = """
import json, sys
from rexmle.llm import native_fast
cases = json.loads(sys.argv[1])
keys = native_fast.anthropic_keys("claude-sonnet-4-5", True)
print(json.dumps({
    "keys": sorted(keys),
    "config": sorted(native_fast.gemini_config_keys("gemini-3-pro-preview")),
    "rewritten": [
        native_fast._litellm_anthropic("claude-sonnet-4-5", c, True)
        != {**c, "model": "claude-sonnet-4-5"} for c in cases
    ],
    "kept": [native_fast.anthropic_body_kept(c, keys) for c in cases],
}))
"""


def test_the_probes_keep_what_litellm_forwards_and_the_checks_refuse_what_it_rewrites():
    env, _ = install_gateway()
    done = subprocess.run(
        [str(env.python), "-c", SCRIPT, json.dumps(REWRITTEN)],
        capture_output=True, text=True, timeout=300, check=False, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(found["keys"]) == {
        "model", "messages", "max_tokens", "stream", "system", "temperature", "top_p", "top_k",
        "stop_sequences", "tools", "tool_choice",
    }  # fmt: skip
    assert {"maxOutputTokens", "temperature", "thinkingConfig", "stopSequences"} <= set(
        found["config"]
    )
    assert not {"responseSchema", "responseJsonSchema", "max_output_tokens"} & set(found["config"])
    assert found["rewritten"] == [True] * len(REWRITTEN)
    assert found["kept"] == [False] * len(REWRITTEN)
