"""The gateway's own virtualenv: LiteLLM proxy from the committed lock, keyed by its hash.

Installed once into ``<agents cache>/gateway-<hash16>/`` with uv (``uv venv`` + ``uv pip sync
--require-hashes`` of ``rexmle/llm/gateway.lock``); ``installed.json`` is written last, so an
interrupted install is redone and a finished one is never repeated. The agents cache is
``$REXMLE_AGENTS_DIR``, else ``$XDG_CACHE_HOME/rexmle-agents``, else ``~/.cache/rexmle-agents``
(the gateway runs on the host, outside every sandbox). The harness never imports LiteLLM: it
runs the proxy from this environment.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from rexmle.errors import RexmleError

LOCK_NAME = "gateway.lock"
STAMP = "installed.json"
AGENTS_DIR_ENV = "REXMLE_AGENTS_DIR"
INSTALL_TIMEOUT_S = 1800.0


class GatewayInstallError(RexmleError):
    """The gateway environment could not be installed (the message says which step and why)."""


def lock_text() -> str:
    """The committed lock file."""
    return resources.files("rexmle.llm").joinpath(LOCK_NAME).read_text(encoding="utf-8")


def lock_hash() -> str:
    """SHA-256 of the lock file's bytes (hex)."""
    return hashlib.sha256(lock_text().encode("utf-8")).hexdigest()


def agents_cache() -> Path:
    """``$REXMLE_AGENTS_DIR``, else ``$XDG_CACHE_HOME/rexmle-agents``, else ~/.cache/rexmle-agents."""
    if os.environ.get(AGENTS_DIR_ENV):
        return Path(os.environ[AGENTS_DIR_ENV]).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return (Path(base).expanduser() / "rexmle-agents").resolve()


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
        stamp = self.root / STAMP
        if not stamp.is_file() or not self.litellm.is_file():
            return False
        try:
            return json.loads(stamp.read_text(encoding="utf-8")).get("lock_hash") == lock_hash()
        except ValueError:
            return False


def gateway_env(cache: Path | None = None) -> GatewayEnv:
    """The environment for the committed lock, under ``cache`` (default :func:`agents_cache`)."""
    return GatewayEnv((cache or agents_cache()) / f"gateway-{lock_hash()[:16]}")


def _uv() -> str:
    try:
        import uv

        return uv.find_uv_bin()
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv")
        if found is None:
            msg = "uv is not installed: pip install uv (the gateway env is built with it)"
            raise GatewayInstallError(msg) from None
        return found


def _step(argv: list[str], what: str, log: Path, env: dict[str, str]) -> None:
    with open(log, "ab") as handle:
        handle.write(f"$ {' '.join(argv)}\n".encode())
        handle.flush()
        try:
            done = subprocess.run(
                argv,
                stdout=handle,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                timeout=INSTALL_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            msg = f"{what} failed: {error} (log: {log})"
            raise GatewayInstallError(msg) from error
    if done.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace")[-1500:]
        msg = f"{what} failed (exit {done.returncode}); {log} ends with:\n{tail}"
        raise GatewayInstallError(msg)


def install_gateway(cache: Path | None = None, *, force: bool = False) -> tuple[GatewayEnv, float]:
    """Install the gateway environment unless it is there; returns it and the seconds spent.

    Raises:
        GatewayInstallError: uv is missing, or creating the venv or installing the lock failed.
    """
    env = gateway_env(cache)
    if env.is_installed() and not force:
        return env, 0.0
    started = time.monotonic()
    env.root.mkdir(parents=True, exist_ok=True)
    (env.root / STAMP).unlink(missing_ok=True)
    shutil.rmtree(env.venv, ignore_errors=True)
    lock = env.root / LOCK_NAME
    lock.write_text(lock_text(), encoding="utf-8")
    log = env.root / "install.log"
    log.unlink(missing_ok=True)
    uv = _uv()
    step_env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    python = Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    interpreter = str(python if python.exists() else sys.executable)
    _step([uv, "venv", "--quiet", "--python", interpreter, str(env.venv)], "uv venv", log, step_env)
    _step(
        [uv, "pip", "sync", "--require-hashes", "--python", str(env.python), str(lock)],
        "uv pip sync of the gateway lock",
        log,
        step_env,
    )
    seconds = time.monotonic() - started
    stamp = {"lock_hash": lock_hash(), "seconds": round(seconds, 1), "python": interpreter}
    partial = env.root / f"{STAMP}.part"
    partial.write_text(json.dumps(stamp), encoding="utf-8")
    os.replace(partial, env.root / STAMP)
    return env, seconds
