"""Sandboxes: run an agent's command in its workspace under a wall-clock limit.

Kinds: ``bwrap`` (bubblewrap: system read-only, only the workspace writable, data root, runs
root and home hidden, network per agent), ``local`` (a plain subprocess in its own process
group: the time limit holds, isolation does not), and the container sandboxes ``docker`` and
``apptainer`` (the agent's image, only the workspace and relays mounted). :func:`choose_sandbox`
picks bwrap where it works (probed once) and otherwise falls back to local with a loud warning
that is also recorded.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

SandboxKind = Literal["auto", "local", "bwrap", "docker", "apptainer"]
AGENT_DIR_INSIDE = "/agent"
"""Where the sandboxes with a mount namespace show an agent's own code, read-only."""
IsolationKind = Literal["local", "bwrap", "docker", "apptainer"]


@dataclass(frozen=True)
class Relay:
    """Inside a network-less sandbox, ``127.0.0.1:port`` forwards each connection to ``socket``.

    The unix socket lives on the host (in a folder the sandbox binds); the service behind it
    (validation server, LLM gateway) keeps the same URL inside the sandbox as outside.
    """

    port: int
    socket: Path


@dataclass(frozen=True)
class SandboxLimits:
    """Resource caps of one sandboxed run (recorded in run.json under ``sandbox.limits``)."""

    tmp_bytes: int = 4 << 30
    """Size of each private tmpfs the agent may write (``/tmp``, ``/var/tmp``; bwrap and docker),
    at most the run's memory limit."""
    shm_bytes: int = 2 << 30
    """Size of ``/dev/shm`` (bwrap and docker), at most the run's memory limit."""
    max_processes: int = 8192
    """Processes and threads of the run: its cgroup's ``pids.max`` where it has one (every
    process, any uid; local and bwrap), docker's ``--pids-limit``, else RLIMIT_NPROC (bwrap)."""
    log_bytes: int = 64 << 20
    """Bytes of stdout and of stderr copied into the run's logs; the rest is dropped."""


def recorded_limits(limits: SandboxLimits, kind: str) -> dict[str, int | str | None]:
    """The limits as run.json records them: those a ``kind`` of sandbox does not enforce are None."""
    enforced_by_bwrap_only = kind != "bwrap"
    return {
        "tmp_bytes": None if enforced_by_bwrap_only else limits.tmp_bytes,
        "shm_bytes": None if enforced_by_bwrap_only else limits.shm_bytes,
        "max_processes": None if enforced_by_bwrap_only else limits.max_processes,
        "log_bytes": limits.log_bytes,
    }


@dataclass(frozen=True)
class SandboxRequest:
    """Everything a sandbox needs to start one agent command."""

    argv: list[str]
    env: dict[str, str]
    workspace: Path
    """The agent's working directory, the only host folder it may write."""
    stdout_path: Path
    stderr_path: Path
    time_limit_s: float
    memory_limit_mb: int | None = None
    network: bool = False
    hidden: tuple[Path, ...] = ()
    """Host folders the agent must not see (data root, runs root); bwrap mounts tmpfs over them."""
    readonly: tuple[Path, ...] = ()
    """Extra host folders shown read-only at their own paths (an llm agent's environment)."""
    shared_writable: tuple[Path, ...] = ()
    """Extra host folders bound writable (the validation server's socket folder)."""
    relays: tuple[Relay, ...] = ()
    """Ports forwarded to host unix sockets inside a network-less sandbox (one per service)."""
    kill_grace_s: float = 5.0
    """Seconds between SIGTERM and SIGKILL when the limit is reached."""
    cancel: threading.Event | None = None
    """Set by the harness to stop the agent early (Ctrl-C): the run is then neither done nor failed."""
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    harness_package: bool = False
    """Whether the agent imports ``rexmle`` (baseline, dummy, llm adapters): only then bwrap
    mounts it."""
    image: str | None = None
    """The agent's container image (docker, apptainer sandboxes); unused by the others."""
    agent_code: Path | None = None
    """The snapshot of the agent's own code (:mod:`rexmle.runner.agent_code`), shown read-only
    at :data:`AGENT_DIR_INSIDE` (bwrap, docker, apptainer; ``$AGENT_DIR`` names it)."""


