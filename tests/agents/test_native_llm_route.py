"""``llm_route: native``: the adapters point AIDE's and ML-Master's own Anthropic and Gemini
back-ends at the gateway's native routes; ``openai`` (the default) keeps every model an alias.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rexmle.agents.adapters import aide, ml_master, native_llm
from rexmle.agents.registry import load_agent
from rexmle.errors import SpecError
from rexmle.llm.config import Limits
from rexmle.llm.standin import Reply, ToolCall
from tests.agents.test_adapters import GATEWAY, config_for, fake_env

ROOT = GATEWAY["REXMLE_LLM_BASE_URL"]
TOKEN = GATEWAY["REXMLE_LLM_TOKEN"]


def test_the_default_route_is_openai_and_recorded_in_the_adapter_config(workspace, tmp_path):
    assert load_agent("aide").llm.llm_route == "openai"
    config = config_for("aide/claude-sonnet-4-5", workspace, fake_env(tmp_path, "aide"))
    assert config["llm_route"] == "openai"
    argv = aide.build(config, GATEWAY).argv
    assert "agent.code.model=gw/claude-sonnet-4-5" in argv
    native = load_agent("aide/claude-sonnet-4-5").with_overrides(llm_route="native")
    assert native.llm.llm_route == "native"
    assert native.model_dump(mode="json")["llm"]["llm_route"] == "native"  # run.json's config


def test_a_route_for_an_agent_without_an_llm_is_refused():
    with pytest.raises(SpecError, match="LLM route apply to llm agents only"):
        load_agent("dummy").with_overrides(llm_route="native")


def test_the_native_route_is_refused_for_an_adapter_without_one():
    # R&D-Agent reaches its models through LiteLLM's OpenAI-style calls only
    with pytest.raises(SpecError, match="the rdagent adapter has the openai route only"):
        load_agent("rdagent").with_overrides(llm_route="native")
    assert load_agent("rdagent").with_overrides(llm_route="openai").llm.llm_route == "openai"
    for agent in ("aide", "ml-master"):
        assert load_agent(agent).with_overrides(llm_route="native").llm.llm_route == "native"


@pytest.mark.parametrize(
    ("model", "route", "expected"),
    [
        ("claude-sonnet-4-5", "native", ("anthropic", "claude-sonnet-4-5")),
        ("gemini-3-pro", "native", ("gemini", "gemini-3-pro")),
        ("gpt-5", "native", (None, "gw/gpt-5")),
        ("claude-sonnet-4-5", "openai", (None, "gw/claude-sonnet-4-5")),
        ("claudette", "native", (None, "gw/claudette")),
    ],
)
def test_which_models_take_a_native_back_end(model, route, expected):
    assert (native_llm.native_backend(model, route), native_llm.model_name(model, route)) == (
        expected
    )


def test_an_unknown_route_in_a_config_is_refused():
    with pytest.raises(ValueError, match="llm_route must be openai or native, got 'direct'"):
        native_llm.llm_route({"llm_route": "direct"})


def test_aide_native_claude_uses_its_anthropic_back_end_on_the_gateway(workspace, tmp_path):
    config = config_for("aide/claude-sonnet-4-5", workspace, fake_env(tmp_path, "aide"),
                        llm_route="native")  # fmt: skip
    launch = aide.build(config, GATEWAY)
    assert launch.argv[0].endswith("/aide")
    assert "agent.code.model=claude-sonnet-4-5" in launch.argv
    assert "agent.feedback.model=claude-sonnet-4-5" in launch.argv
    assert launch.env == {
        "OPENAI_BASE_URL": f"{ROOT}/v1",
        "OPENAI_API_KEY": TOKEN,
        "ANTHROPIC_BASE_URL": ROOT,  # the SDK appends /v1/messages
        "ANTHROPIC_API_KEY": TOKEN,
    }


def test_aide_native_gemini_runs_through_the_launcher_on_the_gateway(workspace, tmp_path):
    config = config_for("aide/gemini-3-pro", workspace, fake_env(tmp_path, "aide"),
                        llm_route="native")  # fmt: skip
    launch = aide.build(config, GATEWAY)
    assert launch.argv[:2] == [sys.executable, str(aide.GEMINI_LAUNCHER)]
    assert aide.GEMINI_LAUNCHER.is_file()
    assert "agent.code.model=gemini-3-pro" in launch.argv
    assert launch.env["REXMLE_GEMINI_OPENAI_BASE_URL"] == f"{ROOT}/v1beta/openai/"
    assert launch.env["GEMINI_API_KEY"] == TOKEN
    assert "ANTHROPIC_BASE_URL" not in launch.env


def test_aide_native_leaves_gpt_5_an_alias(workspace, tmp_path):
    config = config_for("aide", workspace, fake_env(tmp_path, "aide"), llm_route="native")
    native = aide.build(config, GATEWAY)
    config = config_for("aide", workspace, fake_env(tmp_path, "aide"))
    assert native.argv == aide.build(config, GATEWAY).argv
    assert "agent.code.model=gw/gpt-5" in native.argv


def test_ml_master_native_claude_and_gemini(workspace, tmp_path):
    env = fake_env(tmp_path, "ml-master", with_source=True)
    claude = config_for("ml-master/claude-sonnet-4-5", workspace, env, llm_route="native")
    claude["forwarder_port"] = 5111
    launch = ml_master.build(claude, GATEWAY)
    for role in ("code", "feedback"):
        assert f"agent.{role}.model=claude-sonnet-4-5" in launch.argv
        assert f"agent.{role}.base_url={ROOT}" in launch.argv  # Anthropic SDK: root
        assert f"agent.{role}.api_key={TOKEN}" in launch.argv
    assert "GOOGLE_GEMINI_BASE_URL" not in launch.env
    gemini = config_for("ml-master/gemini-3-pro", workspace, env, llm_route="native")
    gemini["forwarder_port"] = 5111
    launch = ml_master.build(gemini, GATEWAY)
    assert "agent.code.model=gemini-3-pro" in launch.argv
    assert launch.env["GOOGLE_GEMINI_BASE_URL"] == ROOT  # google-genai adds /v1beta/models/
    openai_route = config_for("ml-master/gemini-3-pro", workspace, env)
    openai_route["forwarder_port"] = 5111
    launch = ml_master.build(openai_route, GATEWAY)
    assert "agent.code.model=gw/gemini-3-pro" in launch.argv
    assert f"agent.code.base_url={ROOT}/v1" in launch.argv
    assert "GOOGLE_GEMINI_BASE_URL" not in launch.env


FAKE_GEMINI_BACKEND = """
import json
import os
import subprocess
import sys
import openai

