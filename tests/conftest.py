"""Shared pytest fixtures: prepared mini tasks are built once per test session."""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rexmle.llm.config import parse_llm_config
from rexmle.llm.environment import install_gateway
from rexmle.llm.gateway import Gateway
from rexmle.llm.standin import ScriptedUpstream
from rexmle.preparation import prepare_task
from rexmle.tasks.folders import TaskDirs


@pytest.fixture(scope="session")
def mini_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One data dir per test worker for mini tasks prepared by `prepared_mini`."""
    return tmp_path_factory.mktemp("mini-data")


@pytest.fixture(scope="session")
def prepared_mini(mini_data_dir: Path) -> Callable[[str], TaskDirs]:
    """Prepare a mini task once per session (a no-op afterwards) and return its folders."""

    def prepare(task_id: str) -> TaskDirs:
        dirs, _ = prepare_task(task_id, data_dir=mini_data_dir, mini=True, fixture_secret=None)
        return dirs

    return prepare


STANDIN_KEY_ENV = "REXMLE_TEST_STANDIN_KEY"
STANDIN_KEY = "sk-standin-provider-key-0123456789"
"""The stand-in upstream's provider key: set in the harness (so the gateway has it), never in a
sandbox."""


@pytest.fixture(scope="session")
def llm_standin() -> Iterator[ScriptedUpstream]:
    """One scripted upstream (OpenAI, Anthropic and Gemini APIs) per test worker; it wants the
    key.
    """
    with ScriptedUpstream(api_keys={STANDIN_KEY}) as upstream:
        yield upstream


@pytest.fixture
def upstream(llm_standin: ScriptedUpstream) -> ScriptedUpstream:
    """The session's stand-in with an empty queue and no recorded requests."""
    llm_standin.reset()
    return llm_standin


@contextlib.contextmanager
def standin_gateway(standin: ScriptedUpstream, *, direct: bool) -> Iterator[Gateway]:
    """A real LiteLLM gateway (its env installed once into the agents cache) in front of
    ``standin``: ``gw/gpt-5`` (OpenAI API), ``gw/claude`` (Anthropic API), ``gw/gemini-3-pro``
    (Gemini API); per run 0.01 USD and 3 calls per minute unless a test registers other limits;
    with its direct path (``direct``) or every call through LiteLLM.
    """
    base = standin.base_url
    config = parse_llm_config(
        f"""
providers:
  openai-like: {{api: openai, base_url: "{base}/v1", key_env: {STANDIN_KEY_ENV}}}
  anthropic-like: {{api: anthropic, base_url: "{base}", key_env: {STANDIN_KEY_ENV}}}
  gemini-like: {{api: gemini, base_url: "{base}/v1beta", key_env: {STANDIN_KEY_ENV}}}
models:
  gpt-5: {{provider: openai-like, upstream: gpt-5,
          price: {{input: 1.25, cached_input: 0.125, output: 10.0}}}}
  claude: {{provider: anthropic-like, upstream: claude-sonnet-4-5,
           price: {{input: 3.0, cached_input: 0.3, output: 15.0}}}}
  gemini-3-pro: {{provider: gemini-like, upstream: gemini-3-pro-preview,
                 price: {{input: 2.0, cached_input: 0.2, output: 12.0}}}}
limits: {{budget_usd: 0.01, max_calls_per_minute: 3}}
""",
        "test gateway config",
    )
    env, _ = install_gateway()
    previous = os.environ.get(STANDIN_KEY_ENV)
    os.environ[STANDIN_KEY_ENV] = STANDIN_KEY
    try:
        gateway = Gateway(config, env=env)
        gateway.direct_path = direct
        with gateway:
            yield gateway
    finally:
        if previous is None:
            os.environ.pop(STANDIN_KEY_ENV, None)
        else:
            os.environ[STANDIN_KEY_ENV] = previous


@pytest.fixture(scope="session", params=["direct", "litellm"])
def llm_gateway(request: pytest.FixtureRequest, llm_standin: ScriptedUpstream) -> Iterator[Gateway]:
    """The stand-in's gateway (:func:`standin_gateway`), twice: with its direct path
    (``direct``) and with every call through LiteLLM (``litellm``).
    """
    with standin_gateway(llm_standin, direct=request.param == "direct") as gateway:
        yield gateway


@pytest.fixture(scope="session")
def start_standin_gateway(
    llm_standin: ScriptedUpstream,
) -> Callable[..., contextlib.AbstractContextManager[Gateway]]:
    """:func:`standin_gateway` on the session's stand-in: ``start_standin_gateway(direct=...)``."""
    return functools.partial(standin_gateway, llm_standin)
