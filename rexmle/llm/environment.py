"""The gateway's own virtualenv: LiteLLM proxy from the committed lock, keyed by its hash.

Installed once into ``<agents cache>/gateway-<hash16>/`` (``uv venv`` + ``uv pip sync
--require-hashes`` of ``rexmle/llm/gateway.lock``), with the cache, uv, interpreter, install
steps and stamp of every locked environment (:mod:`rexmle.envs.locked`); ``installed.json`` is
written last, so an interrupted install is redone and a finished one is never repeated. The
steps' output is kept in ``install.log`` beside it. The gateway runs on the host, outside every
sandbox; the harness never imports LiteLLM: it runs the proxy from this environment.
"""

from __future__ import annotations

import hashlib
import shutil
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from rexmle.envs.locked import (
    agents_cache_dir,
    is_installed,
    run_step,
    uv_environment,
    uv_executable,
    venv_command,
    write_stamp,
)

LOCK_NAME = "gateway.lock"
INSTALL_TIMEOUT_S = 1800.0
"""The longest one install step may take."""


def lock_text() -> str:
    """The committed lock file."""
    return resources.files("rexmle.llm").joinpath(LOCK_NAME).read_text(encoding="utf-8")


def lock_hash() -> str:
    """SHA-256 of the lock file's bytes (hex)."""
    return hashlib.sha256(lock_text().encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class GatewayEnv:
    """An installed (or to be installed) gateway environment."""

    root: Path

    @property
    def venv(self) -> Path:
        """The virtualenv."""
        return self.root / "venv"

    @property
    def litellm(self) -> Path:
        """The proxy's entry point."""
        return self.venv / "bin" / "litellm"

    @property
    def python(self) -> Path:
        """The environment's interpreter."""
        return self.venv / "bin" / "python"

    def is_installed(self) -> bool:
        """Whether the stamp says this lock was installed completely."""
        return is_installed(self.root, lock_hash(), self.litellm)


def gateway_env(cache: Path | None = None) -> GatewayEnv:
    """The environment for the committed lock, under ``cache`` (default: the agents cache)."""
    return GatewayEnv((cache or agents_cache_dir()) / f"gateway-{lock_hash()[:16]}")


def install_gateway(cache: Path | None = None, *, force: bool = False) -> tuple[GatewayEnv, float]:
    """Install the gateway environment unless it is there; returns it and the seconds spent.

    Raises:
        EnvInstallError: uv is missing, or creating the venv or installing the lock failed.
    """
    env = gateway_env(cache)
    if env.is_installed() and not force:
        return env, 0.0
    started = time.monotonic()
    shutil.rmtree(env.root, ignore_errors=True)
    env.root.mkdir(parents=True)
    lock = env.root / LOCK_NAME
    lock.write_text(lock_text(), encoding="utf-8")
    log = env.root / "install.log"
    uv_env = uv_environment()
    _sync = [uv_executable(), "pip", "sync", "--no-config", "--require-hashes"]
    run_step(venv_command(env.venv), "uv venv", log=log, timeout_s=INSTALL_TIMEOUT_S, env=uv_env)
    run_step(
        [*_sync, "--python", str(env.python), str(lock)],
        "uv pip sync of the gateway lock",
        log=log,
        timeout_s=INSTALL_TIMEOUT_S,
        env=uv_env,
    )
    seconds = time.monotonic() - started
    write_stamp(env.root, lock_hash(), {"seconds": round(seconds, 1)})
    return env, seconds
