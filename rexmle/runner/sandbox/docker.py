"""The ``docker`` sandbox: one container per run, only the workspace and the relays mounted.

``docker run`` with:

- the agent's image (``SandboxRequest.image``, named after the agent's declaration by
  :func:`agent_image`; ``images/`` describes the paper agents' images);
- exactly these binds, each at its host path: the workspace read-write, its ``data/`` read-only,
  the sockets folders of the relays (validation server, LLM gateway) and the request's
  ``shared_writable`` folders read-write, its ``readonly`` folders read-only, the snapshot of
  the agent's own code read-only at ``/agent`` (``$AGENT_DIR``), and the shim (one
  standard-library script) read-only at ``/opt/rexmle/shim.py``, and the folder of the harness's
  lifeline socket read-only. Never the data root, a run's ``private/``, another run or a home
  folder;
- ``--network none`` unless the agent has network; the relays (``shim.py --relay``) keep the
  validation and gateway URLs working inside; an agent with network is on the agents' own
  network, outbound only, the host and private ranges out of reach
  (:mod:`rexmle.runner.sandbox.docker_network`), never on docker's default bridge;
- every ``--mount`` value written as docker parses it (a CSV record: a path with a comma or a
  quote is quoted; one with a control character is refused, :func:`mount_value`);
- the run's GPUs by device id (``--gpus device=0,1`` from the request's ``CUDA_VISIBLE_DEVICES``;
  inside, the container numbers them from 0, so ``CUDA_VISIBLE_DEVICES`` is renumbered);
- ``--memory`` (and the same ``--memory-swap``: no swap), ``--cpus``, ``--pids-limit`` (the
  request's ``limits.max_processes``), ``/tmp`` and ``/dev/shm`` sized by its limits and within
  the memory limit: the container's cgroup counts its tmpfs pages and every process, so the shim
  sets no RLIMIT_AS;
- the caller's uid:gid, ``--cap-drop ALL``, ``--security-opt no-new-privileges``, a read-only
  root and a private ``/tmp``; ``--init`` so orphans are reaped.

The wall-clock limit, SIGTERM then SIGKILL after the grace and the statuses are those of the
local sandbox: the ``docker run`` client is the process the limit is enforced on, and on the way
out the container is removed with ``docker rm -f`` (which kills whatever the agent left in it).
A harness that dies without that step (SIGKILL, the OOM killer) still ends the container: the shim
runs every command, holds the harness's lifeline socket (:mod:`rexmle.runner.sandbox.lifeline`)
and, when the harness is gone, kills what it started and exits, and ``--init`` then ends.
"""

from __future__ import annotations

import csv
import functools
import io
import os
import shutil
import subprocess
import sys
import uuid
from dataclasses import replace
from pathlib import Path

import rexmle
from rexmle.runner.sandbox import (
    AGENT_DIR_INSIDE,
    Sandbox,
    SandboxInfo,
    SandboxLimits,
    SandboxRequest,
    SandboxResult,
)
from rexmle.runner.sandbox.docker_network import (
    NETWORK_NAME,
    NetworkUnavailable,
    ensure_agent_network,
)
from rexmle.runner.sandbox.lifeline import SocketLifeline
from rexmle.runner.sandbox.local import run_process_group

SHIM_IN_CONTAINER = "/opt/rexmle/shim.py"
PROBE_TIMEOUT_S = 20.0
CONTAINER_PYTHON = "python3"
"""The interpreter inside agent images; ``{python}`` in a declaration's command means it."""


class EngineMissing(RuntimeError):
    """The container engine is not installed or its daemon does not answer."""


