"""The ``apptainer`` sandbox: ``apptainer exec`` of the agent's image with only the workspace bound.

The HPC form (``apptainer exec --nv --contain``), with:

- ``--contain --containall --cleanenv --no-home --writable-tmpfs``: no host folder but the
  binds below, no host environment, a private ``/tmp`` and ``/dev``;
- ``--no-privs`` when the harness runs as root: root inside keeps no capability, so it can
  neither remount a read-only bind (the snapshot of the agent's code, ``data/``) writable nor
  mount anything else;
- exactly these binds, each at its host path: the workspace read-write, its ``data/``
  read-only, the relays' socket folders and ``shared_writable`` read-write, ``readonly``
  read-only, the shim read-only at ``/opt/rexmle/shim.py`` and the folder of the harness's
  lifeline socket read-only (the shim ends the container when the harness is gone, however it
  died: :mod:`rexmle.runner.sandbox.lifeline`); the snapshot of the agent's own code read-only
  at ``/agent`` (not at its host path);
- GPUs: ``--nv`` with ``CUDA_VISIBLE_DEVICES`` set to the run's device ids (apptainer exposes the
  host's devices; the variable selects the run's);
- network: ``--net --network none`` when the agent has none (needs root or a setuid
  installation); the relays keep the validation and gateway URLs working;
- ``--memory``, ``--cpus``, ``--pids-limit`` (cgroups; root or cgroups v2 delegation);
- the agent's variables as ``APPTAINERENV_<NAME>`` in the client's environment, never on its
  command line.

The wall-clock limit, SIGTERM then SIGKILL and the statuses are those of the local sandbox.
Apptainer is not packaged in Debian 12: where it is missing the run ends ``infra_error`` with a
message saying so.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

from rexmle.runner.sandbox import (
    AGENT_DIR_INSIDE,
    Sandbox,
    SandboxInfo,
    SandboxRequest,
    SandboxResult,
)
from rexmle.runner.sandbox.docker import (
    SHIM_IN_CONTAINER,
    container_binds,
    container_gpus,
    engine_refusal,
    inner_argv,
    shim_source,
)
from rexmle.runner.sandbox.lifeline import SocketLifeline
from rexmle.runner.sandbox.local import run_process_group

PROBE_TIMEOUT_S = 20.0


@functools.cache
def apptainer_problem() -> str | None:
    """Why apptainer cannot run here, or None when it can."""
    exe = shutil.which("apptainer") or shutil.which("singularity")
    if exe is None:
        return (
            "apptainer is not installed (not packaged in Debian 12: install it from "
            "https://apptainer.org or use the docker or bwrap sandbox)"
        )
    try:
        done = subprocess.run(
            [exe, "--version"], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"apptainer does not run: {error}"
    if done.returncode != 0:
        return f"apptainer does not run: {done.stderr.strip() or done.returncode}"
    return None


def _bind(source: Path, *, readonly: bool) -> list[str]:
    return ["--bind", f"{source}:{source}" + (":ro" if readonly else "")]


def apptainer_argv(
    request: SandboxRequest,
    *,
    image: str,
    cpus: float | None = None,
    lifeline: SocketLifeline | None = None,
) -> list[str]:
    """The complete ``apptainer exec`` command line for ``request`` (module docstring)."""
    workspace = request.workspace.resolve()
    exe = shutil.which("apptainer") or shutil.which("singularity") or "apptainer"
    argv = [
        exe,
        "exec",
        "--contain",
        "--containall",
        "--cleanenv",
        "--no-home",
        "--writable-tmpfs",
        "--pwd",
        str(workspace),
        "--pids-limit",
        str(request.limits.max_processes),
    ]
    if os.geteuid() == 0:  # root keeps its capabilities in the container unless told not to
        argv.append("--no-privs")
    if not request.network:
        argv += ["--net", "--network", "none"]
    if request.memory_limit_mb is not None:
        argv += ["--memory", f"{request.memory_limit_mb}M"]
    if cpus is not None:
        argv += ["--cpus", f"{cpus:g}"]
    if container_gpus(request.env):
        argv.append("--nv")
    for folder, readonly in container_binds(request, lifeline):
        argv += _bind(folder, readonly=readonly)
    argv += ["--bind", f"{shim_source()}:{SHIM_IN_CONTAINER}:ro"]
    if request.agent_code is not None:
        argv += ["--bind", f"{request.agent_code.resolve()}:{AGENT_DIR_INSIDE}:ro"]
    return [*argv, image, *inner_argv(request, lifeline)]


def client_env(env: dict[str, str]) -> dict[str, str]:
    """The apptainer client's environment: each agent variable as ``APPTAINERENV_<NAME>``."""
    outside = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    for key, value in env.items():
        if key != "PATH":
            outside[f"APPTAINERENV_{key}"] = value
    return outside


class ApptainerSandbox(Sandbox):
    """``apptainer exec`` of the agent's image (see the module docstring)."""

    kind = "apptainer"

    def __init__(self, *, cpus: float | None = None) -> None:
        self.cpus = cpus

    def info(self, *, network: bool) -> SandboxInfo:
        """Filesystem isolated; network isolated when the agent has none."""
        return SandboxInfo(kind="apptainer", isolated=True, network_isolated=not network)

    def run(self, request: SandboxRequest) -> SandboxResult:
        """Run the command in the agent's image under the request's limits."""
        refused = engine_refusal(apptainer_problem(), request)
        if refused is not None:
            return refused
        lifeline = SocketLifeline()
        argv = apptainer_argv(request, image=str(request.image), cpus=self.cpus, lifeline=lifeline)
        return run_process_group(
            replace(request, env=client_env(request.env)), argv, lifeline=lifeline
        )
