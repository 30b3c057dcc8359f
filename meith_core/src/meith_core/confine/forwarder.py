"""Ports, the other way: the user's browser reaching a confined dev server. A port is opened on
the host's 127.0.0.1 only when asked (the port a call names, or the one a dev server is found
to serve on), never one of meith's own (`base.port_registry`), and each connection to it is
handed to the forwarder inside over the spawn's control channel (`confine.channel`): no path
the process could replace leads anywhere."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Mapping

from meith_core.confine.channel import ControlChannel
from meith_core.confine.wrapper.environment import PROXY_PORT
from meith_core.confine.wrapper.relay import relay


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
    ports.discard(53)
    return ports


class PortForwarder:
    """The host ports opened for one confined process, relayed to its namespace's loopback
    (threads, like the gate)."""

    def __init__(self, channel: ControlChannel, reserved: Callable[[], Mapping[int, str]]) -> None:
        self.channel = channel
        self.reserved = reserved
        #: port -> None when it is forwarded, else why not (meith's own, taken on the host).
        self.ports: dict[int, str | None] = {}
        self._listeners: dict[int, socket.socket] = {}
        self._lock = threading.Lock()
        self._closed = False

    def forward(self, port: int) -> str | None:
        """Open `port` on the host's 127.0.0.1 for the process; None when it is (or already
        was), else why not."""
        with self._lock:
            if self._closed:
                return "the process has ended"
            if port in self.ports:
                return self.ports[port]
            why = self._why_not(port)
            if why is None:
                listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                try:
                    listener.bind(("127.0.0.1", port))
                    listener.listen(128)
                except OSError as exc:
                    listener.close()
                    why = f"127.0.0.1:{port} is taken on the host ({exc.strerror})"
                else:
                    self._listeners[port] = listener
                    threading.Thread(
                        target=self._accept, args=(port, listener), daemon=True
                    ).start()
            self.ports[port] = why
            return why

    def _why_not(self, port: int) -> str | None:
        if port in (PROXY_PORT, 53):
            return f"port {port} is the forwarder's own inside the process's namespace"
        what = self.reserved().get(port)
        if what is not None:
            return f"127.0.0.1:{port} is meith's own ({what}); it is never forwarded"
        return None

    def close(self) -> None:
        with self._lock:
            self._closed = True
            listeners, self._listeners = list(self._listeners.values()), {}
        for listener in listeners:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()

    def _accept(self, port: int, listener: socket.socket) -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(port, conn), daemon=True).start()

    def _serve(self, port: int, conn: socket.socket) -> None:
        inner = self.channel.inbound(port)
        if inner is None:
            conn.close()
            return
        try:
            relay(conn, inner)
        finally:
            inner.close()
            conn.close()


__all__ = ["PortForwarder", "listening_ports"]
