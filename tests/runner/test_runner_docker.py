"""A real docker run of the dummy agent against a dockerd started by the test (slow).

The image is built offline from a minimal Debian (debootstrap, python3 only) with the rexmle
package copied in, then ``docker import``-ed. The run goes through the same executor as every
other run: workspace, validation server behind its relay, grading in a separate process. A
harness SIGKILLed during a run leaves no container running (the shim holds its lifeline socket).
A run folder whose path holds a comma and a quote is mounted whole; an agent with network cannot
reach a service on the host's own address on its bridge (and reaches it once the firewall is
removed: the rules are what holds), and where the firewall cannot be installed the run is refused.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import rexmle
from rexmle.agents.registry import load_agent
from rexmle.records.runs import RunConfig, read_record, run_dir
from rexmle.runner.executor import RunJob, RunOptions, execute_run
from rexmle.runner.sandbox import SandboxRequest, docker_network
from rexmle.runner.sandbox import docker as docker_module
from rexmle.runner.sandbox.docker import DockerSandbox, agent_image
from rexmle.runner.sandbox.docker_network import (
    NETWORK_NAME,
    ensure_agent_network,
    remove_firewall,
)
from rexmle.runner.settings import RunSettings

pytestmark = pytest.mark.slow
DEBIAN_MIRROR = "http://deb.debian.org/debian"
START_TIMEOUT_S = 60.0


def _why_no_dockerd() -> str | None:
    for program in ("dockerd", "docker", "debootstrap"):
        if shutil.which(program) is None:
            return f"{program} is not installed (apt-get install -y docker.io debootstrap)"
    if os.geteuid() != 0:
        return "dockerd and debootstrap need root"
    return None


@pytest.fixture(scope="module")
def dockerd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    problem = _why_no_dockerd()
    if problem is not None:
        pytest.skip(problem)
    root = tmp_path_factory.mktemp("dockerd")
    sock = root / "docker.sock"
    log = open(root / "dockerd.log", "wb")  # noqa: SIM115 (kept for the daemon)
    daemon = subprocess.Popen(
        [
            "dockerd",
            f"--host=unix://{sock}",
            f"--data-root={root / 'data'}",
            f"--exec-root={root / 'exec'}",
            f"--pidfile={root / 'docker.pid'}",
            "--iptables=false",
            "--bridge=none",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    host = f"unix://{sock}"
    env = {**os.environ, "DOCKER_HOST": host}
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        ready = subprocess.run(["docker", "version"], env=env, capture_output=True, check=False)
        if ready.returncode == 0:
            break
        if daemon.poll() is not None or time.monotonic() > deadline:
            daemon.kill()
            tail = (root / "dockerd.log").read_text(errors="replace")[-1500:]
            pytest.skip(f"dockerd cannot start here:\n{tail}")
        time.sleep(0.5)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DOCKER_HOST", host)
        docker_module.docker_problem.cache_clear()
        yield host
    docker_module.docker_problem.cache_clear()
    daemon.terminate()
    try:
        daemon.wait(timeout=30)
    except subprocess.TimeoutExpired:
        daemon.kill()


@pytest.fixture(scope="module")
def dummy_image(dockerd: str, tmp_path_factory: pytest.TempPathFactory) -> str:  # noqa: ARG001 (images are imported into that daemon)
    rootfs = tmp_path_factory.mktemp("rootfs")
    built = subprocess.run(
        ["debootstrap", "--variant=minbase", "--include=python3", "bookworm",
         str(rootfs), DEBIAN_MIRROR],
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    if built.returncode != 0:
        pytest.skip(f"debootstrap from {DEBIAN_MIRROR} failed: {built.stderr[-1500:]}")
    package = Path(rexmle.__file__).resolve().parent
    shutil.copytree(
        package,
        rootfs / "usr" / "lib" / "python3" / "dist-packages" / "rexmle",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    archive = tmp_path_factory.mktemp("image") / "rootfs.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(rootfs, arcname=".")
    image = agent_image("dummy", None)
    with open(archive, "rb") as stream:
        subprocess.run(["docker", "import", "-", image], stdin=stream, check=True, timeout=300)
    return image


@pytest.mark.usefixtures("dummy_image")
def test_the_dummy_agent_runs_in_docker_end_to_end(isles22_dirs, tmp_path: Path):
    spec = load_agent("dummy")
    config = RunConfig(
        task="isles22",
        task_spec_version=1,
        agent=spec,
        seed=0,
        time_limit_s=spec.time_limit_s,
        mini=True,
    )
    runs = tmp_path / "runs"
    folder = run_dir(runs, "docker", "isles22", "dummy", 0)
    options = RunOptions(
        settings=RunSettings(runs_dir=runs, data_dir=isles22_dirs.root.parent, grade_workers=1),
        sandbox=DockerSandbox(),
    )
    record = execute_run(RunJob(config=config, group="docker", folder=folder), options)
    assert record.status == "completed", (record.error, (folder / "agent.stderr.log").read_text())
    assert record.sandbox is not None
    assert record.sandbox.kind == "docker"
    assert record.grade is not None
    assert record.grade.valid
    assert record.validation_requests == 0  # the dummy never validates; the relay was idle


def test_the_container_sees_no_data_root_and_no_network(dummy_image, isles22_dirs, tmp_path):
    data_root = isles22_dirs.root.parent
    command = (
        "python3 -c 'import os, sys; print(\"data_root\", os.path.exists(sys.argv[1]))' "
        f"{data_root}; "
        "(python3 -c 'import socket; socket.create_connection((\"1.1.1.1\", 53), 3)' "
        "&& echo net yes || echo net no); "
        'cp "$DATA_DIR/sample_submission.csv" "$SUBMISSION_DIR/submission.csv"; '
        'cp -r "$DATA_DIR/predictions" "$SUBMISSION_DIR/"'
    )
    spec = load_agent("command").with_overrides(command=command, network=False)
    config = RunConfig(
        task="isles22", task_spec_version=1, agent=spec, seed=0, time_limit_s=120, mini=True
    )
    runs = tmp_path / "runs"
    folder = run_dir(runs, "docker", "isles22", spec.id, 0)
    options = RunOptions(
        settings=RunSettings(runs_dir=runs, data_dir=data_root, grade_workers=1),
        sandbox=DockerSandbox(),
    )
    image = agent_image(spec.id, None)
    subprocess.run(["docker", "tag", dummy_image, image], check=True, timeout=60)
    record = execute_run(RunJob(config=config, group="docker", folder=folder), options)
    out = (folder / "agent.stdout.log").read_text()
    assert "data_root False" in out, out
    assert "net no" in out, out
    assert record.status == "completed", (record.error, (folder / "agent.stderr.log").read_text())


KILLED_HARNESS = """
import os, signal, sys, threading, time
from pathlib import Path
from rexmle.runner.sandbox import SandboxRequest
from rexmle.runner.sandbox.docker import DockerSandbox

