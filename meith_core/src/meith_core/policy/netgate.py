"""The network wall's gate: the only way out of a confined process's network namespace.

A process confined by a directory grant gets a network namespace with only loopback (see
`policy.confine_exec`); a forwarder inside relays 127.0.0.1:3128 to this gate's Unix socket,
and the process's proxy variables point there. The gate is an HTTP proxy (CONNECT for TLS and
any TCP stream, absolute-URI requests for plain HTTP) that lets through only the destinations
the grant names (`meith grants add ... --net HOST[:PORT],*.example.org` or `--net any`); a
refused one is answered `403` with a reason that names the flag to add, and reported to
`on_refused` (the runtime's audit trail, coalesced against floods). A process that ignores the
proxy variables has nowhere else to go: raw sockets and UDP included, nothing leaves the
namespace but through the gate.

Destinations are matched by name as the client asked for them; a name is resolved here, and a
name that resolves to a loopback, link-local or private address is refused unless the grant
names that address (or `localhost`) itself, so a name under an allowed domain cannot lead to
the user's own local services.

It also forwards ports the other way (`PortForwarder`): a dev server listening on its
namespace's loopback is opened on the host's 127.0.0.1 at the same port, so the user's browser
reaches it at localhost:PORT.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from meith_core.policy.confine_exec import PROXY_PORT
from meith_core.policy.confinement import NetworkAccess

#: `(destination, reason)`: a refused destination, for the audit trail.
RefusalSink = Callable[[str, str], None]

MAX_HEAD_BYTES: Final = 64 * 1024
HEAD_TIMEOUT_S: Final = 30.0
CONNECT_TIMEOUT_S: Final = 15.0
CHUNK: Final = 1024 * 1024
#: How often the forwarder looks for new listening ports inside the namespace.
PORT_POLL_S: Final = 0.5


class DestinationError(ValueError):
    """A `--net` value that is not HOST, HOST:PORT, *.DOMAIN[:PORT] or `any`."""


@dataclass(frozen=True, slots=True)
class Destination:
    """One allowed destination: a host (or `*.domain`), and a port (None: any)."""

    host: str
    port: int | None = None

    @property
    def wildcard(self) -> bool:
        return self.host.startswith("*.")

    def matches(self, host: str, port: int) -> bool:
        if self.port is not None and self.port != port:
            return False
        if self.host == "*":
            return True
        host = host.lower().rstrip(".")
        if self.wildcard:
            return host.endswith(self.host[1:]) and len(host) > len(self.host) - 1
        return host == self.host

    def __str__(self) -> str:
        return self.host if self.port is None else f"{_bracket(self.host)}:{self.port}"


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def parse_destination(value: str) -> Destination:
    text = value.strip().lower()
    if not text:
        raise DestinationError("an empty --net destination")
    if text == "any":
        return Destination("*")
    host, port = text, None
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise DestinationError(f"--net {value!r}: unclosed [")
        host, rest = text[1:end], text[end + 1 :]
        if rest:
            if not rest.startswith(":"):
                raise DestinationError(f"--net {value!r}: expected :PORT after ]")
            port = _port(rest[1:], value)
    elif text.count(":") == 1:
        host, raw = text.split(":")
        port = _port(raw, value)
    host = host.rstrip(".")
    label = host[2:] if host.startswith("*.") else host
    if not label or not all(c.isalnum() or c in "-.:_" for c in label):
        raise DestinationError(f"--net {value!r}: not a host name or address")
    return Destination(host, port)


def _port(raw: str, value: str) -> int:
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise DestinationError(f"--net {value!r}: the port must be 1-65535")
    return int(raw)


def parse_destinations(values: Iterable[str]) -> tuple[Destination, ...]:
    """Every destination of `--net` values (each may hold several, comma-separated)."""
    out: list[Destination] = []
    for value in values:
        out += [parse_destination(part) for part in value.split(",") if part.strip()]
    return tuple(dict.fromkeys(out))


def _is_local(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return False
    return ip.is_loopback or ip.is_link_local or ip.is_private or ip.is_unspecified


def _is_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


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
            f"meith: {_bracket(host)}:{port} is not among the destinations this process's "
            f"grant allows; to allow it: {self.grant_hint} {_bracket(host)}:{port}"
            + (
                f" (or --net *.{host.split('.', 1)[1]})"
                if host.count(".") >= 2 and not _is_literal(host)
                else ""
            )
        )

    def _names_local(self, host: str) -> bool:
        """Whether the grant itself names a local address for `host` (literal or localhost)."""
        return _is_literal(host) or host in ("localhost", "localhost.")

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
        destination = f"{_bracket(host)}:{port}"
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
        if not self._names_local(host) and any(_is_local(a) for a in addresses):
            return (
                None,
                f"meith: {host} resolves to a local address ({addresses[0]}); a grant must "
                f"name that address itself: {self.grant_hint} {_bracket(addresses[0])}:{port}",
                True,
            )
        try:
            upstream = socket.create_connection((addresses[0], port), timeout=CONNECT_TIMEOUT_S)
        except OSError as exc:
            return None, f"meith: could not connect to {_bracket(host)}:{port} ({exc})", False
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


def _grow_pipe(fd: int) -> None:
    """A 1 MiB pipe (the default is 64 KiB): fewer splice calls per megabyte."""
    try:
        import fcntl

        fcntl.fcntl(fd, 1031, 1 << 20)  # F_SETPIPE_SZ
    except OSError:
        pass


def _pump(src: socket.socket, dst: socket.socket) -> None:
    """Copy `src` to `dst` until end of file, with splice(2) through a pipe where possible."""
    try:
        splice = getattr(os, "splice", None)
        if splice is not None:
            r, w = os.pipe()
            _grow_pipe(w)
            try:
                sfd, dfd = src.fileno(), dst.fileno()
                while True:
                    n = splice(sfd, w, CHUNK)
                    if n == 0:
                        break
                    while n:
                        n -= splice(r, dfd, n)
            finally:
                os.close(r)
                os.close(w)
        else:
            while True:
                data = src.recv(CHUNK)
                if not data:
                    break
                dst.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)


def relay(a: socket.socket, b: socket.socket) -> None:
    """Relay both ways until both directions end (blocking; returns when done)."""
    other = threading.Thread(target=_pump, args=(b, a), daemon=True)
    other.start()
    _pump(a, b)
    other.join()


# -- ports, the other way: the user's browser reaching a confined dev server ---------------


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


__all__ = [
    "Destination",
    "DestinationError",
    "NetworkGate",
    "PortForwarder",
    "listening_ports",
    "parse_destination",
    "parse_destinations",
]
