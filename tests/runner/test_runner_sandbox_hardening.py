"""The bwrap sandbox against a hostile agent: network, uid, ptrace, tmpfs, processes, logs, paths."""

from __future__ import annotations

import base64
import errno
import json
import os
import shlex
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from runner_support import COPY_SAMPLE, marker_processes, needs_bwrap

import rexmle
from rexmle.agents.registry import load_agent
from rexmle.runner.sandbox import SandboxLimits, SandboxRequest
from rexmle.runner.sandbox.bwrap import BwrapSandbox, gpu_devices, slirp4netns_problem
from rexmle.runner.sandbox.local import LOCAL_WARNING, LocalSandbox

pytestmark = needs_bwrap()
needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="a private uid per run needs the harness to run as root"
)
needs_slirp = pytest.mark.skipif(
    slirp4netns_problem() is not None, reason=f"{slirp4netns_problem()}"
)

PROBE = r"""
import socket, sys
def tcp(host, port):
    try:
        socket.create_connection((host, port), timeout=3).recv(16)
        return "reached"
    except OSError as error:
        return f"blocked ({error.__class__.__name__})"
def abstract(name):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(b"\0" + name.encode())
        return "reached"
    except OSError as error:
        return f"blocked ({error.__class__.__name__})"
port, name, public_ip, public_port = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
print("loopback", tcp("127.0.0.1", int(port)))
print("gateway", tcp("10.0.2.2", int(port)))
print("abstract", abstract(name))
if public_ip != "-":
    print("outbound", tcp(public_ip, int(public_port)))
"""


def _serve(listener: socket.socket) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        client.sendall(b"host-secret")
        client.close()


def host_address() -> str | None:
    """This machine's address on its default route (no packet is sent), or None."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.1", 9))
        address = probe.getsockname()[0]
    except OSError:
        return None
    finally:
        probe.close()
    return None if address.startswith("127.") else address


@pytest.fixture
def host_services() -> Iterator[dict[str, object]]:
    """A TCP service on the host's 127.0.0.1, one on its public address, an abstract socket."""
    listeners = []
    loopback = socket.create_server(("127.0.0.1", 0))
    listeners.append(loopback)
    name = f"rexmle-test-{uuid.uuid4().hex}"
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract.bind(b"\0" + name.encode())
    abstract.listen()
    listeners.append(abstract)
    address = host_address()
    public_port = 0
    if address is not None:
        public = socket.create_server((address, 0))
        public_port = public.getsockname()[1]
        listeners.append(public)
    for listener in listeners:
        threading.Thread(target=_serve, args=(listener,), daemon=True).start()
    # the host itself reaches all three
    assert socket.create_connection(("127.0.0.1", loopback.getsockname()[1])).recv(16)
    yield {
        "port": loopback.getsockname()[1],
        "name": name,
        "public_ip": address or "-",
        "public_port": public_port,
    }
    for listener in listeners:
        listener.close()


def probe_command(services: dict[str, object]) -> str:
    """Shell that writes the probe into the sandbox's /tmp and runs it, then submits."""
    encoded = base64.b64encode(PROBE.encode()).decode()
    arguments = " ".join(str(services[k]) for k in ("port", "name", "public_ip", "public_port"))
    return (
        f"echo {encoded} | base64 -d > /tmp/probe.py; python /tmp/probe.py {arguments}; "
        f"{COPY_SAMPLE}"
    )


def probe_lines(folder: Path) -> dict[str, str]:
    lines = (folder / "agent.stdout.log").read_text().splitlines()
    return dict(line.split(" ", 1) for line in lines if " " in line)


def test_without_network_host_services_are_out_of_reach(run_agent, isles22_dirs, host_services):
    command = probe_command(host_services)
    record, folder = run_agent(command, dirs=isles22_dirs, sandbox=BwrapSandbox())
    seen = probe_lines(folder)
    assert seen["loopback"].startswith("blocked")
    assert seen["gateway"].startswith("blocked")
    assert seen["abstract"].startswith("blocked")
    if "outbound" in seen:
        assert seen["outbound"].startswith("blocked")
    assert record.sandbox is not None
    assert record.sandbox.network == "off"
    assert record.status == "completed"


@needs_slirp
def test_with_network_only_outbound_works(run_agent, isles22_dirs, host_services):
    command = probe_command(host_services)
    record, folder = run_agent(command, dirs=isles22_dirs, sandbox=BwrapSandbox(), network=True)
    seen = probe_lines(folder)
    # the host's loopback services and abstract sockets stay out of reach ...
    assert seen["loopback"].startswith("blocked")
    assert seen["gateway"].startswith("blocked")  # slirp's host-loopback alias is off
    assert seen["abstract"].startswith("blocked")
    # ... while an address outside the sandbox is reached
    if host_services["public_ip"] != "-":
        assert seen["outbound"] == "reached"
    assert record.sandbox is not None
    assert record.sandbox.network == "isolated-outbound"
    assert record.config.agent.network is True
    assert record.status == "completed"
    assert marker_processes("slirp4netns --configure --disable-host-loopback") == []