image, workspace = sys.argv[1:3]
folder = Path(workspace)
request = SandboxRequest(
    argv=["/bin/sh", "-c", "sleep 300 & touch started; sleep 301"], env={"PATH": "/usr/bin:/bin"},
    workspace=folder, stdout_path=folder.parent / "out.log", stderr_path=folder.parent / "err.log",
    time_limit_s=600.0, image=image,
)
threading.Thread(target=DockerSandbox().run, args=(request,), daemon=True).start()
deadline = time.monotonic() + 120
while not (folder / "started").exists() and time.monotonic() < deadline:
    time.sleep(0.05)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_the_container_ends_when_the_harness_is_killed(dummy_image: str, tmp_path: Path):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    harness = subprocess.run(
        [sys.executable, "-c", KILLED_HARNESS, dummy_image, str(workspace)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert harness.returncode == -signal.SIGKILL, harness.stderr
    assert (workspace / "started").exists()  # the agent ran in its container when it was killed
    deadline = time.monotonic() + 30
    while True:
        running = subprocess.run(
            ["docker", "ps", "-q", "--filter", f"ancestor={dummy_image}"],
            capture_output=True, text=True, timeout=60, check=True,
        ).stdout.split()  # fmt: skip
        if not running or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert running == []  # no docker rm ran: the shim saw the lifeline end and the container ended


def _sandbox_request(folder: Path, command: str, image: str, **more: object) -> SandboxRequest:
    workspace = folder / "workspace"
    workspace.mkdir(parents=True)
    fields: dict[str, object] = {
        "argv": ["/bin/sh", "-c", command],
        "env": {"PATH": "/usr/bin:/bin"},
        "workspace": workspace,
        "stdout_path": folder / "out.log",
        "stderr_path": folder / "err.log",
        "time_limit_s": 120.0,
        "image": image,
        **more,
    }
    return SandboxRequest(**fields)  # type: ignore[arg-type]


def test_a_run_folder_with_a_comma_and_a_quote_is_mounted_whole(dummy_image: str, tmp_path: Path):
    folder = tmp_path / 'runs,readonly,"g"' / "seed-0"
    request = _sandbox_request(folder, "echo inside > written; pwd", dummy_image)
    (request.workspace / "data").mkdir()
    (request.workspace / "data" / "public.txt").write_text("public")
    result = DockerSandbox().run(request)
    assert result.exit_code == 0, (result.error, (folder / "err.log").read_text())
    assert (request.workspace / "written").read_text() == "inside\n"  # writable, the whole path
    assert (folder / "out.log").read_text().strip() == str(request.workspace.resolve())


REACH = (
    "python3 -c 'import socket, sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 3)'"
    " {host} {port} && echo reach yes || echo reach no"
)


def _gateway() -> str:
    done = subprocess.run(
        ["docker", "network", "inspect", NETWORK_NAME, "--format",
         "{{(index .IPAM.Config 0).Gateway}}"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return done.stdout.strip()


def test_an_agent_with_network_cannot_reach_the_host(dummy_image: str, tmp_path: Path):
    if os.geteuid() != 0 or shutil.which("iptables") is None:
        pytest.skip("the agents' network needs iptables as root")
    ensure_agent_network("docker")
    # a host service on the host's address on the agents' bridge (reachable from nowhere else)
    listener = socket.create_server((_gateway(), 0))
    port = listener.getsockname()[1]
    accepted: list[object] = []
    threading.Thread(target=lambda: accepted.append(listener.accept()), daemon=True).start()
    try:
        command = REACH.format(host=_gateway(), port=port)
        result = DockerSandbox().run(
            _sandbox_request(tmp_path / "net", command, dummy_image, network=True)
        )
        assert result.exit_code == 0, (tmp_path / "net" / "err.log").read_text()
        assert (tmp_path / "net" / "out.log").read_text().strip() == "reach no"
        assert accepted == []
        # the same container without the firewall reaches the host: the rules are what holds
        remove_firewall()
        plain = subprocess.run(
            ["docker", "run", "--rm", "--network", NETWORK_NAME, dummy_image,
             "/bin/sh", "-c", command],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert plain.stdout.strip() == "reach yes", plain.stderr
    finally:
        remove_firewall()
        listener.close()
        subprocess.run(["docker", "network", "rm", NETWORK_NAME], capture_output=True, timeout=60)


def test_an_agent_network_that_cannot_be_kept_from_the_host_is_refused(
    dummy_image: str, tmp_path: Path, monkeypatch
):
    real_which = shutil.which
    monkeypatch.setattr(
        docker_network.shutil,
        "which",
        lambda name: None if name == "iptables" else real_which(name),
    )
    result = DockerSandbox().run(
        _sandbox_request(tmp_path / "net", "echo ran", dummy_image, network=True)
    )
    assert result.exit_code is None
    assert "iptables is not installed" in (result.error or "")
    assert not (tmp_path / "net" / "out.log").exists()  # no container was started


def test_a_command_agent_runs_its_own_code_from_agent_dir_in_docker(
    dummy_image: str, isles22_dirs, tmp_path: Path
) -> None:
    from test_agent_dir import make_agent, probe_output, rexmle, run_args

    from rexmle.runner.agent_code import tree_sha256

    own_image = agent_image("own", None)  # the command agent's image: the test image retagged
    subprocess.run(["docker", "tag", dummy_image, own_image], check=True, timeout=60)
    agent = make_agent(tmp_path / "my-agent")
    runs = tmp_path / "runs"
    result = rexmle(*run_args(agent, isles22_dirs.root.parent, runs, "docker"))
    folder = runs / "default" / "isles22" / "own" / "seed-0"
    record = read_record(folder)
    assert record is not None, result.output
    assert record.status == "completed", (record.error, (folder / "agent.stderr.log").read_text())
    assert record.sandbox is not None
    assert record.sandbox.kind == "docker"
    seen = probe_output(folder)
    assert seen["AGENT_DIR"] == "/agent"
    assert seen["FILES"] == "lib,link.txt,run.py"
    assert seen["HELPER"] == "from the agent's own folder"
    assert seen["WRITE"] == "refused errno 30"  # a read-only bind mount
    assert record.config.agent.dir_sha256 == tree_sha256(agent)
