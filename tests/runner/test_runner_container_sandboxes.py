"""docker and apptainer sandboxes: the built command lines, parsed; a clear error without engine."""

from __future__ import annotations

import csv
import itertools
import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from rexmle.runner.sandbox import AGENT_DIR_INSIDE, Relay, SandboxLimits, SandboxRequest
from rexmle.runner.sandbox.apptainer import ApptainerSandbox, apptainer_argv, client_env
from rexmle.runner.sandbox.docker import (
    SHIM_IN_CONTAINER,
    DockerSandbox,
    UnmountablePath,
    container_env,
    docker_argv,
)
from rexmle.runner.sandbox.docker_network import NETWORK_NAME
from rexmle.runner.sandbox.lifeline import SocketLifeline


def make_request(tmp_path: Path, **more: object) -> SandboxRequest:
    workspace = tmp_path / "runs" / "g" / "isles22" / "dummy" / "seed-0" / "workspace"
    (workspace / "data").mkdir(parents=True)
    (workspace / "submission").mkdir()
    sockets = tmp_path / "sock"
    sockets.mkdir()
    fields: dict[str, object] = {
        "argv": [sys.executable, "-m", "rexmle.agents.dummy"],
        "env": {
            "PATH": "/usr/bin",
            "DATA_DIR": str(workspace / "data"),
            "OPENAI_API_KEY": "sk-secret-value",
            "CUDA_VISIBLE_DEVICES": "2,5",
        },
        "workspace": workspace,
        "stdout_path": tmp_path / "out.log",
        "stderr_path": tmp_path / "err.log",
        "time_limit_s": 60,
        "memory_limit_mb": 2048,
        "hidden": (tmp_path / "data-root", tmp_path / "runs"),
        "relays": (Relay(8765, sockets / "validation.sock"), Relay(8766, sockets / "llm.sock")),
        "image": "rexmle-dummy:0.1.0",
        "limits": SandboxLimits(max_processes=512, tmp_bytes=1 << 30, shm_bytes=1 << 28),
        **more,
    }
    return SandboxRequest(**fields)  # type: ignore[arg-type]


def docker_mounts(argv: list[str]) -> dict[str, tuple[str, bool]]:
    """Target -> (source, readonly) of every --mount in a docker argv."""
    mounts = {}
    for flag, value in itertools.pairwise(argv):
        if flag == "--mount":  # docker reads the value as one CSV record
            fields = next(csv.reader([value]))
            parts = dict(p.split("=", 1) if "=" in p else (p, "") for p in fields)
            assert parts["type"] == "bind"
            mounts[parts["target"]] = (parts["source"], "readonly" in parts)
    return mounts


def option_values(argv: list[str], flag: str) -> list[str]:
    return [value for f, value in itertools.pairwise(argv) if f == flag]


def test_docker_mounts_exactly_the_workspace_relays_and_shim(tmp_path: Path):
    request = make_request(tmp_path)
    argv = docker_argv(request, image="rexmle-dummy:0.1.0", name="rexmle-x", cpus=4)
    workspace = str(request.workspace.resolve())
    sockets = str((tmp_path / "sock").resolve())
    assert docker_mounts(argv) == {
        workspace: (workspace, False),
        f"{workspace}/data": (f"{workspace}/data", True),
        sockets: (sockets, False),
        SHIM_IN_CONTAINER: (docker_mounts(argv)[SHIM_IN_CONTAINER][0], True),
    }
    assert docker_mounts(argv)[SHIM_IN_CONTAINER][0].endswith("rexmle/runner/sandbox/shim.py")
    for forbidden in ("data-root", "private", str(Path.home())):
        assert not any(forbidden in s for s, _ in docker_mounts(argv).values() if s != workspace)
    assert not any(part == "-v" or part == "--volume" for part in argv)


