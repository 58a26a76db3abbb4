"""One LLM gateway per node and user, shared by the ``rexmle`` processes that run there.

::

    with SharedGateway(load_llm_config(path)) as gateway:   # attaches, or starts the keeper
        with gateway.open_run("run-id", run_folder, limits=...) as link:
            ...                                              # as with :class:`Gateway`

The gateway of a config lives in ``<runtime>/gateway-<key>/`` (:func:`runtime_dir`, private to
the user, 0700): ``lock`` (``flock``, held for every change below), ``config.json`` (the LLM
config), ``keeper.json`` (the keeper's pid, written when it is started), ``state.json`` (the
proxy's port and state folder, written once it answers), ``leases/`` (one file per process
using it, named ``<pid>-<start time>-<random>``) and ``proxy.log``.

- The key is a SHA-256 over everything that decides what the proxy does: its ``config.yaml``,
  the hook's settings, the text of the modules it loads, the gateway environment and the
  SHA-256 of each provider key's value, and the Slurm job (``SLURM_JOB_ID``) it runs in. Two
  processes share a gateway only when all of it is equal; a different config, price, key or
  harness version gets its own. Slurm ends every process of a job with it (the keeper
  included), so a gateway is never shared across jobs: one started by one array task would
  stop under the runs of the others; the processes of one job share it.
- The keeper (``python -P -m rexmle.llm.node_gateway FOLDER``, its own session) runs the proxy
  (killed with it), and every :data:`LEASE_POLL_S` drops the leases whose process is gone (pid
  and start time, so a reused pid does not count); once no lease is left for
  :data:`IDLE_GRACE_S`, it removes ``state.json`` and stops the proxy. A process that is killed
  leaves a dead lease: the last run leaving, in any way, stops the gateway.
- A registration names the lease of the process that made it: once that lease is gone (given
  back, or its process dead, a harness killed before it unregistered its runs), the keeper
  removes the registrations it names, so a run's token never outlives its harness.
- What stays per run is the registration (:meth:`Gateway.register`): each run has its own
  random token, registered by its hash with its own budget, rate cap, calls in flight, usage log
  and trajectory in its own run folder; the meter is looked up by the token, so a token serves
  only its own run's budget. The limits a process registers are its own config's.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

from rexmle.llm.config import LlmConfig
from rexmle.llm.environment import GatewayEnv
from rexmle.llm.gateway import STARTUP_TIMEOUT_S, STATE_MODULES, Gateway, GatewayError, Watched
from rexmle.llm.proxy_config import hook_settings, litellm_config, usable_models

RUNTIME_ENV = "REXMLE_RUNTIME_DIR"
LEASE_POLL_S = 0.25
IDLE_GRACE_S = 1.0
"""How long the keeper waits, once the last lease is gone, before it stops the proxy."""
ATTACH_POLL_S = 0.05


def runtime_dir() -> Path:
    """``$REXMLE_RUNTIME_DIR``, else ``$XDG_RUNTIME_DIR/rexmle``, else ``/tmp/rexmle-<uid>``:
    created 0700; it must be a folder owned by this user that nobody else can enter.

    Raises:
        GatewayError: the folder is another user's or open to others.
    """
    given = os.environ.get(RUNTIME_ENV)
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    folder = Path(given or (f"{xdg}/rexmle" if xdg else f"/tmp/rexmle-{os.getuid()}"))
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = folder.lstat()
    if not folder.is_dir() or folder.is_symlink() or info.st_uid != os.getuid():
        msg = f"the gateway runtime folder {folder} is not a folder of this user; set {RUNTIME_ENV}"
        raise GatewayError(msg)
    if info.st_mode & 0o077:
        msg = f"the gateway runtime folder {folder} is open to other users: chmod 700 it"
        raise GatewayError(msg)
    return folder


def gateway_key(config: LlmConfig, environ: dict[str, str], python: Path) -> str:
    """The key of the gateway ``config`` gets under ``environ`` (see the module docstring)."""
    aliases, _ = usable_models(config, environ)
    package = resources.files("rexmle.llm")
    keys = {
        name: hashlib.sha256(environ.get(name, "").encode("utf-8")).hexdigest()
        for name in config.key_variables()
    }
    material = {
        "config": litellm_config(config, aliases),
        "settings": hook_settings(config, aliases),
        "modules": {name: package.joinpath(name).read_text("utf-8") for name, _ in STATE_MODULES},
        "python": str(python),
        "keys": keys,
        "slurm_job": environ.get("SLURM_JOB_ID"),
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode("utf-8")).hexdigest()[:24]


def _start_time(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks since boot), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            stat = handle.read()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    return None if fields[0] in ("Z", "X") else fields[19]


def _lease_alive(name: str) -> bool:
    pid_text, _, rest = name.partition("-")
    started = rest.partition("-")[0]
    return pid_text.isdigit() and _start_time(int(pid_text)) == started


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    with open(folder / "lock", "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _read_json(path: Path) -> dict[str, object] | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _write_json(path: Path, value: dict[str, object]) -> None:
    partial = path.with_name(path.name + ".part")
    partial.write_text(json.dumps(value), encoding="utf-8")
    os.replace(partial, path)


class KeeperProcess:
    """The shared gateway's keeper as the runs watch it (:class:`rexmle.llm.gateway.Watched`)."""

    def __init__(self, pid: int, started: str | None) -> None:
        self.pid = pid
        self.started = started
        self.returncode: int | None = None

    def poll(self) -> int | None:
        """None while the keeper lives, else 1."""
        if self.returncode is None and _start_time(self.pid) != self.started:
            self.returncode = 1
        return self.returncode


