"""The LLM config file, the proxy config generated from it, and the agent's gateway variables."""

from __future__ import annotations

import pytest

from rexmle.agents.registry import load_agent
from rexmle.errors import SpecError
from rexmle.llm.config import load_llm_config, parse_llm_config
from rexmle.llm.gateway import gateway_variables, strip_provider_keys
from rexmle.llm.proxy_config import ALLOWED_ROUTES, hook_settings, litellm_config, usable_models
from rexmle.runner.gateway_setup import check_no_provider_keys, plan_gateway

CONFIG = """
providers:
  local: {api: openai, base_url: "http://127.0.0.1:9/v1", key_env: LOCAL_KEY}
  open: {api: anthropic, base_url: "http://127.0.0.1:9", key_env: null}
models:
  small: {provider: local, upstream: m-1, price: {input: 2.0, cached_input: 0.5, output: 8.0}}
  claude: {provider: open, upstream: c-1, price: {input: 3.0, cached_input: 0.3, output: 15.0}}
limits: {budget_usd: 5.0, max_calls_per_minute: 10}
"""


def test_default_config_exposes_the_paper_models_under_neutral_aliases():
    config = load_llm_config()
    assert {"gw/gpt-5", "gw/claude-sonnet-4-5", "gw/gemini-3-pro"} <= set(config.aliases())
    assert config.key_variables() == ["ANTHROPIC_API_KEY", "GEMINI_API_KEY", "OPENAI_API_KEY"]


def test_proxy_config_names_keys_by_variable_and_prices_per_token():
    config = parse_llm_config(CONFIG, "test")
    generated = litellm_config(config, ["gw/small", "gw/claude"])
    small, claude = generated["model_list"]
    assert small["model_name"] == "gw/small"
    assert small["litellm_params"] == {
        "model": "openai/m-1",
        "api_base": "http://127.0.0.1:9/v1",
        "api_key": "os.environ/LOCAL_KEY",
    }
    assert small["model_info"]["input_cost_per_token"] == pytest.approx(2.0e-6)
    assert small["model_info"]["cache_read_input_token_cost"] == pytest.approx(0.5e-6)
    assert small["model_info"]["output_cost_per_token"] == pytest.approx(8.0e-6)
    assert claude["litellm_params"]["model"] == "anthropic/c-1"
    assert generated["litellm_settings"]["modify_params"] is True
    assert generated["general_settings"]["custom_auth"] == "proxy_hook.authenticate"
    settings = hook_settings(config, ["gw/small"])
    assert settings["prices"]["gw/small"] == {"input": 2.0, "cached_input": 0.5, "output": 8.0}
    assert "/v1/chat/completions" in ALLOWED_ROUTES
    assert not any(r.startswith(("/key", "/config", "/model/", "/ui")) for r in ALLOWED_ROUTES)


def test_models_without_their_key_are_left_out():
    config = parse_llm_config(CONFIG, "test")
    assert usable_models(config, {}) == (["gw/claude"], ["gw/small"])
    assert usable_models(config, {"LOCAL_KEY": "k"}) == (["gw/small", "gw/claude"], [])


@pytest.mark.parametrize(
    ("broken", "reason"),
    [
        (CONFIG.replace("provider: local", "provider: nowhere"), "names provider 'nowhere'"),
        (CONFIG.replace("input: 2.0", "input: -1"), "greater than or equal to 0"),
        (CONFIG.replace('"http://127.0.0.1:9/v1"', "ftp://x"), "base_url"),
        (CONFIG.replace("budget_usd: 5.0", "budget_usd: 0"), "budget_usd"),
        ("models: [", "my.yaml: not valid YAML"),
        ("- just a list", "my.yaml: not a valid LLM config"),
    ],
)
def test_bad_configs_are_refused_with_the_reason(broken, reason):
    with pytest.raises(SpecError, match=reason):
        parse_llm_config(broken, "my.yaml")


def test_limits_from_the_command_line_win():
    config = parse_llm_config(CONFIG, "test").with_limits(budget_usd=0.5)
    assert (config.limits.budget_usd, config.limits.max_calls_per_minute) == (0.5, 10)


def test_agent_variables_point_every_sdk_at_the_gateway():
    env = gateway_variables("http://127.0.0.1:4000", "rxg-t")
    assert env["OPENAI_BASE_URL"] == "http://127.0.0.1:4000/v1"
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:4000"
    assert env["OPENAI_API_KEY"] == env["ANTHROPIC_API_KEY"] == env["REXMLE_LLM_TOKEN"] == "rxg-t"


def test_provider_keys_are_stripped_from_an_agent_environment():
    env = {"PATH": "/usr/bin", "OPENAI_API_KEY": "sk-1", "HF_TOKEN": "hf", "SEED": "0"}
    assert strip_provider_keys(env) == ["HF_TOKEN", "OPENAI_API_KEY"]
    assert env == {"PATH": "/usr/bin", "SEED": "0"}


def test_an_agent_that_passes_a_provider_key_is_refused():
    spec = load_agent("command").with_overrides(command="true", env=["ANTHROPIC_API_KEY"])
    with pytest.raises(SpecError, match="would pass ANTHROPIC_API_KEY into its sandbox"):
        check_no_provider_keys(spec, None)
    with pytest.raises(SpecError, match="ANTHROPIC_API_KEY"):
        plan_gateway(spec, None, every_run=False)


def test_the_builtin_command_agent_passes_no_key_and_needs_no_gateway():
    spec = load_agent("command").with_overrides(command="true")
    assert spec.env == []
    assert plan_gateway(spec, None, every_run=False) is None
    assert plan_gateway(spec, None, every_run=True) is not None