def test_docker_passes_exactly_the_runs_gpus_and_limits(tmp_path: Path):
    request = make_request(tmp_path)
    argv = docker_argv(request, image="img", name="rexmle-x", cpus=4)
    assert option_values(argv, "--gpus") == ["device=2,5"]
    assert option_values(argv, "--network") == ["none"]
    assert option_values(argv, "--memory") == ["2048m"]
    assert option_values(argv, "--memory-swap") == ["2048m"]
    assert option_values(argv, "--cpus") == ["4"]
    assert option_values(argv, "--pids-limit") == ["512"]
    assert option_values(argv, "--tmpfs") == [f"/tmp:rw,nosuid,nodev,size={1 << 30}"]
    assert option_values(argv, "--shm-size") == [str(1 << 28)]
    assert option_values(argv, "--cap-drop") == ["ALL"]
    assert "--read-only" in argv
    assert "--privileged" not in argv
    # image, then the shim (relays; no RLIMIT_AS: the container's cgroup holds the memory)
    # around the agent with the image's interpreter
    tail = argv[argv.index("img") :]
    assert tail == [
        "img", "python3", SHIM_IN_CONTAINER,
        "--relay", f"8765={tmp_path / 'sock' / 'validation.sock'}",
        "--relay", f"8766={tmp_path / 'sock' / 'llm.sock'}",
        "--", "python3", "-m", "rexmle.agents.dummy",
    ]  # fmt: skip
    # values travel in the client's environment, never on the command line
    assert "sk-secret-value" not in " ".join(argv)
    assert set(option_values(argv, "--env")) == {
        "DATA_DIR",
        "OPENAI_API_KEY",
        "CUDA_VISIBLE_DEVICES",
    }
    inside = container_env(request.env)
    assert inside["CUDA_VISIBLE_DEVICES"] == "0,1"  # the container numbers its 2 GPUs from 0
    assert "PATH" not in inside


def test_docker_with_network_and_without_gpus(tmp_path: Path):
    env = {"PATH": "/usr/bin"}
    request = make_request(tmp_path, network=True, env=env, memory_limit_mb=None)
    argv = docker_argv(request, image="img", name="rexmle-x")
    assert option_values(argv, "--network") == [NETWORK_NAME]  # never docker's default bridge
    assert "--gpus" not in argv
    assert "--memory" not in argv
    # with network the relays are not needed: the agent's command runs as given
    assert argv[argv.index("img") :] == ["img", "python3", "-m", "rexmle.agents.dummy"]


def apptainer_binds(argv: list[str]) -> dict[str, tuple[str, bool]]:
    binds = {}
    for value in option_values(argv, "--bind"):
        parts = value.split(":")
        binds[parts[1]] = (parts[0], parts[2:] == ["ro"])
    return binds


def test_apptainer_binds_exactly_the_workspace_relays_and_shim(tmp_path: Path):
    request = make_request(tmp_path)
    argv = apptainer_argv(request, image="/images/rexmle-dummy-0.1.0.sif", cpus=2)
    workspace = str(request.workspace.resolve())
    sockets = str((tmp_path / "sock").resolve())
    binds = apptainer_binds(argv)
    assert set(binds) == {workspace, f"{workspace}/data", sockets, SHIM_IN_CONTAINER}
    assert binds[workspace] == (workspace, False)
    assert binds[f"{workspace}/data"] == (f"{workspace}/data", True)
    assert binds[sockets] == (sockets, False)
    assert binds[SHIM_IN_CONTAINER][1]
    for flag in ("--contain", "--containall", "--cleanenv", "--no-home", "--nv"):
        assert flag in argv
    assert option_values(argv, "--network") == ["none"]
    assert option_values(argv, "--memory") == ["2048M"]
    assert option_values(argv, "--cpus") == ["2"]
    assert option_values(argv, "--pids-limit") == ["512"]
    outside = client_env(request.env)
    # the run's GPUs by id, through the environment apptainer passes in
    assert outside["APPTAINERENV_CUDA_VISIBLE_DEVICES"] == "2,5"
    assert outside["APPTAINERENV_OPENAI_API_KEY"] == "sk-secret-value"
    assert "sk-secret-value" not in " ".join(argv)


def test_the_lifeline_socket_is_bound_read_only_and_held_by_the_shim(tmp_path: Path):
    request = make_request(tmp_path, network=True, env={"PATH": "/usr/bin"}, memory_limit_mb=None)
    lifeline = SocketLifeline()
    try:
        folder = str(lifeline.folder.resolve())
        argv = docker_argv(request, image="img", name="rexmle-x", lifeline=lifeline)
        assert docker_mounts(argv)[folder] == (folder, True)
        # no relay and no memory limit, and still the shim: it holds the lifeline
        assert argv[argv.index("img") :] == [
            "img", "python3", SHIM_IN_CONTAINER, "--lifeline-socket", str(lifeline.path),
            "--", "python3", "-m", "rexmle.agents.dummy",
        ]  # fmt: skip
        binds = apptainer_binds(apptainer_argv(request, image="/i/x.sif", lifeline=lifeline))
        assert binds[folder] == (folder, True)
        assert lifeline.path.is_socket()
    finally:
        lifeline.cut()
    assert not lifeline.folder.exists()