def test_command_agents_have_no_network_unless_asked():
    assert load_agent("command").network is False
    assert load_agent("command").with_overrides(network=True).network is True


@needs_root
def test_agent_runs_under_a_private_uid_and_cannot_ptrace_pid_1(run_agent, isles22_dirs):
    command = (
        "id -u; "
        'python -c "import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); '
        "r = libc.ptrace(16, 1, 0, 0); print('ptrace', r, os.strerror(ctypes.get_errno()))\"; "
        "kill -STOP 1 2>/dev/null && echo stop-sent || echo stop-refused; "
        f"touch $WORKSPACE/mine; {COPY_SAMPLE}"
    )
    record, folder = run_agent(command, dirs=isles22_dirs, sandbox=BwrapSandbox())
    lines = (folder / "agent.stdout.log").read_text().splitlines()
    uid = int(lines[0])
    assert uid >= 1 << 30  # a private uid far from any account
    assert lines[1] == "ptrace -1 Operation not permitted"
    assert lines[2] == "stop-refused"
    assert (folder / "workspace" / "mine").stat().st_uid == uid
    assert record.status == "completed"  # pid 1 was never stopped: no timeout


def run_direct(tmp_path: Path, command: str, **fields: object) -> tuple[str, str]:
    """Run ``command`` in bwrap with a bare workspace; returns (stdout, stderr)."""
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    request = SandboxRequest(
        argv=["/bin/sh", "-c", command],
        env={"PATH": "/usr/bin:/bin"},
        workspace=workspace,
        stdout_path=tmp_path / "out.log",
        stderr_path=tmp_path / "err.log",
        time_limit_s=120,
        kill_grace_s=1,
        **fields,  # type: ignore[arg-type]
    )
    result = BwrapSandbox().run(request)
    assert result.error is None
    return (tmp_path / "out.log").read_text(), (tmp_path / "err.log").read_text()


@needs_root
def test_folders_the_harness_made_in_the_workspace_are_the_agents(tmp_path: Path):
    # e.g. an llm adapter's work folder, made by the harness before the agent starts
    (tmp_path / "ws" / "agent" / "deeper").mkdir(parents=True)
    (tmp_path / "ws" / "data").mkdir()
    public = tmp_path / "public.txt"
    public.write_text("public")
    os.link(public, tmp_path / "ws" / "data" / "public.txt")
    stdout, stderr = run_direct(
        tmp_path, "touch agent/deeper/x && echo wrote; touch data/y 2>/dev/null || echo ro"
    )
    assert stdout.split() == ["wrote", "ro"], stderr
    assert public.stat().st_uid == 0  # the hard-linked public file keeps its owner


def test_tmpfs_writes_stop_at_the_size_limit(tmp_path: Path):
    limit = 32 << 20
    command = (
        "dd if=/dev/zero of=/tmp/fill bs=1M count=1000 2>/dev/null; "
        "stat -c %s /tmp/fill; dd if=/dev/zero of=/dev/shm/fill bs=1M count=1000 2>/dev/null; "
        "stat -c %s /dev/shm/fill"
    )
    stdout, _ = run_direct(
        tmp_path, command, limits=SandboxLimits(tmp_bytes=limit, shm_bytes=limit)
    )
    tmp_reached, shm_reached = (int(line) for line in stdout.split())
    print(f"tmpfs probe: /tmp reached {tmp_reached} bytes, /dev/shm {shm_reached} (limit {limit})")
    assert limit - (1 << 20) <= tmp_reached <= limit
    assert limit - (1 << 20) <= shm_reached <= limit


FORKS = """
import os, time
started = 0
try:
    while started < 200:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        started += 1
except OSError as error:
    print("refused", error.strerror)
print("started", started)
"""


@needs_root
def test_process_limit_holds(tmp_path: Path):
    encoded = base64.b64encode(FORKS.encode()).decode()
    command = f"echo {encoded} | base64 -d > /tmp/forks.py; {sys.executable} /tmp/forks.py"
    stdout, _ = run_direct(tmp_path, command, limits=SandboxLimits(max_processes=50))
    assert "refused Resource temporarily unavailable" in stdout
    started = int(stdout.split()[-1])
    assert 0 < started < 50