@functools.cache
def docker_problem() -> str | None:
    """Why docker cannot run containers here (probed once), or None when it can."""
    exe = shutil.which("docker")
    if exe is None:
        return "docker is not installed (apt-get install docker.io, or Docker Engine)"
    try:
        done = subprocess.run(
            [exe, "version", "--format", "{{.Server.Version}}"],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"the docker daemon does not answer: {error}"
    if done.returncode != 0:
        detail = done.stderr.strip() or f"exit {done.returncode}"
        return f"the docker daemon is not running or not reachable: {detail}"
    return None


def shim_source() -> Path:
    """The relay/limit shim (standard library only), bound read-only into containers."""
    return Path(rexmle.__file__).resolve().parent / "runner" / "sandbox" / "shim.py"


def container_gpus(env: dict[str, str]) -> list[str]:
    """The run's GPU ids (its ``CUDA_VISIBLE_DEVICES``), empty when it has none."""
    value = env.get("CUDA_VISIBLE_DEVICES", "")
    return [part.strip() for part in value.split(",") if part.strip()]


def inner_argv(
    request: SandboxRequest, lifeline: SocketLifeline | None = None, *, rlimit_memory: bool = True
) -> list[str]:
    """The command run inside: the image's interpreter for the harness's, wrapped in the shim
    (RLIMIT_AS unless ``rlimit_memory`` is False, relays, the harness's ``lifeline``) when any of
    them is asked for.
    """
    argv = [CONTAINER_PYTHON if part == sys.executable else part for part in request.argv]
    relays = () if request.network else request.relays
    memory = request.memory_limit_mb if rlimit_memory else None
    if memory is None and not relays and lifeline is None:
        return argv
    wrapped = [CONTAINER_PYTHON, SHIM_IN_CONTAINER]
    if lifeline is not None:
        wrapped += lifeline.shim_args()
    if memory is not None:
        wrapped += ["--memory-limit-mb", str(request.memory_limit_mb)]
    for relay in relays:
        wrapped += ["--relay", f"{relay.port}={relay.socket}"]
    return [*wrapped, "--", *argv]


def container_binds(
    request: SandboxRequest, lifeline: SocketLifeline | None = None
) -> list[tuple[Path, bool]]:
    """(host folder, read-only) of every folder a container sees, each at its host path: the
    workspace, its ``data/`` read-only, the ``lifeline``'s folder read-only, the relays' socket
    folders and ``shared_writable``, ``readonly``. Nothing else (the shim is added by each engine).
    """
    workspace = request.workspace.resolve()
    binds = [(workspace, False)]
    data = workspace / "data"
    if data.is_dir():
        binds.append((data, True))
    if lifeline is not None:
        binds.append((lifeline.folder.resolve(), True))
    sockets = {relay.socket.parent.resolve() for relay in request.relays}
    for folder in sorted(sockets | {Path(f).resolve() for f in request.shared_writable}):
        binds.append((folder, False))
    for folder in sorted({Path(f).resolve() for f in request.readonly}):
        binds.append((folder, True))
    return binds


def engine_refusal(problem: str | None, request: SandboxRequest) -> SandboxResult | None:
    """The result of a run that cannot start (engine missing or down, no image), or None."""
    if problem is None and request.image is None:
        problem = "no image for this agent (see images/ for the paper agents' images)"
    if problem is None:
        return None
    return SandboxResult(
        exit_code=None, timed_out=False, cancelled=False, seconds=0.0, error=problem
    )


class UnmountablePath(ValueError):
    """A host path that no ``--mount`` value can name (it holds a control character)."""


def mount_value(fields: list[tuple[str, str | None]]) -> str:
    """A ``--mount`` value: ``key=value`` fields as one CSV record, as docker parses it.

    Docker reads the value with a CSV reader, so a field holding a comma or a double quote is
    quoted (and its quotes doubled): ``"source=/runs/a,b"``. A value with a control character
    (a newline, a tab, ...) is refused.

    Raises:
        UnmountablePath: a value holds a control character.
    """
    parts = []
    for key, value in fields:
        if value is not None and any(ord(c) < 32 or ord(c) == 127 for c in value):
            msg = (
                f"docker cannot mount {value!r}: the path holds a control character; "
                "use a runs folder and data folder whose paths have none"
            )
            raise UnmountablePath(msg)
        parts.append(key if value is None else f"{key}={value}")
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="").writerow(parts)
    return buffer.getvalue()


def _bind(source: Path, *, readonly: bool, target: Path | str | None = None) -> list[str]:
    fields: list[tuple[str, str | None]] = [
        ("type", "bind"),
        ("source", str(source)),
        ("target", str(target if target is not None else source)),
    ]
    if readonly:
        fields.append(("readonly", None))
    return ["--mount", mount_value(fields)]


def docker_argv(
    request: SandboxRequest,
    *,
    image: str,
    name: str,
    cpus: float | None = None,
    lifeline: SocketLifeline | None = None,
    network: str = NETWORK_NAME,
) -> list[str]:
    """The complete ``docker run`` command line for ``request`` (see the module docstring).

    ``network``: the docker network of an agent with network (made by
    :func:`~rexmle.runner.sandbox.docker_network.ensure_agent_network`).

    Raises:
        UnmountablePath: a folder to mount has a path no ``--mount`` value can name.
    """
    limits = sized_limits(request)
    workspace = request.workspace.resolve()
    argv = [
        shutil.which("docker") or "docker",
        "run",
        "--rm",
        "--name",
        name,
        "--init",
        "--user",
        f"{os.getuid()}:{os.getgid()}",
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges",
        "--read-only",
        "--tmpfs",
        f"/tmp:rw,nosuid,nodev,size={limits.tmp_bytes}",
        "--shm-size",
        str(limits.shm_bytes),
        "--pids-limit",
        str(limits.max_processes),
        "--network",
        network if request.network else "none",
        "--workdir",
        str(workspace),
    ]
    if request.memory_limit_mb is not None:
        argv += ["--memory", f"{request.memory_limit_mb}m"]
        argv += ["--memory-swap", f"{request.memory_limit_mb}m"]
    if cpus is not None:
        argv += ["--cpus", f"{cpus:g}"]
    gpus = container_gpus(request.env)
    if gpus:
        argv += ["--gpus", f"device={','.join(gpus)}"]
    for folder, readonly in container_binds(request, lifeline):
        argv += _bind(folder, readonly=readonly)
    argv += _bind(shim_source(), readonly=True, target=SHIM_IN_CONTAINER)
    if request.agent_code is not None:
        argv += _bind(request.agent_code.resolve(), readonly=True, target=AGENT_DIR_INSIDE)
    for key in sorted(container_env(request.env)):
        argv += ["--env", key]
    return [*argv, image, *inner_argv(request, lifeline, rlimit_memory=False)]