def test_a_missing_engine_is_an_infra_error_saying_so(tmp_path: Path, monkeypatch):
    from rexmle.runner.sandbox import apptainer, docker

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    docker.docker_problem.cache_clear()
    apptainer.apptainer_problem.cache_clear()
    try:
        request = make_request(tmp_path)
        result = DockerSandbox().run(request)
        assert result.exit_code is None
        assert "docker is not installed" in (result.error or "")
        result = ApptainerSandbox().run(request)
        assert "apptainer is not installed" in (result.error or "")
    finally:
        docker.docker_problem.cache_clear()
        apptainer.apptainer_problem.cache_clear()


def test_a_docker_daemon_that_is_down_is_named(tmp_path: Path, monkeypatch):
    from rexmle.runner.sandbox import docker

    fake = tmp_path / "bin"
    fake.mkdir()
    client = fake / "docker"
    client.write_text(
        "#!/bin/sh\necho 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock.' >&2\n"
        "exit 1\n"
    )
    client.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:/usr/bin:/bin")
    docker.docker_problem.cache_clear()
    try:
        result = DockerSandbox().run(make_request(tmp_path))
        assert "daemon is not running" in (result.error or "")
        assert "Cannot connect to the Docker daemon" in (result.error or "")
    finally:
        docker.docker_problem.cache_clear()


def test_docker_mount_values_quote_a_comma_and_refuse_a_control_character(tmp_path: Path):
    odd = tmp_path / 'run,"x",readonly=false'
    request = make_request(odd)
    mounts = docker_mounts(docker_argv(request, image="img", name="rexmle-x"))
    workspace = str(request.workspace.resolve())
    assert mounts[workspace] == (workspace, False)  # one mount, the whole path, writable
    assert mounts[f"{workspace}/data"] == (f"{workspace}/data", True)
    newline = make_request(tmp_path / "run\nx")
    with pytest.raises(UnmountablePath, match="control character"):
        docker_argv(newline, image="img", name="rexmle-x")


def test_docker_sizes_tmp_and_shm_within_the_memory_limit(tmp_path: Path):
    request = make_request(tmp_path, memory_limit_mb=512, limits=SandboxLimits())
    argv = docker_argv(request, image="img", name="rexmle-x")
    assert option_values(argv, "--tmpfs") == [f"/tmp:rw,nosuid,nodev,size={512 << 20}"]
    assert option_values(argv, "--shm-size") == [str(512 << 20)]


def test_the_agent_code_snapshot_is_bound_read_only_at_agent_and_nothing_else_moves(
    tmp_path: Path,
):
    snapshot = tmp_path / "runs" / "g" / "isles22" / "dummy" / "seed-0" / "agent-code"
    snapshot.mkdir(parents=True)
    request = make_request(tmp_path, agent_code=snapshot)
    plain = replace(request, agent_code=None)
    docker = docker_mounts(docker_argv(request, image="rexmle-dummy:0.1.0", name="rexmle-x"))
    assert docker.pop(AGENT_DIR_INSIDE) == (str(snapshot.resolve()), True)
    assert docker == docker_mounts(docker_argv(plain, image="rexmle-dummy:0.1.0", name="x"))
    apptainer = apptainer_binds(apptainer_argv(request, image="/i.sif"))
    assert apptainer.pop(AGENT_DIR_INSIDE) == (str(snapshot.resolve()), True)
    assert apptainer == apptainer_binds(apptainer_argv(plain, image="/i.sif"))
    assert ApptainerSandbox().agent_dir_path(snapshot) == AGENT_DIR_INSIDE == "/agent"
    # root inside keeps no capability, so no read-only bind can be remounted writable
    assert ("--no-privs" in apptainer_argv(request, image="/i.sif")) == (os.geteuid() == 0)
    argv = docker_argv(request, image="rexmle-dummy:0.1.0", name="rexmle-x")
    assert option_values(argv, "--cap-drop") == ["ALL"]
    assert option_values(argv, "--security-opt") == ["no-new-privileges"]
