"""The network wall's gate: the only way out of a confined process's network namespace.

A process confined by a directory grant gets a network namespace with only loopback (see
`confine.wrapper`); the forwarder inside hands each connection made to its proxy port
(127.0.0.1:3128 inside, where the process's proxy variables point) or to a host-loopback
destination the grant names to this gate, as a descriptor over the spawn's control channel
(`confine.channel`): `serve(sock)`. On a host without network namespaces the gate listens on
the host's loopback instead (`start_sync`), the one TCP port Landlock lets the process connect
to. The gate is an HTTP proxy (CONNECT for TLS and any TCP stream, absolute-URI requests for
plain HTTP) that lets through only what the grant's rules allow (`confine.destinations`:
local addresses only through a rule that names them); a refused request, malformed ones
included, is answered `403` with a reason that names the flag to add, and reported to
`on_refused` (the runtime's audit trail, coalesced against floods). A process that ignores the
proxy variables has nowhere else to go: raw sockets and UDP included, nothing leaves the
namespace but through the gate.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Sequence
from typing import Final

from meith_core.confine.destinations import (
    Destination,
    Resolver,
    Verdict,
    bracket,
    decide,
    parse_destination,
    system_resolver,
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
        on_refused: RefusalSink | None = None,
        grant_hint: str = "meith grants add ... --net",
        resolve: Resolver = system_resolver,
    ) -> None:
        self.allowed = tuple(
            d if isinstance(d, Destination) else parse_destination(d) for d in allowed
        )
        self.on_refused = on_refused
        self.resolve = resolve
        self.grant_hint = grant_hint
        self.port: int | None = None
        self._listener: socket.socket | None = None
        self._closed = threading.Event()
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()

    @property
    def listening(self) -> bool:
        return self._listener is not None

    def start_sync(self) -> NetworkAccess:
        """Listen on the host's loopback (a host without network namespaces, where a Landlock
        TCP rule lets the process connect to this port only); what to give
        `Confinement.beneath(net=...)`. Any local process can connect to it too."""
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        self.port = int(listener.getsockname()[1])
        listener.listen(128)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return NetworkAccess(proxy_port=self.port)

    def serve(self, conn: socket.socket, tunnel: str | None = None) -> None:
        """Serve one connection from inside (a descriptor from the control channel), in a
        thread: a proxy client's, or with `tunnel` (`host:port`, a named destination the
        forwarder listens for) a client's that speaks no HTTP to the gate, decided as a
        CONNECT to `tunnel` and never answered in HTTP."""
        if self._closed.is_set():
            conn.close()
            return
        threading.Thread(target=self._serve, args=(conn, tunnel), daemon=True).start()

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

    # -- deciding ---------------------------------------------------------------------------

    def decide(self, host: str, port: int) -> Verdict:
        """Where a request for (host, port) may connect, or why not."""
        return decide(self.allowed, host, port, self.resolve, self.grant_hint)

    def _refuse(self, destination: str, reason: str) -> None:
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

    def _serve(self, conn: socket.socket, tunnel: str | None = None) -> None:
        self._track(conn, True)
        try:
            if tunnel is None:
                self._one(conn)
            else:
                self._tunnel(conn, tunnel)
        except (OSError, ValueError):
            pass
        finally:
            self._track(conn, False)
            conn.close()

    def _one(self, conn: socket.socket) -> None:
        conn.settimeout(HEAD_TIMEOUT_S)
        try:
            head, extra = _read_head(conn)
        except RequestError as exc:
            self._answer_refused(conn, "(request)", f"meith: refused: {exc}", audited=True)
            return
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        method, target, version = [*parts, "", ""][:3]
        connect = method.upper() == "CONNECT"
        try:
            if len(parts) != 3 or not version.startswith("HTTP/"):
                raise RequestError(f"not an HTTP request line: {lines[0][:200]!r}")
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
        except RequestError as exc:
            self._answer_refused(conn, target[:300], f"meith: refused: {exc}", audited=True)
            return
        self._pass(conn, host, port, connect=connect, forward=forward, extra=extra)

    def _tunnel(self, conn: socket.socket, target: str) -> None:
        """A client of a named destination: decided as CONNECT `target`; refused, it is
        recorded and closed (it reads no HTTP from the gate)."""
        try:
            host, port = _split_host_port(target, 0)
        except RequestError as exc:
            self._refuse(target[:300], f"meith: refused: {exc}")
            return
        self._pass(conn, host, port)

    def _pass(
        self,
        conn: socket.socket,
        host: str,
        port: int,
        *,
        connect: bool | None = None,
        forward: bytes = b"",
        extra: bytes = b"",
    ) -> None:
        """Relay `conn` to (host, port) when the rules allow it. `connect`: a proxy client's
        request (True: CONNECT, answered 200; False: a plain request, `forward` sent first),
        answered 403 when refused; None: a tunnel, closed when refused."""
        destination = f"{bracket(host)}:{port}"
        verdict = self.decide(host, port)
        upstream: socket.socket | None = None
        reason = verdict.refusal or verdict.failure
        if verdict.addresses:
            upstream, reason = self._connect(verdict.addresses, port, destination)
        if upstream is None:
            reason = reason or f"meith: could not reach {destination}"
            if connect is not None:
                self._answer_refused(conn, destination, reason, audited=verdict.refusal is not None)
            elif verdict.refusal is not None:
                self._refuse(destination, reason)
            return
        self._track(upstream, True)
        try:
            conn.settimeout(None)
            if connect:
                conn.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            elif forward:
                upstream.sendall(forward)
            if extra:
                upstream.sendall(extra)
            relay(conn, upstream)
        finally:
            self._track(upstream, False)
            upstream.close()

    def _answer_refused(
        self, conn: socket.socket, destination: str, reason: str, *, audited: bool
    ) -> None:
        """A 403 naming the reason (and, for a refusal, the record in the audit trail)."""
        if audited:
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

    def _connect(
        self, addresses: Sequence[str], port: int, destination: str
    ) -> tuple[socket.socket | None, str | None]:
        """A connection to the first of `addresses` that answers, or why none did."""
        error: OSError | None = None
        for address in addresses:
            try:
                upstream = socket.create_connection((address, port), timeout=CONNECT_TIMEOUT_S)
            except OSError as exc:
                error = exc
                continue
            upstream.settimeout(None)
            return upstream, None
        return None, f"meith: could not connect to {destination} ({error})"


class RequestError(ValueError):
    """A request the gate cannot read as a destination (refused, and audited)."""


def _read_head(conn: socket.socket) -> tuple[bytes, bytes]:
    """The request head (through the blank line) and whatever came after it."""
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > MAX_HEAD_BYTES:
            raise RequestError(f"a request head over {MAX_HEAD_BYTES} bytes")
        chunk = conn.recv(65536)
        if not chunk:
            raise ValueError("connection closed before the request head")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def _split_host_port(target: str, default: int) -> tuple[str, int]:
    """`host[:port]` or `[v6][:port]` of a request: the host as written, lower-cased."""
    if target.startswith("["):
        end = target.find("]")
        if end < 0:
            raise RequestError(f"unclosed [ in {target!r}")
        host, rest = target[1:end], target[end + 1 :]
        if rest and not rest.startswith(":"):
            raise RequestError(f"expected :PORT after ] in {target!r}")
        raw = rest[1:] if rest else ""
    else:
        host, _sep, raw = target.partition(":")
        if ":" in raw:
            raise RequestError(f"an IPv6 address goes in [ ]: {target!r}")
    port = default
    if raw:
        if not raw.isdigit() or not 0 < int(raw) < 65536:
            raise RequestError(f"the port must be 1-65535 in {target!r}")
        port = int(raw)
    if not host:
        raise RequestError(f"no host in {target!r}")
    return host.lower(), port


def _split_url(target: str) -> tuple[str, int, str]:
    scheme, sep, rest = target.partition("://")
    if not sep or scheme.lower() != "http":
        raise RequestError("only absolute http:// URLs and CONNECT are proxied")
    authority, slash, path = rest.partition("/")
    host, port = _split_host_port(authority.rpartition("@")[2], 80)
    return host, port, slash + path if slash else "/"


__all__ = ["NetworkGate", "RefusalSink"]