def sized_limits(request: SandboxRequest) -> SandboxLimits:
    """The request's limits with ``/tmp`` and ``/dev/shm`` sized within its memory limit."""
    limits = request.limits
    if request.memory_limit_mb is None:
        return limits
    memory = request.memory_limit_mb << 20
    return replace(
        limits, tmp_bytes=min(limits.tmp_bytes, memory), shm_bytes=min(limits.shm_bytes, memory)
    )


def held_limits(request: SandboxRequest) -> dict[str, int | str | None]:
    """What run.json records under ``sandbox.limits`` for a docker run: the container's cgroup
    (``--memory``, ``--pids-limit``) holds memory, tmpfs pages included, and processes.
    """
    limits = sized_limits(request)
    memory = None if request.memory_limit_mb is None else request.memory_limit_mb << 20
    return {
        "memory_bytes": memory,
        "memory_held_by": None if memory is None else "docker",
        "max_processes": limits.max_processes,
        "max_processes_held_by": "docker",
        "tmp_bytes": limits.tmp_bytes,
        "shm_bytes": limits.shm_bytes,
        "log_bytes": limits.log_bytes,
        "cgroup_problem": None,
    }


def container_env(env: dict[str, str]) -> dict[str, str]:
    """The agent's environment inside the container.

    Values travel through the docker client's environment (``--env NAME``), never on its command
    line. ``CUDA_VISIBLE_DEVICES`` is renumbered from 0 (the container sees only its GPUs) and
    ``PATH`` is the image's.
    """
    inside = {k: v for k, v in env.items() if k != "PATH"}
    gpus = container_gpus(env)
    if gpus:
        inside["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(len(gpus)))
    return inside


class DockerSandbox(Sandbox):
    """One container per run (see the module docstring)."""

    kind = "docker"

    def __init__(self, *, cpus: float | None = None) -> None:
        self.cpus = cpus

    def info(self, *, network: bool) -> SandboxInfo:
        """Filesystem isolated; network off, or outbound only on the agents' network."""
        return SandboxInfo(
            kind="docker",
            isolated=True,
            network_isolated=True,
            network="isolated-outbound" if network else "off",
        )

    def run(self, request: SandboxRequest) -> SandboxResult:
        """Run the command in a fresh container under the request's limits."""
        refused = engine_refusal(docker_problem(), request)
        if refused is not None:
            return refused
        name = f"rexmle-{uuid.uuid4().hex[:16]}"
        client_env = {**container_env(request.env), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        for key in ("DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CONTEXT"):
            if key in os.environ:
                client_env[key] = os.environ[key]
        docker = shutil.which("docker") or "docker"
        lifeline = SocketLifeline()
        try:
            network = ensure_agent_network(docker, client_env) if request.network else "none"
            argv = docker_argv(
                request,
                image=str(request.image),
                name=name,
                cpus=self.cpus,
                lifeline=lifeline,
                network=network,
            )
        except (UnmountablePath, NetworkUnavailable) as error:
            lifeline.cut()
            what = "network" if isinstance(error, NetworkUnavailable) else "mounts"
            return SandboxResult(
                exit_code=None,
                timed_out=False,
                cancelled=False,
                seconds=0.0,
                error=f"the docker sandbox cannot set up the agent's {what}: {error}",
            )
        try:
            result = run_process_group(replace(request, env=client_env), argv, lifeline=lifeline)
            return replace(result, limits=held_limits(request))
        finally:
            subprocess.run(
                [shutil.which("docker") or "docker", "rm", "-f", name],
                capture_output=True,
                timeout=60,
                check=False,
            )


def agent_image(agent_id: str, adapter: str | None, *, apptainer: bool = False) -> str:
    """The image of an agent: ``rexmle-<adapter or id>:<rexmle version>`` (images/README.md).

    For apptainer: ``$REXMLE_IMAGES_DIR/rexmle-<adapter or id>-<version>.sif`` (default the
    current folder).
    """
    name = f"rexmle-{adapter or agent_id}"
    if apptainer:
        folder = Path(os.environ.get("REXMLE_IMAGES_DIR", "."))
        return str(folder.resolve() / f"{name}-{rexmle.__version__}.sif")
    return f"{name}:{rexmle.__version__}"
