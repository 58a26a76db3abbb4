"""Start the LLM gateway (one LiteLLM proxy per ``rexmle run``) and connect runs to it.

::

    with Gateway(load_llm_config(path)) as gateway:        # proxy on 127.0.0.1:<port>
        with gateway.open_run("run-id", run_folder) as link:   # link.port: the proxy's port
            sandbox.run(SandboxRequest(..., env={**env, **link.env}, cancel=link.stop))
            link.stopped_reason()   # budget spent / rate cap, or None
            link.totals()           # ends the token, waits for calls in flight: run.json's llm

The proxy runs from its own environment (:mod:`rexmle.llm.environment`) with the provider keys
and a random master key in ITS environment only, started by :mod:`rexmle.llm.proxy_launch`
behind :mod:`rexmle.llm.proxy_guard`; its state folder (config, hook, registered runs) is a
private temporary folder, hidden from sandboxes. A run gets a random token
(registered by its hash) and a watcher that sets
the run's ``stop`` event within :data:`WATCH_INTERVAL_S` of the gateway's stop file appearing
(or of the harness's own cancel event). When the run ends its token is refused and the harness
waits (up to the config's ``request_timeout_s``) for the calls still in flight, so that their
usage is in the run's totals.

The gateway knows no sandbox: a run's link gives the proxy's port, and the runner, which owns
the sandbox's relays, bridges that port into the sandbox.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from types import TracebackType
from typing import Protocol

import yaml

from rexmle.errors import RexmleError
from rexmle.llm import metering
from rexmle.llm.config import Limits, LlmConfig
from rexmle.llm.environment import GatewayEnv, install_gateway
from rexmle.llm.proxy_config import (
    FAST_MODULE,
    GUARD_MODULE,
    HOOK_MODULE,
    LAUNCH_MODULE,
    MASTER_KEY_ENV,
    METERING_MODULE,
    NATIVE_FAST_MODULE,
    NATIVE_MODULE,
    hook_settings,
    litellm_config,
    usable_models,
)
from rexmle.llm.usage import TRAJECTORY_FILE, USAGE_FILE, LlmTotals, summarize_usage
from rexmle.processes import stop_process_group

WATCH_INTERVAL_S = 0.25
STARTUP_TIMEOUT_S = 180.0
STOP_GRACE_S = 10.0
READY_POLL_S = 0.05
"""Seconds between health checks while the proxy starts."""
DRAIN_POLL_S = 0.05
STALE_MARGIN_S = 30.0
"""Beyond the upstream timeout: how long a run's end waits for its calls in flight."""
STATE_MODULES = (
    ("proxy_hook.py", HOOK_MODULE),
    ("metering.py", METERING_MODULE),
    ("proxy_guard.py", GUARD_MODULE),
    ("proxy_launch.py", LAUNCH_MODULE),
    ("native_routes.py", NATIVE_MODULE),
    ("fast_path.py", FAST_MODULE),
    ("native_fast.py", NATIVE_FAST_MODULE),
)
"""Our modules the proxy loads: (file in this package, module name in the state folder)."""
TOKEN_PREFIX = "rxg-"


class GatewayError(RexmleError):
    """The gateway could not start (the message names the cause and its log)."""


def gateway_variables(base_url: str, token: str) -> dict[str, str]:
    """The variables an agent gets to reach the gateway: ours and those the SDKs read."""
    return {
        "REXMLE_LLM_BASE_URL": base_url,
        "REXMLE_LLM_TOKEN": token,
        "OPENAI_BASE_URL": f"{base_url}/v1",
        "OPENAI_API_BASE": f"{base_url}/v1",
        "OPENAI_API_KEY": token,
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": token,
    }


PROVIDER_KEY_VARIABLES = frozenset(
    {
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "AZURE_API_KEY",
        "AZURE_OPENAI_API_KEY",
        "MISTRAL_API_KEY",
        "GROQ_API_KEY",
        "DEEPSEEK_API_KEY",
        "OPENROUTER_API_KEY",
        "TOGETHER_API_KEY",
        "XAI_API_KEY",
        "COHERE_API_KEY",
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
    }
)
"""Host variables that hold provider credentials: never passed into a sandbox."""


