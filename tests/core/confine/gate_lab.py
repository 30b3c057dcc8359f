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

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading

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
"""


def _listen(address: str) -> None:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    srv = socket.socket(family, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((address, PORT))
    srv.listen(16)

    def serve() -> None:
        while True:
            conn, _ = srv.accept()
            with conn:
                conn.sendall(f"hello from {address}\n".encode())

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


def _ask(rules: list[str], request: str, tcp: bool) -> dict[str, object]:
    refused: list[list[str]] = []
    gate = NetworkGate(rules, on_refused=lambda what, why: refused.append([what, why]))
    if tcp:  # a host without network namespaces: the gate on a loopback port
        access = gate.start_sync()
        assert access.proxy_port == gate.port
        mine = socket.create_connection(("127.0.0.1", access.proxy_port))
    else:
        mine, theirs = socket.socketpair()
        gate.serve(theirs)
    mine.settimeout(20)
    mine.sendall(request.encode("latin-1") + b"\r\n\r\n")
    answer = b""
    while True:
        chunk = mine.recv(65536)
        if not chunk:
            break
        answer += chunk
    mine.close()
    gate.close()
    return {"answer": answer.decode("latin-1"), "refused": refused}


def main() -> int:
    _setup()
    print(json.dumps({"ready": os.getpid()}), flush=True)
    for line in sys.stdin:
        asked = json.loads(line)
        answer = _ask(asked["rules"], asked["request"], asked.get("tcp", False))
        print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
