"""The network wall's gate: the only way out of a confined process's network namespace.

A process confined by a directory grant gets a network namespace with only loopback (see
`confine.wrapper`); a forwarder inside relays 127.0.0.1:3128 to this gate's Unix socket, and
the process's proxy variables point there. The gate is an HTTP proxy (CONNECT for TLS and any
TCP stream, absolute-URI requests for plain HTTP) that lets through only the destinations the
grant names (`meith grants add ... --net HOST[:PORT],*.example.org` or `--net any`, parsed by
`confine.destinations`); a refused one is answered `403` with a reason that names the flag to
add, and reported to `on_refused` (the runtime's audit trail, coalesced against floods). A
process that ignores the proxy variables has nowhere else to go: raw sockets and UDP included,
nothing leaves the namespace but through the gate.

Destinations are matched by name as the client asked for them; a name is resolved here, and a
name that resolves to a loopback, link-local or private address is refused unless the grant
names that address (or `localhost`) itself, so a name under an allowed domain cannot lead to
the user's own local services.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Callable, Sequence
from typing import Final

from meith_core.confine.destinations import (
    Destination,
    bracket,
    is_literal,
    is_local,
    parse_destination,
)
from meith_core.confine.plan import NetworkAccess
from meith_core.confine.wrapper.relay import relay

#: `(destination, reason)`: a refused destination, for the audit trail.
RefusalSink = Callable[[str, str], None]

MAX_HEAD_BYTES: Final = 64 * 1024
HEAD_TIMEOUT_S: Final = 30.0
CONNECT_TIMEOUT_S: Final = 15.0


class NetworkGate:
    """The proxy one confined process reaches the network through.

    Each connection is served by a thread of its own (blocking sockets, bytes relayed with
    `splice(2)` where the kernel has it): the bulk of a download never runs on the runtime's
    event loop, and no client can stall it."""

    def __init__(
        self,
        allowed: Sequence[str] | Sequence[Destination],
        *,
        socket_path: str | None = None,
        on_refused: RefusalSink | None = None,
        grant_hint: str = "meith grants add ... --net",
    ) -> None:
        self.allowed = tuple(
            d if isinstance(d, Destination) else parse_destination(d) for d in allowed
        )
        #: None: listen on the host's loopback (a host without network namespaces).
        self.socket_path = socket_path
        self.on_refused = on_refused
        self.grant_hint = grant_hint
        self.port: int | None = None
        self.refused = 0
        self.allowed_count = 0
        self._listener: socket.socket | None = None
        self._closed = threading.Event()
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()

    @property
    def listening(self) -> bool:
        return self._listener is not None

    async def start(self) -> NetworkAccess:
        """Listen; what to give `Confinement.beneath(net=...)`."""
        return self.start_sync()

    def start_sync(self) -> NetworkAccess:
        if self.socket_path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.socket_path)
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(self.socket_path)
            os.chmod(self.socket_path, 0o600)
            access = NetworkAccess(proxy_socket=self.socket_path)
        else:
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.bind(("127.0.0.1", 0))
            self.port = int(listener.getsockname()[1])
            access = NetworkAccess(proxy_port=self.port)
        listener.listen(128)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return access

    def close(self) -> None:
        """Stop listening and drop every relayed connection."""
        self._closed.set()
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        with self._lock:
            for sock in list(self._open):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
        if self.socket_path is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.socket_path)

    # -- deciding ---------------------------------------------------------------------------

    def decide(self, host: str, port: int) -> str | None:
        """None when (host, port) is allowed, else the reason."""
        for rule in self.allowed:
            if rule.matches(host, port):
                return None
        return (
            f"meith: {bracket(host)}:{port} is not among the destinations this process's "
            f"grant allows; to allow it: {self.grant_hint} {bracket(host)}:{port}"
            + (
                f" (or --net *.{host.split('.', 1)[1]})"
                if host.count(".") >= 2 and not is_literal(host)
                else ""
            )
        )

    def _names_local(self, host: str) -> bool:
        """Whether the grant itself names a local address for `host` (literal or localhost)."""
        return is_literal(host) or host in ("localhost", "localhost.")

    def _refuse(self, destination: str, reason: str) -> None:
        self.refused += 1
        if self.on_refused is not None:
            with contextlib.suppress(Exception):
                self.on_refused(destination, reason)

    # -- serving ----------------------------------------------------------------------------

    def _accept(self, listener: socket.socket) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _track(self, sock: socket.socket, add: bool) -> None:
        with self._lock:
            if add:
                self._open.add(sock)
            else:
                self._open.discard(sock)

    def _serve(self, conn: socket.socket) -> None:
        self._track(conn, True)
        try:
            self._one(conn)
        except (OSError, ValueError):
            pass
        finally:
            self._track(conn, False)
            conn.close()

    def _one(self, conn: socket.socket) -> None:
        conn.settimeout(HEAD_TIMEOUT_S)
        head, extra = _read_head(conn)
        lines = head.decode("latin-1").split("\r\n")
        method, target, version = [*lines[0].split(" "), "", ""][:3]
        connect = method.upper() == "CONNECT"
        if connect:
            host, port = _split_host_port(target, 443)
            forward = b""
        else:
            host, port, path = _split_url(target)
            headers = [
                h
                for h in lines[1:]
                if h
                and not h.lower().startswith(
                    ("proxy-connection:", "proxy-authorization:", "connection:")
                )
            ]
            text = "\r\n".join([f"{method} {path} {version}", *headers, "Connection: close"])
            forward = (text + "\r\n\r\n").encode("latin-1")
        destination = f"{bracket(host)}:{port}"
        reason = self.decide(host, port)
        refused = reason is not None
        upstream: socket.socket | None = None
        if reason is None:
            upstream, reason, refused = self._connect(host, port)
        if upstream is None:
            reason = reason or f"meith: could not reach {destination}"
            if refused:
                self._refuse(destination, reason)
            body = (reason + "\n").encode()
            conn.sendall(
                b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\n"
                + b"X-Meith-Refused: "
                + reason.encode("latin-1", "replace")
                + b"\r\nContent-Length: "
                + str(len(body)).encode()
                + b"\r\nConnection: close\r\n\r\n"
                + body
            )
            return
        self.allowed_count += 1
        self._track(upstream, True)
        try:
            conn.settimeout(None)
            if connect:
                conn.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            else:
                upstream.sendall(forward)
            if extra:
                upstream.sendall(extra)
            relay(conn, upstream)
        finally:
            self._track(upstream, False)
            upstream.close()

    def _connect(self, host: str, port: int) -> tuple[socket.socket | None, str | None, bool]:
        """The upstream connection, or why not and whether that is a refusal (a policy
        decision, audited) rather than a failure."""
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError:
            return None, f"meith: cannot resolve {host}", False
        addresses = [str(info[4][0]) for info in infos]
        if not self._names_local(host) and any(is_local(a) for a in addresses):
            return (
                None,
                f"meith: {host} resolves to a local address ({addresses[0]}); a grant must "
                f"name that address itself: {self.grant_hint} {bracket(addresses[0])}:{port}",
                True,
            )
        try:
            upstream = socket.create_connection((addresses[0], port), timeout=CONNECT_TIMEOUT_S)
        except OSError as exc:
            return None, f"meith: could not connect to {bracket(host)}:{port} ({exc})", False
        upstream.settimeout(None)
        return upstream, None, False


def _read_head(conn: socket.socket) -> tuple[bytes, bytes]:
    """The request head (through the blank line) and whatever came after it."""
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > MAX_HEAD_BYTES:
            raise ValueError("request head too large")
        chunk = conn.recv(65536)
        if not chunk:
            raise ValueError("connection closed before the request head")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def _split_host_port(target: str, default: int) -> tuple[str, int]:
    if target.startswith("["):
        end = target.index("]")
        host, rest = target[1:end], target[end + 1 :]
        return host.lower(), int(rest[1:]) if rest.startswith(":") else default
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit():
        return target.lower(), default
    return host.lower(), int(port)


def _split_url(target: str) -> tuple[str, int, str]:
    scheme, sep, rest = target.partition("://")
    if not sep or scheme.lower() != "http":
        raise ValueError("only absolute http:// URLs and CONNECT are proxied")
    authority, slash, path = rest.partition("/")
    host, port = _split_host_port(authority.rpartition("@")[2], 80)
    return host, port, slash + path if slash else "/"


__all__ = ["NetworkGate", "RefusalSink"]
