"""Ports, the other way: the user's browser reaching a confined dev server. A dev server
listening on its namespace's loopback is opened on the host's 127.0.0.1 at the same port,
relayed through the forwarder inside (`confine.wrapper.forwarder`)."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from typing import Final

from meith_core.confine.wrapper.environment import PROXY_PORT
from meith_core.confine.wrapper.relay import relay

#: How often the forwarder looks for new listening ports inside the namespace.
PORT_POLL_S: Final = 0.5


def listening_ports(pid: int) -> set[int]:
    """The TCP ports listened on at loopback or any address in `pid`'s network namespace."""
    ports: set[int] = set()
    for name, local in (
        ("tcp", ("0100007F", "00000000")),
        ("tcp6", ("0" * 32, "0" * 24 + "01000000")),
    ):
        try:
            with open(f"/proc/{pid}/net/{name}") as fh:
                next(fh, None)
                for line in fh:
                    fields = line.split()
                    if len(fields) < 4 or fields[3] != "0A":
                        continue
                    address, _, port = fields[1].partition(":")
                    if address in local:
                        ports.add(int(port, 16))
        except (OSError, ValueError):
            continue
    ports.discard(PROXY_PORT)
    return ports


class PortForwarder:
    """Opens on the host's 127.0.0.1 each port a confined process listens on inside its
    namespace, relayed through the forwarder's `ports_socket` (threads, like the gate)."""

    def __init__(self, pid: int, ports_socket: str) -> None:
        self.pid = pid
        self.ports_socket = ports_socket
        #: port -> None when it is forwarded, else why not (taken on the host).
        self.ports: dict[int, str | None] = {}
        self._listeners: dict[int, socket.socket] = {}
        self._stop = threading.Event()

    def start(self) -> None:
        threading.Thread(target=self._watch, daemon=True).start()

    def close(self) -> None:
        self._stop.set()
        for listener in list(self._listeners.values()):
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        self._listeners.clear()

    def _watch(self) -> None:
        while not self._stop.is_set() and os.path.exists(f"/proc/{self.pid}"):
            self.poll()
            self._stop.wait(PORT_POLL_S)
        self.close()

    def poll(self) -> None:
        inside = listening_ports(self.pid)
        for port in sorted(inside - set(self.ports)):
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                listener.bind(("127.0.0.1", port))
                listener.listen(128)
            except OSError as exc:
                listener.close()
                self.ports[port] = f"127.0.0.1:{port} is taken on the host ({exc.strerror})"
                continue
            self._listeners[port] = listener
            self.ports[port] = None
            threading.Thread(target=self._accept, args=(port, listener), daemon=True).start()
        for port in set(self.ports) - inside:
            gone = self._listeners.pop(port) if port in self._listeners else None
            if gone is not None:
                with contextlib.suppress(OSError):
                    gone.shutdown(socket.SHUT_RDWR)
                gone.close()
            del self.ports[port]

    def _accept(self, port: int, listener: socket.socket) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(port, conn), daemon=True).start()

    def _serve(self, port: int, conn: socket.socket) -> None:
        inner = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            inner.connect(self.ports_socket)
            inner.sendall(f"{port}\n".encode())
            relay(conn, inner)
        except OSError:
            pass
        finally:
            inner.close()
            conn.close()


__all__ = ["PortForwarder", "listening_ports"]