@dataclass(frozen=True)
class SandboxResult:
    """How an agent command ended."""

    exit_code: int | None
    """The command's exit status; negative: killed by that signal; None: it never started."""
    timed_out: bool
    cancelled: bool
    seconds: float
    killed_processes: int = 0
    """Processes still alive at the limit (or after the command ended) and killed."""
    error: str | None = None
    """Why the command could not start, when it could not."""
    limits: dict[str, int | str | None] | None = None
    """The limits that held and what held them (run.json ``sandbox.limits``); None: as planned."""


@dataclass(frozen=True)
class SandboxInfo:
    """What run.json records about the sandbox."""

    kind: IsolationKind
    isolated: bool
    """True when the filesystem isolation holds (data root and other runs hidden)."""
    network_isolated: bool
    network: Literal["off", "isolated-outbound", "host"] = "host"
    """``off``: no network but the relays; ``isolated-outbound``: own namespace, outbound only,
    no host loopback; ``host``: the host's network (local sandbox)."""
    warnings: list[str] = field(default_factory=list)


class Sandbox(ABC):
    """Base class: :meth:`run` one request; :meth:`info` says what isolation it gives."""

    kind: IsolationKind = "local"

    @abstractmethod
    def info(self, *, network: bool) -> SandboxInfo:
        """The isolation this sandbox gives to a run with or without network."""

    def agent_dir_path(self, snapshot: Path) -> str:
        """Where the agent sees the snapshot of its own code (``$AGENT_DIR``)."""
        del snapshot  # mounted at the fixed path
        return AGENT_DIR_INSIDE

    def agent_code_problem(self) -> str | None:
        """Why this sandbox cannot keep an agent from writing the snapshot of its own code (or
        another run's) here, or None: the sandboxes with a mount namespace bind it read-only.
        """
        return None

    @abstractmethod
    def run(self, request: SandboxRequest) -> SandboxResult:
        """Run the request's command under its limits.

        Never raises for the command's own failures: a command that cannot start comes back
        with ``exit_code`` None and ``error`` set; one past its limit with ``timed_out``.
        """


NOT_ISOLATED_WARNING = (
    "bubblewrap (bwrap) is not usable on this machine: agents run as plain subprocesses and are "
    "NOT isolated (they can read the data root, including private/ answers, and use the network). "
    "Install bubblewrap (apt-get install bubblewrap) for isolated runs."
)


def choose_sandbox(kind: SandboxKind = "auto") -> Sandbox:
    """The sandbox for ``kind``: ``auto`` = bwrap when it works here, else local (warned).

    Raises:
        RuntimeError: ``bwrap`` was asked for explicitly and does not work on this machine, or
            ``docker`` / ``apptainer`` is not installed or its daemon is down.
    """
    from rexmle.runner.sandbox.bwrap import BwrapSandbox, bwrap_problem
    from rexmle.runner.sandbox.local import LocalSandbox

    if kind == "local":
        return LocalSandbox()
    if kind in ("docker", "apptainer"):
        return _container_sandbox(kind)
    problem = bwrap_problem()
    if problem is None:
        return BwrapSandbox()
    if kind == "bwrap":
        msg = f"the bwrap sandbox does not work here: {problem}"
        raise RuntimeError(msg)
    return LocalSandbox(warnings=[f"{NOT_ISOLATED_WARNING} ({problem})"])


def _container_sandbox(kind: str) -> Sandbox:
    """The docker or apptainer sandbox, or a RuntimeError saying why the engine cannot run."""
    if kind == "docker":
        from rexmle.runner.sandbox.docker import DockerSandbox, docker_problem

        problem = docker_problem()
        if problem is None:
            return DockerSandbox()
    else:
        from rexmle.runner.sandbox.apptainer import ApptainerSandbox, apptainer_problem

        problem = apptainer_problem()
        if problem is None:
            return ApptainerSandbox()
    msg = f"the {kind} sandbox cannot run here: {problem}"
    raise RuntimeError(msg)