def provider_key_variables(gateway: Gateway | None = None) -> frozenset[str]:
    """The known provider key variables plus those the gateway's config names."""
    extra = () if gateway is None else gateway.config.key_variables()
    return PROVIDER_KEY_VARIABLES | frozenset(extra)


def strip_provider_keys(env: dict[str, str], gateway: Gateway | None = None) -> list[str]:
    """Remove every provider key variable from an agent's ``env``; returns the names removed."""
    removed = sorted(name for name in provider_key_variables(gateway) if name in env)
    for name in removed:
        del env[name]
    return removed


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _reap_group(pgid: int, timeout_s: float = 5.0) -> None:
    """SIGKILL what is left of the process group ``pgid`` (workers of the proxy) until empty."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            return
        time.sleep(0.05)


class Watched(Protocol):
    """What a run watches to learn that the gateway exited (a ``Popen`` or the shared
    gateway's keeper, :mod:`rexmle.llm.node_gateway`).
    """

    @property
    def returncode(self) -> int | None:
        """The exit code once :meth:`poll` saw the exit."""
        ...

    def poll(self) -> int | None:
        """None while the gateway serves, else its exit code."""
        ...


PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when the parent exits (the shared gateway's proxy)."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)


@dataclass
class RunLink:
    """One run's connection to the gateway (see the module docstring)."""

    run_id: str
    token: str
    base_url: str
    port: int
    """The proxy's port on 127.0.0.1 (what a relay into a sandbox forwards to)."""
    usage_path: Path
    stop_path: Path
    registration_path: Path
    limits: Limits
    drain_timeout_s: float = 0.0
    """How long :meth:`totals` waits for the run's calls in flight."""
    stop: threading.Event = field(default_factory=threading.Event)
    """Set when the gateway stopped the run, the gateway died, or the harness cancels: the
    sandbox's cancel event."""
    gateway_failure: str | None = None
    """Set when the proxy exited during the run (the run is then a harness failure)."""
    process: Watched | None = None
    """The proxy process (checked by :meth:`check_gateway`)."""

    @property
    def env(self) -> dict[str, str]:
        """The agent's gateway variables (:func:`gateway_variables`)."""
        return gateway_variables(self.base_url, self.token)

    @property
    def busy_path(self) -> Path:
        """The file the gateway keeps while the run has calls in flight (their number)."""
        return self.stop_path.with_name(self.stop_path.name.removesuffix(".stop") + ".busy")

    def check_gateway(self) -> str | None:
        """Why the gateway is gone (it exited during the run), or None while it serves."""
        if self.gateway_failure is None and (
            self.process is None or self.process.poll() is not None
        ):
            code = None if self.process is None else self.process.returncode
            self.gateway_failure = f"the LLM gateway exited (code {code}) during the run"
        return self.gateway_failure

    def stopped_reason(self) -> str | None:
        """Why the gateway stopped the run (budget spent, rate cap), or None."""
        try:
            return self.stop_path.read_text(encoding="utf-8").strip() or None
        except FileNotFoundError:
            return None

    def close(self) -> None:
        """Forget the run's token: later calls with it are refused (calls in flight finish)."""
        self.registration_path.unlink(missing_ok=True)

    def calls_in_flight(self) -> int:
        """The run's calls the gateway is still serving."""
        try:
            return int(self.busy_path.read_text(encoding="utf-8").strip() or 0)
        except (FileNotFoundError, ValueError):
            return 0

    def drain(self, timeout_s: float) -> int:
        """Wait up to ``timeout_s`` for the run's calls in flight; returns those left (0 once
        all are written to the usage log, or the gateway is gone).
        """
        deadline = time.monotonic() + timeout_s
        while (left := self.calls_in_flight()) and time.monotonic() < deadline:
            if self.check_gateway() is not None:
                return left
            time.sleep(DRAIN_POLL_S)
        return left

    def totals(self) -> LlmTotals:
        """End the run's use of the gateway and sum its usage: the token is refused from now
        on, and the calls still in flight are waited for (up to ``drain_timeout_s``), so that
        calls finishing after a stop are counted; those still unfinished then are counted in
        ``calls_unfinished``.
        """
        self.close()
        unfinished = self.drain(self.drain_timeout_s)
        return summarize_usage(
            self.usage_path,
            budget_usd=self.limits.budget_usd,
            max_calls_per_minute=self.limits.max_calls_per_minute,
            max_calls_in_flight=self.limits.max_calls_in_flight,
            reserve_output_tokens=self.limits.reserve_output_tokens,
            stopped=self.stopped_reason(),
            calls_unfinished=unfinished,
        )


class Gateway:
    """One LiteLLM proxy on 127.0.0.1 (see the module docstring)."""

    def __init__(
        self,
        config: LlmConfig,
        *,
        env: GatewayEnv | None = None,
        log_path: Path | None = None,
        startup_timeout_s: float = STARTUP_TIMEOUT_S,
    ) -> None:
        """Args:
        config: providers, models, prices and per-run limits.
        env: the installed gateway environment (default: installed now if needed).
        log_path: where the proxy's output goes (default: its state folder, removed at stop).
        startup_timeout_s: how long to wait for the proxy to answer.
        """
        self.config = config
        self.env = env
        self.log_path = log_path
        self.startup_timeout_s = startup_timeout_s
        self.port = 0
        self.state_dir: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.aliases: list[str] = []
        self.skipped: list[str] = []
        """Aliases left out because their provider's key variable is not set."""
        self.startup_s = 0.0
        self.die_with_parent = False
        """The proxy is killed when the process that started it exits."""
        self.owner = ""
        """Written into each registration: the lease of a shared gateway's process, whose
        registrations its keeper drops once the lease is gone (empty: a gateway of its own)."""
        self.direct_path = True
        """Plain OpenAI chat completions skip LiteLLM (:mod:`rexmle.llm.fast_path`)."""

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``: the gateway root."""
        return f"http://127.0.0.1:{self.port}"

    def _write_state(self, state: Path) -> None:
        (state / "config.yaml").write_text(
            yaml.safe_dump(litellm_config(self.config, self.aliases), sort_keys=False),
            encoding="utf-8",
        )
        settings = hook_settings(self.config, self.aliases, direct_path=self.direct_path)
        (state / "gateway.json").write_text(json.dumps(settings, indent=1), encoding="utf-8")
        package = resources.files("rexmle.llm")
        for source, target in STATE_MODULES:
            text = package.joinpath(source).read_text(encoding="utf-8")
            (state / f"{target}.py").write_text(text, encoding="utf-8")
        (state / "runs").mkdir()

    def _claim_models_and_env(self) -> GatewayEnv:
        """Set ``aliases`` and ``skipped`` from the provider keys; the env (installed if needed).

        Raises:
            GatewayError: no model has its provider key.
        """
        self.aliases, self.skipped = usable_models(self.config, dict(os.environ))
        if not self.aliases:
            needed = ", ".join(self.config.key_variables())
            msg = f"no LLM model is usable: set a provider key in the harness ({needed})"
            raise GatewayError(msg)
        if self.env is None:
            self.env, _ = install_gateway()
        return self.env

    def start(self) -> Gateway:
        """Install the environment if needed, write the proxy's config, start it and wait.

        Raises:
            GatewayError: no model has its provider key, or the proxy did not come up
                (its log's end is in the message).
        """
        env = self._claim_models_and_env()
        started = time.monotonic()
        self.state_dir = Path(tempfile.mkdtemp(prefix="rexmle-gw-"))
        self.state_dir.chmod(0o700)
        self._write_state(self.state_dir)
        log_path = self.log_path or self.state_dir / "proxy.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self.port = _free_port()
        inherited = ("VIRTUAL_ENV", "PYTHONHOME", "PYTHONDONTWRITEBYTECODE")
        proxy_env = {
            **{k: v for k, v in os.environ.items() if k not in inherited},
            MASTER_KEY_ENV: f"sk-{secrets.token_urlsafe(32)}",
            "REXMLE_GATEWAY_STATE": str(self.state_dir),
            "PYTHONPATH": str(self.state_dir),
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "DISABLE_ADMIN_UI": "True",
            "LITELLM_DONT_SHOW_FEEDBACK_BOX": "True",
            "NO_DOCS": "True",
            "NO_REDOC": "True",
        }
        argv = [
            str(env.python),
            str(self.state_dir / f"{LAUNCH_MODULE}.py"),
            "--config",
            str(self.state_dir / "config.yaml"),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--num_workers",
            "1",
        ]
        with open(log_path, "ab") as log:
            self.process = subprocess.Popen(
                argv,
                env=proxy_env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent if self.die_with_parent else None,
            )
        self._wait_ready(log_path)
        self.startup_s = time.monotonic() - started
        return self

    def _healthy(self) -> bool:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
        try:
            connection.request("GET", "/health/liveliness")
            return connection.getresponse().status == 200
        except OSError:
            return False
        finally:
            connection.close()

    def _wait_ready(self, log_path: Path) -> None:
        assert self.process is not None
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            if self._healthy():
                return
            time.sleep(READY_POLL_S)
        code = self.process.poll()
        tail = log_path.read_text(encoding="utf-8", errors="replace")[-3000:]
        self.stop()
        why = f"exited with code {code}" if code is not None else "did not answer in time"
        msg = f"the LLM gateway {why}; its log ends with:\n{tail}"
        raise GatewayError(msg)

    def stop(self) -> None:
        """Stop the proxy (SIGTERM, then SIGKILL after a grace) and remove its state folder."""
        process, self.process = self.process, None
        if process is not None:
            stop_process_group(process, STOP_GRACE_S)
            _reap_group(process.pid)
        if self.state_dir is not None:
            shutil.rmtree(self.state_dir, ignore_errors=True)
            self.state_dir = None

    def __enter__(self) -> Gateway:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def register(self, run_id: str, folder: Path, *, limits: Limits | None = None) -> RunLink:
        """Give a run a token; its usage and trajectory go to ``folder``; ``limits`` default to
        the config's.
        """
        if self.state_dir is None:
            msg = "the gateway is not started"
            raise GatewayError(msg)
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        limits = limits or self.config.limits
        usage_path = folder / USAGE_FILE
        stop_path = self.state_dir / "runs" / f"{metering.token_id(token)}.stop"
        entry = metering.RunEntry(
            run_id=run_id,
            usage_path=str(usage_path),
            trajectory_path=str(folder / TRAJECTORY_FILE),
            stop_path=str(stop_path),
            budget_usd=limits.budget_usd,
            max_calls_per_minute=limits.max_calls_per_minute,
            trajectory_max_bytes=int(limits.trajectory_max_mb * 1024 * 1024),
            usage_max_bytes=int(limits.usage_max_mb * 1024 * 1024),
            max_calls_in_flight=limits.max_calls_in_flight,
            reserve_output_tokens=limits.reserve_output_tokens,
            stale_after_s=self.config.request_timeout_s + STALE_MARGIN_S,
            owner=self.owner,
        )
        for path in (usage_path, usage_path.with_name(usage_path.name + metering.OVERFLOW_SUFFIX),
                     folder / TRAJECTORY_FILE):  # fmt: skip
            path.unlink(missing_ok=True)
        registration = metering.register(self.state_dir, token, entry)
        return RunLink(
            run_id=run_id,
            token=token,
            base_url=self.base_url,
            port=self.port,
            usage_path=usage_path,
            stop_path=stop_path,
            registration_path=registration,
            limits=limits,
            drain_timeout_s=self.config.request_timeout_s + STALE_MARGIN_S,
            process=self.watched(),
        )

    def watched(self) -> Watched | None:
        """What the runs watch to learn that the gateway exited."""
        return self.process

    def unregister(self, link: RunLink) -> None:
        """Forget the run's token: later calls with it are refused."""
        link.close()

    @contextlib.contextmanager
    def open_run(
        self,
        run_id: str,
        folder: Path,
        *,
        cancel: threading.Event | None = None,
        limits: Limits | None = None,
    ) -> Iterator[RunLink]:
        """Register the run and watch its stop file; undo both at exit."""
        link = self.register(run_id, folder, limits=limits)
        done = threading.Event()

        def watch() -> None:
            while not done.wait(WATCH_INTERVAL_S):
                if link.check_gateway() is not None:
                    link.stop.set()
                    return
                if link.stop_path.exists() or (cancel is not None and cancel.is_set()):
                    link.stop.set()
                    return

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            yield link
        finally:
            done.set()
            watcher.join()
            self.unregister(link)
