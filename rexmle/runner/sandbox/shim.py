"""Start an agent command with limits: ``python -m rexmle.runner.sandbox.shim [opts] -- CMD...``.

Options:
    --memory-limit-mb N   RLIMIT_AS (address space) of the command, in MiB.
    --relay P=S           listen on 127.0.0.1:P and forward each connection to the unix socket
                          S; repeatable, one per service. Inside a sandbox without network this
                          makes the validation server and the LLM gateway reachable at the
                          same URLs as outside.
    --uid U --gid G       run the command under this uid and gid (no supplementary groups).
    --max-processes N     RLIMIT_NPROC of the command (processes and threads of its uid).
    --wait-network        start the command once a default route exists (at most 15 s): the
                          outbound network is attached from outside after the sandbox starts.
    --lifeline FD         the read end of a pipe whose only write end the harness holds for the
                          whole run and never writes to: end of stream on FD means the harness
                          is gone, however it died and whenever, even before the shim started.
    --lifeline-socket P   the same through the unix socket P, where the harness listens (in a
                          container, which inherits no descriptor): a refused connection or a
                          reset means the harness is gone (:mod:`rexmle.runner.sandbox.lifeline`).

The shim stays the command's parent: it is not dumpable (PR_SET_DUMPABLE 0: the command cannot
ptrace it), a child subreaper (orphans of the command are re-parented to it, not to init), and
it gets SIGTERM when its own parent dies (PR_SET_PDEATHSIG). The command gets SIGKILL when the
shim dies. When the command ends, every process it left behind is killed; when the harness is
gone, everything is. SIGTERM/SIGINT are forwarded to the command, and the shim exits with its
status (128 + N for signal N). As PID 1 of a PID namespace the shim kills by exiting: the kernel
then ends every process of the namespace. Imports only the standard library and runs as a plain
file too (bwrap mounts only this file), so it starts fast.

"The harness is gone" is decided by the lifeline where one is given. Without it the shim compares
its parent pid with the one it saw at start, which misses a harness that died before that first
look (the shim is then an orphan from the start and no death signal ever comes), and the kernel
sends the death signal when the parent *thread* ends, so a parent process that is still alive can
send one too. With a lifeline neither matters: a harness gone before the command would start means
exit status 125 and the command never runs; gone later, a watcher thread sees the end of stream and
everything is killed.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import resource
import select
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

CHUNK_BYTES = 1 << 16


def _pipe(source: socket.socket, target: socket.socket) -> None:
    """Copy ``source`` to ``target``; at end of stream half-close ``target`` (the other direction
    may still carry the answer), on an error close both directions of both.
    """
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


def _no_delay(sock: socket.socket) -> None:
    """Send each forwarded piece at once on a TCP socket (``TCP_NODELAY``): with Nagle's rule a
    piece waits for the ACK of the one before, which the peer delays (about 40 ms) while it waits
    for the rest of a request or answer that the relay copies piece by piece.
    """
    if sock.family == socket.AF_INET:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def _forward(client: socket.socket, socket_path: Path | None, port: int | None = None) -> None:
    """Pipe ``client`` both ways to the unix socket ``socket_path`` (or 127.0.0.1:``port``),
    TCP sides without Nagle's delay (:func:`_no_delay`).
    """
    family = socket.AF_UNIX if socket_path is not None else socket.AF_INET
    upstream = socket.socket(family, socket.SOCK_STREAM)
    try:
        upstream.connect(str(socket_path) if socket_path is not None else ("127.0.0.1", port))
        _no_delay(upstream)
        _no_delay(client)
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
    listener to stop).
    """
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


@contextlib.contextmanager
def unix_bridge(socket_path: Path, port: int) -> Iterator[None]:
    """:func:`start_unix_bridge` for the time of the ``with`` block; then the listener is shut
    and the socket file removed.
    """
    listener = start_unix_bridge(socket_path, port)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        socket_path.unlink(missing_ok=True)


PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
NETWORK_WAIT_S = 15.0
EXIT_HARNESS_GONE = 125


def _prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"prctl({option}, {value}): {os.strerror(error)}")