_client = None


def _setup_gemini_client():  # as aideml 0.2.2: the Google URL is written into the set-up
    global _client
    _client = openai.OpenAI(
        api_key="unused", base_url="https://generativelanguage.googleapis.com/v1beta/openai/",
        max_retries=0,
    )


def query(model, text):
    _setup_gemini_client()
    answer = _client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": text}]
    )
    return answer.choices[0].message.content
"""
FAKE_RUN = """
import json
import os
import subprocess
import sys
from aide.backend import backend_gemini


def run():
    model = dict(arg.split("=", 1) for arg in sys.argv[1:])["agent.code.model"]
    print("ANSWER", backend_gemini.query(model, "hello"))
"""


@pytest.mark.slow
def test_the_aide_gemini_launcher_sends_aides_gemini_calls_to_the_gateway(
    llm_gateway, upstream, tmp_path
):
    """AIDE's module layout with its Gemini client set-up, run by the launcher under the
    gateway environment's ``openai`` SDK (the version AIDE's lock pins): the call reaches the
    gateway's Gemini OpenAI-compatible route, not Google (unreachable here), and is metered.
    """
    package = tmp_path / "fake" / "aide"
    (package / "backend").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "backend" / "__init__.py").write_text("")
    (package / "backend" / "backend_gemini.py").write_text(FAKE_GEMINI_BACKEND)
    (package / "run.py").write_text(FAKE_RUN)
    link = llm_gateway.register("aide-gemini", tmp_path, limits=Limits(budget_usd=1.0))
    upstream.push(Reply(text="from gemini", input_tokens=12, output_tokens=3))
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(tmp_path / "fake"),
        "REXMLE_GEMINI_OPENAI_BASE_URL": f"{llm_gateway.base_url}/v1beta/openai/",
        "GEMINI_API_KEY": link.token,
    }
    done = subprocess.run(
        [str(llm_gateway.env.python), str(aide.GEMINI_LAUNCHER), "agent.code.model=gemini-3-pro"],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "ANSWER from gemini" in done.stdout
    (sent,) = upstream.completion_requests()
    if llm_gateway.direct_path:  # to Google's OpenAI-compatible endpoint, as AIDE calls it
        assert sent.path == "/v1beta/openai/chat/completions"
        assert sent.body["model"] == "gemini-3-pro-preview"
    else:  # translated by LiteLLM
        assert sent.path == "/v1beta/models/gemini-3-pro-preview:generateContent"
    totals = link.totals()
    assert (totals.calls, totals.tokens_in, totals.tokens_out) == (1, 12, 3)
    # 12 * 2 + 3 * 12 = 60 per 1M
    assert totals.cost_usd == pytest.approx(60e-6, abs=1e-12)


SDK_CALLS = """
import json, os, sys
import anthropic
from google import genai
from google.genai import types