def test_logs_stop_at_the_cap_and_say_so(tmp_path: Path):
    cap = 1 << 20
    command = "head -c 5000000 /dev/zero | tr '\\0' x; head -c 3000000 /dev/zero | tr '\\0' y >&2"
    stdout, stderr = run_direct(tmp_path, command, limits=SandboxLimits(log_bytes=cap))
    note = f"[rexmle] log cap of {cap} bytes reached: further output is dropped"
    assert stdout.split(note)[0].count("x") == cap
    assert note in stdout
    assert stderr.split(note)[0].count("y") == cap
    assert note in stderr
    assert (tmp_path / "out.log").stat().st_size < cap + 200


def test_no_host_path_of_data_runs_or_checkout_in_argv_or_environment(run_agent, own_isles22):
    data_root = str(own_isles22.root.parent)
    checkout = str(Path(rexmle.__file__).resolve().parent.parent)
    command = (
        "cat /proc/1/cmdline | tr '\\0' ' '; echo; cat /proc/self/cmdline | tr '\\0' ' '; echo; "
        f"env; echo MOUNT''S; cat /proc/self/mountinfo; {COPY_SAMPLE}"
    )
    record, folder = run_agent(command, dirs=own_isles22, sandbox=BwrapSandbox(), agent="command")
    text = (folder / "agent.stdout.log").read_text()
    before_mounts, mounts = text.split("MOUNTS", 1)
    runs_root = str(folder.parents[3])
    for host_path in (data_root, runs_root, checkout):
        assert host_path not in before_mounts, host_path  # argv and environment
    assert data_root not in mounts  # never mounted
    assert "WORKSPACE=/workspace" in before_mounts
    assert "DATA_DIR=/workspace/data" in before_mounts
    assert record.status == "completed"


SCAN = r"""
import os, sys
needles = [bytes.fromhex(h) for h in sys.argv[1:]]
SKIPPED = {"/proc", "/sys", "/dev", "/usr", "/opt", "/bin", "/sbin", "/lib", "/lib32", "/lib64"}
longest = max(len(n) for n in needles)
counts = {"files": 0, "venv": 0, "package": 0, "unreadable": 0}
def check(where, data):
    for needle in needles:
        if needle in data:
            print("FOUND", where, needle.hex(), flush=True)
def scan_file(path):
    try:
        with open(path, "rb") as stream:
            tail = b""
            while chunk := stream.read(1 << 24):
                check(path, tail + chunk)
                tail = chunk[-longest:]
    except OSError:
        counts["unreadable"] += 1
        return
    counts["files"] += 1
    counts["venv"] += path.startswith("/sandbox/venv/")
    counts["package"] += path.startswith("/sandbox/lib/rexmle/")
for top in sorted(os.listdir("/")):
    top = "/" + top
    if top in SKIPPED:
        continue
    for folder, folders, files in os.walk(top):
        for name in folders + files:
            path = os.path.join(folder, name)
            check(path, os.fsencode(path))
            if os.path.islink(path):
                check(path, os.fsencode(os.readlink(path)))
            elif name in files and os.path.isfile(path):
                scan_file(path)
for pid in [p for p in os.listdir("/proc") if p.isdigit()] + ["self"]:
    for name in ("cmdline", "environ", "mountinfo", "mounts", "maps", "status"):
        scan_file(f"/proc/{pid}/{name}")
    for name in ("cwd", "exe", "root"):
        try:
            check(f"/proc/{pid}/{name}", os.fsencode(os.readlink(f"/proc/{pid}/{name}")))
        except OSError:
            pass
check("environment", b"\0".join(k + b"=" + v for k, v in os.environb.items()))
print("COUNTS", " ".join(f"{k}={v}" for k, v in counts.items()))
"""


def test_nothing_the_agent_can_read_names_the_checkout_or_the_private_data(run_agent, own_isles22):
    checkout = Path(rexmle.__file__).resolve().parent.parent
    private = own_isles22.private
    needles = {str(checkout), str(private), str(private.resolve())}
    hexed = " ".join(sorted(n.encode().hex() for n in needles))
    command = f"python3 -c {shlex.quote(SCAN)} {hexed} && {COPY_SAMPLE}"
    record, folder = run_agent(
        command, dirs=own_isles22, sandbox=BwrapSandbox(), agent="command", time_limit_s=600
    )
    out = (folder / "agent.stdout.log").read_text()
    found = [line for line in out.splitlines() if line.startswith("FOUND")]
    assert found == [], "\n".join(found[:20])
    counts = dict(item.split("=") for item in out.split("COUNTS", 1)[1].split())
    assert int(counts["venv"]) > 100  # the venv's copy was read, file by file
    assert int(counts["package"]) > 100  # and the package's (command agents: for score.py)
    assert "/proc/self/mountinfo" not in (folder / "agent.stderr.log").read_text()
    assert record.status == "completed", (folder / "agent.stderr.log").read_text()[-2000:]