class SharedGateway(Gateway):
    """A :class:`Gateway` whose proxy is the node's shared one (see the module docstring):
    :meth:`start` attaches to it (or starts its keeper) and takes a lease, :meth:`stop` gives
    the lease back; registering runs is :class:`Gateway`'s.
    """

    def __init__(
        self,
        config: LlmConfig,
        *,
        env: GatewayEnv | None = None,
        startup_timeout_s: float = STARTUP_TIMEOUT_S,
    ) -> None:
        """Args:
        config: providers, models, prices and the per-run limits this process registers.
        env: the installed gateway environment (default: installed now if needed).
        startup_timeout_s: how long to wait for the shared gateway to answer.
        """
        super().__init__(config, env=env, startup_timeout_s=startup_timeout_s)
        self.folder: Path | None = None
        self.lease: Path | None = None
        self.keeper: KeeperProcess | None = None

    def start(self) -> SharedGateway:
        """Take a lease on the node's gateway for this config, starting it if none runs.

        Raises:
            GatewayError: no model has its provider key, the runtime folder is unsafe, or the
                gateway did not come up (the end of its log is in the message).
        """
        env = self._claim_models_and_env()
        started = time.monotonic()
        key = gateway_key(self.config, dict(os.environ), env.python)
        folder = runtime_dir() / f"gateway-{key}"
        folder.mkdir(mode=0o700, exist_ok=True)
        (folder / "leases").mkdir(mode=0o700, exist_ok=True)
        self.folder = folder
        self.log_path = folder / "proxy.log"
        with _locked(folder):
            me = os.getpid()
            self.lease = folder / "leases" / f"{me}-{_start_time(me)}-{secrets.token_hex(4)}"
            self.lease.touch()
            self.owner = self.lease.name
            keeper = _read_json(folder / "keeper.json")
            if keeper is None or _start_time(int(str(keeper["pid"]))) != keeper["started"]:
                keeper = self._spawn_keeper(folder)
        self.keeper = KeeperProcess(int(str(keeper["pid"])), str(keeper["started"]))
        try:
            state = self._wait_state(folder)
        except GatewayError:
            self.stop()
            raise
        self.port = int(str(state["port"]))
        self.state_dir = Path(str(state["state_dir"]))
        self.startup_s = time.monotonic() - started
        return self

    def _spawn_keeper(self, folder: Path) -> dict[str, object]:
        (folder / "state.json").unlink(missing_ok=True)
        (folder / "config.json").write_text(self.config.model_dump_json(), encoding="utf-8")
        with open(folder / "proxy.log", "ab") as log:
            process = subprocess.Popen(
                [sys.executable, "-P", "-m", "rexmle.llm.node_gateway", str(folder)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        keeper: dict[str, object] = {"pid": process.pid, "started": _start_time(process.pid)}
        _write_json(folder / "keeper.json", keeper)
        return keeper

    def _wait_state(self, folder: Path) -> dict[str, object]:
        assert self.keeper is not None
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            state = _read_json(folder / "state.json")
            if state is not None and state.get("keeper") == self.keeper.pid:
                return state
            if self.keeper.poll() is not None:
                break
            time.sleep(ATTACH_POLL_S)
        log = folder / "proxy.log"
        tail = log.read_text(encoding="utf-8", errors="replace")[-3000:] if log.is_file() else ""
        why = "exited" if self.keeper.poll() is not None else "did not answer in time"
        msg = f"the shared LLM gateway {why}; its log ({log}) ends with:\n{tail}"
        raise GatewayError(msg)

    def watched(self) -> Watched | None:
        """The keeper: the runs learn from it that the shared gateway exited."""
        return self.keeper

    def stop(self) -> None:
        """Give the lease back (the keeper stops the proxy once no lease is left)."""
        if self.lease is not None:
            self.lease.unlink(missing_ok=True)
            self.lease = None
        self.state_dir = None
        self.keeper = None
        self.owner = ""


def _live_leases(folder: Path) -> set[str]:
    """The names of the live leases (dead ones are removed)."""
    live: set[str] = set()
    for lease in (folder / "leases").iterdir():
        if _lease_alive(lease.name):
            live.add(lease.name)
        else:
            lease.unlink(missing_ok=True)
    return live


def drop_orphan_runs(state_dir: Path, live: set[str], owners: dict[str, str]) -> list[str]:
    """Remove the registrations whose owner lease is not in ``live``; their file names.

    A run registered by a process that has no lease any more (killed before it unregistered)
    has nobody to end it: its token is refused from now on. ``owners`` (registration file name
    -> owner, kept by the caller between calls) spares reading a registration twice.
    """
    runs = state_dir / "runs"
    present = {p.name for p in runs.glob("*.json")} if runs.is_dir() else set()
    for name in set(owners) - present:
        del owners[name]
    dropped: list[str] = []
    for name in sorted(present):
        if name not in owners:
            entry = _read_json(runs / name)
            owners[name] = "" if entry is None else str(entry.get("owner") or "")
        if owners[name] and owners[name] not in live:
            (runs / name).unlink(missing_ok=True)
            del owners[name]
            dropped.append(name)
    return dropped


def keep(folder: Path) -> int:
    """The keeper's loop (see the module docstring); returns its exit code."""
    config = LlmConfig.model_validate_json((folder / "config.json").read_text(encoding="utf-8"))
    gateway = Gateway(config, log_path=folder / "proxy.log")
    gateway.die_with_parent = True
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        gateway.start()
        state = {
            "keeper": os.getpid(),
            "port": gateway.port,
            "state_dir": str(gateway.state_dir),
            "startup_s": gateway.startup_s,
        }
        _write_json(folder / "state.json", state)
        idle_since: float | None = None
        owners: dict[str, str] = {}
        while gateway.process is not None and gateway.process.poll() is None:
            time.sleep(LEASE_POLL_S)
            with _locked(folder):
                live = _live_leases(folder)
                if gateway.state_dir is not None:
                    drop_orphan_runs(gateway.state_dir, live, owners)
                if live:
                    idle_since = None
                    continue
                idle_since = idle_since or time.monotonic()
                if time.monotonic() - idle_since >= IDLE_GRACE_S:
                    _retire(folder)
                    return 0
        with _locked(folder):
            _retire(folder)
        return 1
    finally:
        gateway.stop()


def _retire(folder: Path) -> None:
    """Under the lock: the gateway is no longer offered (a later process starts a new one)."""
    keeper = _read_json(folder / "keeper.json")
    if keeper is not None and keeper.get("pid") == os.getpid():
        (folder / "keeper.json").unlink(missing_ok=True)
        (folder / "state.json").unlink(missing_ok=True)


if __name__ == "__main__":
    sys.exit(keep(Path(sys.argv[1])))
