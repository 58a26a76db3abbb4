"""Start an agent command with limits: ``python -m rexmle.runner.sandbox.shim [opts] -- CMD...``.

Options:
    --memory-limit-mb N   set RLIMIT_AS (address space) to N MiB before the command starts.
    --relay P=S           listen on 127.0.0.1:P and forward each connection to the unix socket
                          S; repeatable, one per service. Inside a sandbox without network this
                          makes the validation server and the LLM gateway reachable at the
                          same URLs as outside.

Without a relay the shim replaces itself with the command (exec). With one it stays the parent,
forwards SIGTERM/SIGINT to the command and exits with the command's status. Imports only the
standard library, so it starts fast.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

CHUNK_BYTES = 1 << 16


def _pipe(source: socket.socket, target: socket.socket) -> None:
    """Copy ``source`` to ``target``; at end of stream half-close ``target`` (the other direction
    may still carry the answer), on an error close both directions of both."""
    try:
        while chunk := source.recv(CHUNK_BYTES):
            target.sendall(chunk)
    except OSError:
        for sock in (source, target):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        return
    with contextlib.suppress(OSError):
        target.shutdown(socket.SHUT_WR)


def _forward(client: socket.socket, socket_path: Path | None, port: int | None = None) -> None:
    """Pipe ``client`` both ways to the unix socket ``socket_path`` (or 127.0.0.1:``port``)."""
    family = socket.AF_UNIX if socket_path is not None else socket.AF_INET
    upstream = socket.socket(family, socket.SOCK_STREAM)
    try:
        upstream.connect(str(socket_path) if socket_path is not None else ("127.0.0.1", port))
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
    back.start()
    _pipe(client, upstream)
    back.join()
    client.close()
    upstream.close()


def start_relay(port: int, socket_path: Path) -> socket.socket:
    """Listen on 127.0.0.1:``port`` and forward connections to ``socket_path`` (daemon threads)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(16)

    def accept_loop() -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=_forward, args=(client, socket_path), daemon=True).start()

    threading.Thread(target=accept_loop, daemon=True).start()
    return listener


def parse_relay(text: str) -> tuple[int, Path]:
    """``PORT=SOCKET`` -> (port, socket path); argparse type for ``--relay``."""
    port_text, sep, socket_text = text.partition("=")
    if not sep or not port_text.isdigit() or not socket_text or not 0 < int(port_text) < 65536:
        msg = f"--relay wants PORT=SOCKET_PATH with a port in 1..65535, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return int(port_text), Path(socket_text)


def start_unix_bridge(socket_path: Path, port: int) -> socket.socket:
    """The host side of a relay to a TCP service: listen on the unix socket ``socket_path``
    and forward each connection to 127.0.0.1:``port`` (daemon threads; close the returned
    listener to stop)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    socket_path.unlink(missing_ok=True)
    listener.bind(str(socket_path))
    listener.listen(64)

    def accept_loop() -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=_forward, args=(client, None, port), daemon=True).start()

    threading.Thread(target=accept_loop, daemon=True).start()
    return listener


def main(argv: list[str] | None = None) -> int:
    """Entry point (see the module docstring)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if "--" not in args:
        sys.stderr.write("usage: python -m rexmle.runner.sandbox.shim [options] -- CMD...\n")
        return 2
    split = args.index("--")
    parser = argparse.ArgumentParser(prog="rexmle.runner.sandbox.shim")
    parser.add_argument("--memory-limit-mb", type=int, default=None)
    parser.add_argument("--relay", type=parse_relay, action="append", default=[])
    options = parser.parse_args(args[:split])
    command = args[split + 1 :]
    if not command:
        sys.stderr.write("shim: no command after --\n")
        return 2
    if options.memory_limit_mb is not None:
        limit = options.memory_limit_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    if not options.relay:
        os.execvp(command[0], command)
    ports = [port for port, _ in options.relay]
    if len(set(ports)) != len(ports):
        sys.stderr.write(f"shim: two relays on the same port: {sorted(ports)}\n")
        return 2
    for port, socket_path in options.relay:
        start_relay(port, socket_path)
    child = subprocess.Popen(command)

    def forward(signum: int, _frame: object) -> None:
        child.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    code = child.wait()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