def process_table() -> dict[int, tuple[int, int, int]]:
    """Pid -> (ppid, pgid, sid) of every live (non-zombie) process in /proc."""
    table: dict[int, tuple[int, int, int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) < 4 or fields[0] in ("Z", "X"):
            continue
        table[int(entry)] = (int(fields[1]), int(fields[2]), int(fields[3]))
    return table


def _descendants(root_pid: int) -> list[int]:
    """Live descendants of ``root_pid``."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in process_table().items():
        children.setdefault(ppid, []).append(pid)
    found: list[int] = []
    stack = [root_pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def _kill_descendants() -> None:
    """SIGKILL every descendant and reap them, again until none is left (a process killed
    between two listings may have forked; its children are then re-parented to us).

    As PID 1 of a PID namespace (bwrap's ``--as-pid-1``) it returns at once: the kernel kills
    every other process of the namespace when its PID 1 exits, whatever their uid, which the
    shim, without CAP_KILL, could not do for an agent under a private uid. Elsewhere it returns
    when no descendant is left or none it may signal.
    """
    if os.getpid() == 1:
        return
    while True:
        signalled = False
        for pid in _descendants(os.getpid()):
            try:
                os.kill(pid, signal.SIGKILL)
            except PermissionError:
                continue
            except ProcessLookupError:
                pass
            signalled = True
        try:
            while os.waitpid(-1, os.WNOHANG)[0] != 0:
                signalled = True
        except ChildProcessError:
            return
        if not signalled:
            return
        time.sleep(0.02)


def _at_end_of_stream(fd: int) -> bool:
    """Whether ``fd`` (a lifeline: its writer never writes) is readable, that is at end of stream."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    return bool(poller.poll(0))


def _connect_lifeline(path: Path) -> int | None:
    """Connect to the harness's lifeline socket: its descriptor, or None when nobody listens
    there any more (the harness is gone).
    """
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # not inheritable
    try:
        connection.connect(str(path))
    except OSError as error:
        connection.close()
        sys.stderr.write(f"shim: nobody listens on the lifeline {path}: {error}\n")
        return None
    return connection.detach()


def _watch_lifeline(fd: int) -> None:
    """Block until the lifeline ``fd`` ends, then SIGTERM this process (the main thread's handler
    sees the harness gone and kills everything).
    """
    with contextlib.suppress(OSError):
        os.read(fd, 1)
    os.kill(os.getpid(), signal.SIGTERM)


def _has_default_route() -> bool:
    try:
        with open("/proc/net/route", encoding="ascii") as handle:
            return any(line.split()[1:2] == ["00000000"] for line in handle.readlines()[1:])
    except OSError:
        return False


def _start_child(command: list[str], options: argparse.Namespace) -> tuple[int, int]:
    """Fork the agent; it waits on a pipe until the shim says go. Returns (pid, go fd)."""
    ready_read, ready_write = os.pipe()
    pid = os.fork()
    if pid != 0:
        os.close(ready_read)
        return pid, ready_write
    try:
        os.close(ready_write)
        if options.max_processes is not None:
            limit = options.max_processes
            resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit))
        if options.memory_limit_mb is not None:
            limit = options.memory_limit_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        if options.uid is not None:
            os.setgroups([])
            os.setgid(options.gid if options.gid is not None else options.uid)
            os.setuid(options.uid)
        # set after the uid change (a credential change clears it): the agent dies with the shim
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.read(ready_read, 1) != b"1":
            os._exit(126)
        os.close(ready_read)
        os.execvp(command[0], command)
    except OSError as error:
        sys.stderr.write(f"shim: cannot start {command[0]!r}: {error}\n")
    os._exit(127)


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
    parser.add_argument("--uid", type=int, default=None)
    parser.add_argument("--gid", type=int, default=None)
    parser.add_argument("--max-processes", type=int, default=None)
    parser.add_argument("--wait-network", action="store_true")
    lifelines = parser.add_mutually_exclusive_group()
    lifelines.add_argument("--lifeline", type=int, default=None)
    lifelines.add_argument("--lifeline-socket", type=Path, default=None)
    options = parser.parse_args(args[:split])
    command = args[split + 1 :]
    if not command:
        sys.stderr.write("shim: no command after --\n")
        return 2
    ports = [port for port, _ in options.relay]
    if len(set(ports)) != len(ports):
        sys.stderr.write(f"shim: two relays on the same port: {sorted(ports)}\n")
        return 2
    lifeline = options.lifeline
    if lifeline is not None:
        try:
            os.set_inheritable(lifeline, False)  # the agent never holds it
        except OSError as error:
            sys.stderr.write(f"shim: --lifeline {lifeline} is not an open file: {error}\n")
            return 2
    gone_at_start = False
    if options.lifeline_socket is not None:
        lifeline = _connect_lifeline(options.lifeline_socket)
        gone_at_start = lifeline is None
    parent = os.getppid()
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    _prctl(PR_SET_DUMPABLE, 0)  # the agent can neither ptrace nor read the shim's memory
    _prctl(PR_SET_CHILD_SUBREAPER, 1)  # orphans of the agent stay below the shim
    child, go = _start_child(command, options)

    def harness_gone() -> bool:
        if gone_at_start:
            return True
        if lifeline is not None:
            return _at_end_of_stream(lifeline)
        return os.getppid() != parent

    def on_signal(signum: int, _frame: object) -> None:
        if harness_gone():  # nothing may outlive the harness
            _kill_descendants()
            os._exit(128 + signum)
        with contextlib.suppress(OSError):
            os.kill(child, signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if harness_gone():  # gone before the death signal was armed: the command never starts
        os.close(go)  # the child reads end of stream and exits without its exec
        os.waitpid(child, 0)
        sys.stderr.write("shim: the harness is gone; the command was not started\n")
        return EXIT_HARNESS_GONE
    if lifeline is not None:
        threading.Thread(target=_watch_lifeline, args=(lifeline,), daemon=True).start()
    for port, socket_path in options.relay:
        start_relay(port, socket_path)
    if options.wait_network:
        deadline = time.monotonic() + NETWORK_WAIT_S
        while not _has_default_route() and time.monotonic() < deadline:
            time.sleep(0.05)
    with contextlib.suppress(BrokenPipeError):  # the child failed before its exec
        os.write(go, b"1")
    os.close(go)
    code = 0
    while True:  # reap every orphan handed to us until the agent itself ends
        pid, status = os.waitpid(-1, 0)
        if pid == child:
            code = os.waitstatus_to_exitcode(status)
            break
    _kill_descendants()  # daemons the agent left behind end with it
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