def test_command_agents_see_the_harness_read_only(run_agent, isles22_dirs):
    # data/score.py runs the grader's metric code from the package: it is shown, never writable
    probe = (
        "import pathlib, rexmle.preparation; "
        "target = pathlib.Path(rexmle.__file__).parent / 'planted.py'\n"
        "try:\n    target.write_text('x')\nexcept OSError as e:\n    print('readonly', e.errno)\n"
        "else:\n    print('written')"
    )
    command = f"{sys.executable} -c {shlex.quote(probe)}; {COPY_SAMPLE}"
    record, folder = run_agent(command, dirs=isles22_dirs, sandbox=BwrapSandbox())
    out = (folder / "agent.stdout.log").read_text().split()
    assert out[:1] == ["readonly"], out
    assert int(out[1]) in (errno.EROFS, errno.EACCES, errno.EPERM)
    assert record.status == "completed"


def test_baseline_agents_still_import_it(run_agent, isles22_dirs):
    record, _ = run_agent(None, dirs=isles22_dirs, sandbox=BwrapSandbox(), agent="dummy")
    assert record.status == "completed"


def test_only_the_runs_own_gpu_nodes(tmp_path: Path):
    for name in ("nvidia0", "nvidia1", "nvidia2", "nvidiactl", "nvidia-uvm", "dri"):
        (tmp_path / name).touch()
    nodes, env = gpu_devices({"CUDA_VISIBLE_DEVICES": "2"}, dev=tmp_path)
    assert [Path(n).name for n in nodes] == ["nvidia2", "nvidiactl", "nvidia-uvm"]
    assert env == {"CUDA_VISIBLE_DEVICES": "0"}  # numbered from 0 inside
    nodes, env = gpu_devices({"CUDA_VISIBLE_DEVICES": "0,1"}, dev=tmp_path)
    assert [Path(n).name for n in nodes] == ["nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm"]
    assert env == {"CUDA_VISIBLE_DEVICES": "0,1"}
    assert gpu_devices({"CUDA_VISIBLE_DEVICES": ""}, dev=tmp_path) == ([], {})
    all_nodes, _ = gpu_devices({}, dev=tmp_path)
    assert len(all_nodes) == 6


def test_local_sandbox_is_recorded_non_isolated_even_when_chosen(run_agent, isles22_dirs):
    _, folder = run_agent(COPY_SAMPLE, dirs=isles22_dirs, sandbox=LocalSandbox())
    recorded = json.loads((folder / "run.json").read_text())["sandbox"]
    assert recorded["isolated"] is False
    assert LOCAL_WARNING in recorded["warnings"]
    assert recorded["network"] == "host"


def test_local_daemon_without_its_token_ends_with_the_run(run_agent, isles22_dirs):
    marker = f"daemon-{uuid.uuid4().hex}"
    command = (
        f"{COPY_SAMPLE}; setsid env -i /bin/sh -c 'sleep 60; echo {marker}' "
        "</dev/null >/dev/null 2>&1 &"
    )
    record, _ = run_agent(command, dirs=isles22_dirs, sandbox=LocalSandbox())
    assert record.status == "completed"
    deadline = time.monotonic() + 10
    while marker_processes(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert marker_processes(marker) == []


def test_local_agent_dies_when_the_harness_is_killed(isles22_dirs, tmp_path: Path):
    marker = f"survivor-{uuid.uuid4().hex}"
    started = tmp_path / "started"
    command = (
        f"setsid env -i /bin/sh -c 'sleep 120; echo {marker}' </dev/null >/dev/null 2>&1 & "
        f"touch {started}; sleep 120"
    )
    args = [
        sys.executable, "-m", "rexmle.cli", "run", "--agent", "command", "--agent-cmd", command,
        "--task", "isles22", "--mini", "--data-dir", str(isles22_dirs.root.parent),
        "--runs-dir", str(tmp_path / "runs"), "--sandbox", "local",
    ]  # fmt: skip
    harness = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not started.exists():
        assert time.monotonic() < deadline
        assert harness.poll() is None
        time.sleep(0.1)
    assert marker_processes(marker)
    harness.kill()  # SIGKILL: no clean-up code of the harness runs
    harness.wait()
    deadline = time.monotonic() + 15
    while (marker_processes(marker) or marker_processes(str(started))) and (
        time.monotonic() < deadline
    ):
        time.sleep(0.1)
    assert marker_processes(marker) == []
    assert marker_processes(str(started)) == []
