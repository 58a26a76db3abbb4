"""What ``rexmle run`` does about the LLM gateway: decide, check the agent, start and stop it.

The gateway is started when the agent is of kind ``llm``, declares ``llm_gateway: true``, or
``--llm-config`` / ``--llm`` is given (then every run gets it), and only when some run is left
to do. It is stopped when the run command ends, Ctrl-C and SIGTERM included; with
``--llm-shared-gateway`` the command takes a lease on the node's shared gateway instead
(:mod:`rexmle.llm.node_gateway`) and gives it back then.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Protocol

from rich.console import Console

from rexmle.agents.registry import AgentSpec
from rexmle.errors import SpecError
from rexmle.llm.config import LlmConfig, load_llm_config
from rexmle.llm.gateway import Gateway, provider_key_variables
from rexmle.llm.node_gateway import SharedGateway


class _Job(Protocol):
    @property
    def label(self) -> str: ...


def check_no_provider_keys(spec: AgentSpec, config: LlmConfig | None) -> None:
    """Refuse an agent whose ``env`` would pass a provider key into its sandbox.

    Raises:
        SpecError: naming the variables and what to do instead.
    """
    known = provider_key_variables() | frozenset(config.key_variables() if config else ())
    passed = sorted(set(spec.env) & known)
    if passed:
        msg = (
            f"agent {spec.id!r} would pass {', '.join(passed)} into its sandbox; provider keys "
            "stay with the LLM gateway: remove them from env/--agent-env and run with "
            "--llm-config FILE (or --llm): the agent then gets OPENAI_BASE_URL, OPENAI_API_KEY, "
            "ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY pointing at the gateway"
        )
        raise SpecError(msg)


def plan_gateway(
    spec: AgentSpec,
    config_path: Path | None,
    *,
    every_run: bool,
    budget_usd: float | None = None,
    max_calls_per_minute: int | None = None,
    log_path: Path | None = None,
    shared: bool = False,
) -> Gateway | None:
    """The (not yet started) gateway this run command needs, or None; the proxy's own log goes
    to ``log_path`` (appended); ``shared``: the node's shared gateway
    (:class:`rexmle.llm.node_gateway.SharedGateway`, its log in its runtime folder).

    Raises:
        SpecError: the config is invalid, or the agent passes provider keys.
    """
    needed = every_run or spec.kind == "llm" or spec.llm_gateway
    config = load_llm_config(config_path) if needed else None
    check_no_provider_keys(spec, config)
    if config is None:
        return None
    config = config.with_limits(budget_usd=budget_usd, max_calls_per_minute=max_calls_per_minute)
    if shared:
        return SharedGateway(config)
    return Gateway(config, log_path=log_path)


@contextlib.contextmanager
def running_gateway(
    gateway: Gateway | None, jobs: Sequence[_Job], console: Console
) -> Iterator[Gateway | None]:
    """Start ``gateway`` (when there is one and a job to do) for the block; stop it after."""
    if gateway is None or not jobs:
        yield None
        return
    with console.status("starting the LLM gateway…"):
        gateway.start()
    try:
        limits = gateway.config.limits
        shared = f", shared, log {gateway.log_path}" if isinstance(gateway, SharedGateway) else ""
        console.print(
            f"LLM gateway on {gateway.base_url} ({gateway.startup_s:.1f} s{shared}): "
            f"{', '.join(gateway.aliases)}; per run budget {limits.budget_usd} USD unless the "
            "run sets its own (a cap, or none; `rexmle run --dry-run` lists them), "
            f"{limits.max_calls_per_minute} calls/min",
            highlight=False,
            soft_wrap=True,
        )
        for alias in gateway.skipped:
            console.print(
                f"[yellow]LLM gateway:[/] {alias} left out, its provider key is not set",
                highlight=False,
            )
        yield gateway
    finally:
        gateway.stop()
