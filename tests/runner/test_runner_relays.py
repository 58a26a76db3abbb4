"""Relays: several 127.0.0.1 ports, each forwarded to its own host unix socket."""

from __future__ import annotations

import argparse
import socket
import socketserver
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from runner_support import needs_bwrap

from rexmle.runner.sandbox import Relay, SandboxRequest
from rexmle.runner.sandbox.bwrap import BwrapSandbox
from rexmle.runner.sandbox.local import shim_argv
from rexmle.runner.sandbox.shim import _no_delay, parse_relay, start_unix_bridge

CLIENT = """
import socket, sys
for port in sys.argv[1:]:
    with socket.create_connection(("127.0.0.1", int(port)), timeout=5) as conn:
        conn.sendall(b"ping")
        conn.shutdown(socket.SHUT_WR)
        print(port, conn.recv(100).decode())
"""


class _Named(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        received = self.rfile.read(4)
        self.wfile.write(self.server.name + b":" + received)  # type: ignore[attr-defined]


@pytest.fixture
def unix_services(tmp_path: Path) -> Iterator[list[Path]]:
    """Two unix-socket services answering ``alpha:<bytes>`` and ``beta:<bytes>``."""
    servers = []
    paths = []
    for name in (b"alpha", b"beta"):
        path = tmp_path / f"{name.decode()}.sock"
        server = socketserver.ThreadingUnixStreamServer(str(path), _Named)
        server.name = name  # type: ignore[attr-defined]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        paths.append(path)
    yield paths
    for server in servers:
        server.shutdown()
        server.server_close()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_shim_forwards_every_relay_to_its_own_socket(unix_services):
    ports = [_free_port(), _free_port()]
    relays = tuple(Relay(port, path) for port, path in zip(ports, unix_services, strict=True))
    argv = shim_argv([sys.executable, "-c", CLIENT, *map(str, ports)], relays=relays)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"{ports[0]} alpha:ping", f"{ports[1]} beta:ping"]


def test_shim_refuses_two_relays_on_one_port(unix_services):
    port = _free_port()
    relays = (Relay(port, unix_services[0]), Relay(port, unix_services[1]))
    done = subprocess.run(
        shim_argv(["true"], relays=relays), capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 2
    assert "two relays on the same port" in done.stderr


@pytest.mark.parametrize("text", ["8000", "=/s", "x=/s", "0=/s", "70000=/s", "8000="])
def test_relay_option_rejects_malformed_values(text):
    with pytest.raises(argparse.ArgumentTypeError, match="PORT=SOCKET_PATH"):
        parse_relay(text)


@needs_bwrap()
def test_bwrap_without_network_reaches_both_relays(unix_services, tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    ports = [47001, 47002]
    request = SandboxRequest(
        argv=[sys.executable, "-c", CLIENT, *map(str, ports)],
        env={"PATH": "/usr/bin:/bin"},
        workspace=workspace,
        stdout_path=tmp_path / "out.log",
        stderr_path=tmp_path / "err.log",
        time_limit_s=30,
        network=False,
        shared_writable=(tmp_path,),
        relays=tuple(Relay(p, s) for p, s in zip(ports, unix_services, strict=True)),
    )
    result = BwrapSandbox().run(request)
    stdout = (tmp_path / "out.log").read_text()
    assert result.exit_code == 0, (tmp_path / "err.log").read_text()
    assert stdout.splitlines() == ["47001 alpha:ping", "47002 beta:ping"]


def test_unix_bridge_forwards_to_a_tcp_service(tmp_path):
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Named)
    server.name = b"tcp"  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    path = tmp_path / "bridge.sock"
    listener = start_unix_bridge(path, server.server_address[1])
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(str(path))
            conn.sendall(b"ping")
            conn.shutdown(socket.SHUT_WR)
            assert conn.recv(100) == b"tcp:ping"
    finally:
        listener.close()
        server.shutdown()
        server.server_close()


def test_the_relay_sends_tcp_pieces_at_once_and_leaves_unix_sockets_alone():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        tcp = socket.create_connection(listener.getsockname())
        assert tcp.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0  # Python's default
        _no_delay(tcp)
        assert tcp.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        tcp.close()
    left, right = socket.socketpair(socket.AF_UNIX)
    _no_delay(left)  # no TCP option on a unix socket, and no error
    left.close()
    right.close()
