"""``llm_route: native``: the adapters point AIDE's and ML-Master's own Anthropic and Gemini
back-ends at the gateway's native routes; ``openai`` (the default) keeps every model an alias.
"""

from __future__ import annotations

import sys

import pytest

from rexmle.agents.adapters import aide, ml_master, native_llm
from rexmle.agents.registry import load_agent
from rexmle.errors import SpecError
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
