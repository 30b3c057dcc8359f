"""A network of its own for the real gate: run as a subprocess (`python -m
tests.core.confine.gate_lab`), it enters private user, mount and network namespaces, puts
addresses on its loopback (a public stand-in 203.0.113.7 and 2001:db8::7, private, link-local
metadata, carrier-grade NAT, unique-local metadata, ::1), a listener on port 8080 at each that
says who it is, and its own /etc/hosts (`HOSTS`) over the real one. Then, per line on stdin
(`{"rules": [...], "request": "CONNECT host:port HTTP/1.1", "tcp": false}`), it hands one
stream to a real `NetworkGate` exactly as the control channel does (or, with `tcp`, connects to
the gate's loopback port, as on a host without network namespaces) and prints what came back and what the gate
reported (`{"answer": ..., "refused": [...]}`) on stdout.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

from meith_core.confine.gate import NetworkGate
from meith_core.confine.wrapper.namespaces import bind, enter_user_mount_namespace, loopback_up

PORT = 8080
ADDRESSES = (
    "127.0.0.1",
    "::1",
    "203.0.113.7",
    "2001:db8::7",
    "10.1.2.3",
    "169.254.169.254",
    "100.64.1.1",
    "fd00:ec2::254",
)
HOSTS = """\
127.0.0.1 localhost
::1 localhost
203.0.113.7 public.test
2001:db8::7 public6.test
127.0.0.1 loop.test
10.1.2.3 private.test
169.254.169.254 metadata.test
100.64.1.1 cgnat.test
fd00:ec2::254 metadata6.test
::ffff:127.0.0.1 mapped.test
127.0.0.1 mixed.test
203.0.113.7 mixed.test
10.1.2.3 rebound.test
127.0.0.1 rebound.test
203.0.113.8 two.test
203.0.113.7 two.test
"""
#: Port 8081: says hello and holds the connection; 8082: echoes the request it got.
HOLD, ECHO = 8081, 8082


def _listen(address: str, port: int = PORT) -> None:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    srv = socket.socket(family, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((address, port))
    srv.listen(16)

    def answer(conn: socket.socket) -> None:
        with conn:
            hello = f"hello from {address}\n".encode()
            if port == HOLD:
                conn.sendall(hello)
                while conn.recv(4096):
                    pass
            elif port == ECHO:
                got = b""
                while b"\r\n\r\n" not in got:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    got += chunk
                length = [
                    int(line.split(b":", 1)[1])
                    for line in got.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                ]
                while length and len(got.split(b"\r\n\r\n", 1)[1]) < length[0]:
                    got += conn.recv(65536)
                conn.sendall(hello + got)
            else:
                conn.sendall(hello)

    def serve() -> None:
        while True:
            conn, _ = srv.accept()
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()


def _setup() -> None:
    enter_user_mount_namespace(net=True)
    loopback_up()
    for address in ADDRESSES:
        if address in ("127.0.0.1", "::1"):
            continue
        prefix = "/128" if ":" in address else "/32"
        extra = ["nodad"] if ":" in address else []
        subprocess.run(
            ["ip", "addr", "add", address + prefix, "dev", "lo", *extra],
            check=True,
            capture_output=True,
        )
    hosts = tempfile.NamedTemporaryFile("w", suffix=".hosts", delete=False)  # noqa: SIM115
    hosts.write(HOSTS)
    hosts.close()
    bind(hosts.name, "/etc/hosts")
    for address in ADDRESSES:
        _listen(address)
    for address in ("127.0.0.1", "203.0.113.7"):
        _listen(address, HOLD)
        _listen(address, ECHO)


def _read_all(sock: socket.socket) -> bytes:
    answer = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:  # closed with unread data: what came first counts
            return answer
        if not chunk:
            return answer
        answer += chunk


def _ask(asked: dict[str, object]) -> dict[str, object]:
    refused: list[list[str]] = []
    rules = asked["rules"]
    assert isinstance(rules, list)
    hint = str(asked.get("hint", "meith grants add ... --net"))
    gate = NetworkGate(
        rules, on_refused=lambda what, why: refused.append([what, why]), grant_hint=hint
    )
    out: dict[str, object] = {"refused": refused}
    if asked.get("tcp"):  # a host without network namespaces: the gate on a loopback port
        listening = [gate.listening]
        access = gate.start_sync()
        listening.append(gate.listening)
        assert access.proxy_port == gate.port
        assert gate._listener is not None
        out["bound"] = gate._listener.getsockname()[0]
        mine = socket.create_connection(("127.0.0.1", access.proxy_port))
    else:
        mine, theirs = socket.socketpair()
        gate.serve(theirs)
    mine.settimeout(20)
    raw = asked.get("raw")
    sent = str(raw if raw is not None else f"{asked['request']}\r\n\r\n")
    with contextlib.suppress(OSError):  # the gate may answer and close before it all went
        mine.sendall(sent.encode("latin-1"))
    if asked.get("close_after"):
        # Relaying to a listener that holds on: the gate's close drops the connection, and a
        # stream handed to a closed gate is closed at once.
        first = mine.recv(65536)
        gate.close()
        out["dropped"] = _read_all(mine) == b""
        late, theirs = socket.socketpair()
        late.settimeout(20)
        gate.serve(theirs)
        out["late"] = _read_all(late).decode("latin-1")
        late.close()
        answer = first
    else:
        answer = _read_all(mine)
        with contextlib.suppress(OSError):
            mine.shutdown(socket.SHUT_WR)  # this side is done too: the relay ends
        # Each connection the gate served is forgotten once it ends (a bounded wait).
        deadline = time.monotonic() + 10
        while gate._open and time.monotonic() < deadline:
            time.sleep(0.01)
        out["released"] = not gate._open
        gate.close()
    if asked.get("tcp"):
        listening.append(gate.listening)
        out["listening"] = listening
        try:
            socket.create_connection(("127.0.0.1", access.proxy_port), timeout=5).close()
            out["closed_port_refuses"] = False
        except OSError:
            out["closed_port_refuses"] = True
    mine.close()
    out["answer"] = answer.decode("latin-1")
    return out


def main() -> int:
    _setup()
    print(json.dumps({"ready": os.getpid()}), flush=True)
    for line in sys.stdin:
        print(json.dumps(_ask(json.loads(line))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
