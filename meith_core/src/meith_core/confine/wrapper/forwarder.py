"""The forwarder inside a network namespace: the only way out of it, and the only holder of the
spawn's control channel (`control.py`). It listens on the namespace's 127.0.0.1:PROXY_PORT (the
proxy the child's variables name) and on each host-loopback destination the grant names
(`--listen 127.0.0.1:5432`), and hands every connection itself to the runtime's gate over the
channel (the gate relays it to its destination: one hop, not a relay here and one there); it
relays connections the runtime sends the other way to a port of the namespace's loopback (a dev
server the user opens); and it answers name lookups on 127.0.0.1:53 with REFUSED, reporting
each name to the runtime.

It is imported on every networked start, before the command runs: it uses `_socket`,
`select.poll` and `_thread`, whose imports cost a fraction of `socket`, `selectors` and
`threading`'s.
"""

from __future__ import annotations

import _socket
import _thread
import os
import select

from . import control
from .dns import refusal
from .environment import PROXY_PORT
from .landlock import restrict_self
from .relay import relay

# Not `typing.TYPE_CHECKING`: `typing` and `collections.abc` cost every networked start
# milliseconds, and the names below are only ever annotations.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

#: Names reported per process at most (a loop of lookups must not flood the runtime).
MAX_REPORTED = 256


def _relay_and_close(a: _socket.socket, b: _socket.socket) -> None:
    try:
        relay(a, b)
    finally:
        a.close()
        b.close()


def _to_gate(conn: int, channel: _socket.socket, target: str | None) -> None:
    """Hand the connection `conn` to the runtime's gate: as it is (a proxy client), or to be
    tunnelled to `target` (a client of a named host-loopback destination, which knows nothing
    of proxies). The gate decides either as it decides a proxy request; this end keeps no
    copy."""
    try:
        control.send(channel, control.OUT, target or "", conn)
    except OSError:
        pass
    finally:
        os.close(conn)


def _inbound(conn: _socket.socket, port: int) -> None:
    inner = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    try:
        inner.settimeout(5)
        inner.connect(("127.0.0.1", port))
        inner.settimeout(None)
    except OSError:
        inner.close()
        conn.close()
        return
    _relay_and_close(conn, inner)


def _dns_tcp(conn: _socket.socket, report: Callable[[str], None]) -> None:
    try:
        conn.settimeout(5)
        data = b""
        while len(data) < 2 or len(data) < 2 + int.from_bytes(data[:2], "big"):
            chunk = conn.recv(4096)
            if not chunk:
                return
            data += chunk
        answered = refusal(data[2 : 2 + int.from_bytes(data[:2], "big")])
        if answered is not None:
            report(answered[1])
            conn.sendall(len(answered[0]).to_bytes(2, "big") + answered[0])
    except OSError:
        pass
    finally:
        conn.close()


#: (a listening socket, what it is for: "out", "dns-udp" or "dns-tcp", the CONNECT target of a
#: named destination or None)
Listener = tuple[_socket.socket, str, "str | None"]


def _forward(main_pid: int, channel: _socket.socket, listeners: list[Listener]) -> None:
    """Serve until the confined process `main_pid` exits or the runtime closes the channel."""
    poller = select.poll()
    exit_fd = os.pidfd_open(main_pid)
    watched: dict[int, Listener] = {
        exit_fd: (channel, "exit", None),
        channel.fileno(): (channel, "control", None),
    }
    watched.update((sock.fileno(), (sock, kind, target)) for sock, kind, target in listeners)
    for fd in watched:
        poller.register(fd, select.POLLIN)
    reported: set[str] = set()
    lock = _thread.allocate_lock()

    def report(name: str) -> None:
        if name.endswith((".in-addr.arpa", ".ip6.arpa")):
            return  # an address's name (a log line's reverse lookup): no destination
        with lock:
            if name in reported or len(reported) >= MAX_REPORTED:
                return
            reported.add(name)
        try:
            control.send(channel, control.DNS, name)
        except OSError:
            pass

    def spawn(target: Callable[..., None], *args: object) -> None:
        _thread.start_new_thread(target, args)

    while True:
        for fd, _events in poller.poll():
            listener, kind, target = watched[fd]
            if kind == "exit":
                os._exit(0)
            if kind == "control":
                try:
                    tag, text, attached = control.receive(channel)
                except OSError:
                    os._exit(0)
                if not tag:
                    os._exit(0)  # the runtime is done with this process
                if tag == control.IN and attached is not None and text.isdigit():
                    spawn(_inbound, _socket.socket(fileno=attached), int(text))
                elif attached is not None:
                    os.close(attached)
                continue
            if kind == "dns-udp":
                try:
                    query, peer = listener.recvfrom(4096)
                except OSError:
                    continue
                answered = refusal(query)
                if answered is not None:
                    # Reported before it is answered: by the time the process learns of the
                    # refusal (and maybe exits), the runtime has it.
                    report(answered[1])
                    try:
                        listener.sendto(answered[0], peer)
                    except OSError:
                        pass
                continue
            try:
                # `_socket`'s accept (`socket.accept` wraps it): the new connection's descriptor,
                # close-on-exec, blocking as the listener is.
                conn, _addr = listener._accept()  # type: ignore[attr-defined]
            except OSError:
                continue
            if kind == "dns-tcp":
                spawn(_dns_tcp, _socket.socket(fileno=conn), report)
            else:
                _to_gate(conn, channel, target)


def _listener(host: str, port: int, kind: int = _socket.SOCK_STREAM) -> _socket.socket:
    family = _socket.AF_INET6 if ":" in host else _socket.AF_INET
    sock = _socket.socket(family, kind)
    try:
        sock.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        if kind == _socket.SOCK_STREAM:
            sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def _split(spec: str) -> tuple[str, int]:
    host, _, port = spec.rpartition(":")
    return host.strip("[]"), int(port)


def start_forwarder(control_fd: int, proxy: bool, listen: list[str], dns: bool) -> None:
    """Listen inside the network namespace, then leave the serving to a detached grandchild
    (outside the Landlock domain the command gets, so it can neither trace nor, with ABI 6+,
    signal it; not a child of the command, so nothing of the command's waits for it). The
    channel `control_fd` stays with the grandchild only: closed here, for the command."""
    channel = _socket.socket(fileno=control_fd)
    listeners: list[Listener] = []
    try:
        if proxy:
            listeners.append((_listener("127.0.0.1", PROXY_PORT), "out", None))
        for spec in listen:
            host, port = _split(spec)
            try:
                listeners.append((_listener(host, port), "out", spec))
            except OSError:
                continue  # no such address here (IPv6 off), or the proxy's own port
        if dns:
            listeners.append((_listener("127.0.0.1", 53, _socket.SOCK_DGRAM), "dns-udp", None))
            listeners.append((_listener("127.0.0.1", 53), "dns-tcp", None))
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
                keep = {null, channel.fileno(), *(s.fileno() for s, _k, _t in listeners)}
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
                _forward(main_pid, channel, listeners)
            finally:
                os._exit(0)
        os.waitpid(child, 0)
    finally:
        for sock, _kind, _target in listeners:
            sock.close()
        channel.close()


def _open_fds() -> list[int]:
    try:
        return [int(n) for n in os.listdir("/proc/self/fd")]
    except OSError:
        return list(range(3, 256))