root, token = sys.argv[1], sys.argv[2]
# ML-Master's Anthropic back-end: Anthropic(api_key, base_url), text blocks, temperature, a
# streamed code call and a forced tool call for the feedback
client = anthropic.Anthropic(api_key=token, base_url=root, max_retries=0)
stream = client.messages.create(
    model="claude", max_tokens=64, temperature=1.0, system="rules", stream=True,
    messages=[{"role": "user", "content": [{"type": "text", "text": "write code"}]}],
)
text = "".join(getattr(getattr(e, "delta", None), "text", "") or "" for e in stream)
tool = {"name": "submit_review", "description": "d",
        "input_schema": {"type": "object", "properties": {"is_bug": {"type": "boolean"}}}}
review = client.messages.create(
    model="claude", max_tokens=64, temperature=1.0, tools=[tool],
    tool_choice={"type": "tool", "name": "submit_review"},
    messages=[{"role": "user", "content": [{"type": "text", "text": "review"}]}],
)
# ML-Master's Gemini back-end: genai.Client(api_key) with the base URL from the environment
gemini = genai.Client(api_key=token)
answer = gemini.models.generate_content(
    model="gemini-3-pro", contents=["user: write code"],
    config=types.GenerateContentConfig(temperature=1.0, max_output_tokens=64),
)
try:
    anthropic.Anthropic(api_key=token, base_url=root, max_retries=0).messages.create(
        model="gemini-3-pro", max_tokens=8, messages=[{"role": "user", "content": "x"}])
    refused = "not refused"
except anthropic.BadRequestError as error:
    refused = error.body["error"]["type"] + ": " + error.body["error"]["message"]
print(json.dumps({"claude": text, "tool": review.content[0].input, "gemini": answer.text,
                  "refused": refused}))
"""


def sdk_python() -> str | None:
    """An interpreter with ML-Master's pinned anthropic and google-genai SDKs: its installed
    environment, or ``REXMLE_TEST_SDK_PYTHON``.
    """
    from rexmle.agents.environments import resolve_env

    given = os.environ.get("REXMLE_TEST_SDK_PYTHON")
    if given:
        return given
    env = resolve_env("ml-master")
    return str(env.python) if env.is_installed() else None


@pytest.mark.slow
def test_ml_masters_sdks_reach_the_native_routes_and_are_metered(llm_gateway, upstream, tmp_path):
    python = sdk_python()
    if python is None:
        pytest.skip("ML-Master's environment is not installed (or set REXMLE_TEST_SDK_PYTHON)")
    link = llm_gateway.register("ml-master-sdks", tmp_path, limits=Limits(budget_usd=1.0))
    upstream.push(
        Reply(text="print('code')", input_tokens=20, output_tokens=4),
        Reply(tool_calls=(ToolCall("submit_review", {"is_bug": False}),), input_tokens=30,
              output_tokens=6),
        Reply(text="gemini code", input_tokens=40, output_tokens=8, reasoning_tokens=2),
    )  # fmt: skip
    script = tmp_path / "sdk_calls.py"
    script.write_text(SDK_CALLS)
    env = {"PATH": os.environ["PATH"], "GOOGLE_GEMINI_BASE_URL": llm_gateway.base_url}
    done = subprocess.run(
        [python, str(script), llm_gateway.base_url, link.token],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["claude"] == "print('code')"
    assert out["tool"] == {"is_bug": False}
    assert out["gemini"] == "gemini code"
    assert out["refused"].startswith("invalid_request_error: ")  # parsed by the SDK
    assert "is not served" in out["refused"]
    paths = [r.path for r in upstream.completion_requests()]
    assert paths == ["/v1/messages", "/v1/messages",
                     "/v1beta/models/gemini-3-pro-preview:generateContent"]  # fmt: skip
    totals = link.totals()
    assert (totals.calls, totals.calls_refused) == (4, 1)
    assert (totals.tokens_in, totals.tokens_out, totals.tokens_reasoning) == (90, 18, 2)
    # claude: 20 * 3 + 4 * 15 + 30 * 3 + 6 * 15 = 300; gemini: 40 * 2 + 8 * 12 = 176 per 1M
    assert totals.cost_usd == pytest.approx(476e-6, abs=1e-12)
