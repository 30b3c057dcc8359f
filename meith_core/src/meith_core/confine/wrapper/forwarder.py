"""The forwarder inside a network namespace: the only way out of it. It listens on the
namespace's 127.0.0.1:PROXY_PORT and relays to the runtime's gate, and relays connections the
runtime makes for a port of the namespace's loopback (a dev server the user opens)."""

from __future__ import annotations

import os
import selectors
import socket
import threading

from .environment import PROXY_PORT
from .landlock import restrict_self
from .relay import relay


def _relay_and_close(a: socket.socket, b: socket.socket) -> None:
    try:
        relay(a, b)
    finally:
        a.close()
        b.close()


def _outbound(conn: socket.socket, proxy_sock: str) -> None:
    up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        up.connect(proxy_sock)
    except OSError:
        up.close()
        conn.close()
        return
    _relay_and_close(conn, up)


def _inbound(conn: socket.socket) -> None:
    line = b""
    try:
        while not line.endswith(b"\n") and len(line) < 16:
            chunk = conn.recv(1)
            if not chunk:
                break
            line += chunk
        port = int(line.strip())
        if not 0 < port < 65536:
            raise ValueError(port)
        inner = socket.create_connection(("127.0.0.1", port), timeout=5)
        inner.settimeout(None)
    except (OSError, ValueError):
        conn.close()
        return
    _relay_and_close(conn, inner)


def _forward(
    main_pid: int,
    tcp: socket.socket | None,
    proxy_sock: str | None,
    ports: socket.socket | None,
) -> None:
    """Relay until the confined process `main_pid` exits: 127.0.0.1:PROXY_PORT inside to the
    runtime's gate (`proxy_sock`), and connections on `ports` to a loopback port inside."""
    sel = selectors.DefaultSelector()
    pidfd = os.pidfd_open(main_pid)
    sel.register(pidfd, selectors.EVENT_READ, "exit")
    if tcp is not None:
        sel.register(tcp, selectors.EVENT_READ, "out")
    if ports is not None:
        sel.register(ports, selectors.EVENT_READ, "in")
    while True:
        for key, _ in sel.select():
            if key.data == "exit":
                os._exit(0)
            listener = key.fileobj
            assert isinstance(listener, socket.socket)
            try:
                conn, _addr = listener.accept()
            except OSError:
                continue
            if key.data == "out" and proxy_sock is not None:
                t = threading.Thread(target=_outbound, args=(conn, proxy_sock), daemon=True)
            else:
                t = threading.Thread(target=_inbound, args=(conn,), daemon=True)
            t.start()


def start_forwarder(proxy_sock: str | None, ports_path: str | None) -> None:
    """Listen inside the network namespace, then leave the relaying to a detached grandchild
    (outside the Landlock domain the command gets, so it can neither trace nor, with ABI 6+,
    signal it; not a child of the command, so nothing of the command's waits for it)."""
    tcp = None
    if proxy_sock is not None:
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        tcp.bind(("127.0.0.1", PROXY_PORT))
        tcp.listen(128)
    ports = None
    if ports_path is not None:
        ports = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        ports.bind(ports_path)
        ports.listen(128)
    main_pid = os.getpid()
    child = os.fork()
    if child == 0:
        try:
            if os.fork() != 0:
                os._exit(0)
            os.setsid()
            null = os.open("/dev/null", os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            keep = {null, tcp.fileno() if tcp else -1, ports.fileno() if ports else -1}
            for fd in _open_fds():
                if fd > 2 and fd not in keep:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            try:
                restrict_self([], [])
            except OSError:
                pass
            _forward(main_pid, tcp, proxy_sock, ports)
        finally:
            os._exit(0)
    os.waitpid(child, 0)
    if tcp is not None:
        tcp.close()
    if ports is not None:
        ports.close()


def _open_fds() -> list[int]:
    try:
        return [int(n) for n in os.listdir("/proc/self/fd")]
    except OSError:
        return list(range(3, 256))
