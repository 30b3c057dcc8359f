"""The network plumbing is reached by handle, never by a path the confined process can touch.

A confined dev server once renamed the forwarder's socket in its own TMPDIR and put a symlink
to the runtime's socket in its place: the runtime's port forwarder, connecting by path, then
joined whoever connected to the forwarded host port to the runtime, as the runtime itself, and
the runtime took that peer for the local user. Real `meith serve`, real confined processes,
real loopback connections.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from meith_core.client import Client
from tests.core.confine.support import needs_landlock, needs_namespaces
from tests.harness import MEITH, reap, wait_until
from tests.process.sealed import free_port

pytestmark = [pytest.mark.slow, needs_landlock, needs_namespaces]

_SWAP = textwrap.dedent(
    """
    import os, socket, sys
    port, target = int(sys.argv[1]), sys.argv[2]
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", port))
    srv.listen(8)
    tmp = os.environ["TMPDIR"]
    found = sorted(os.listdir(tmp))
    print("tmpdir:" + ",".join(found), flush=True)
    for name in found:
        if name.endswith(".sock"):
            os.rename(os.path.join(tmp, name), os.path.join(tmp, name + ".old"))
            os.symlink(target, os.path.join(tmp, name))
            print("swapped:" + name, flush=True)
    print(f"listening on http://127.0.0.1:{port}", flush=True)
    while True:
        conn, _ = srv.accept()
        conn.close()
    """
)


@contextlib.contextmanager
def unix_to_tcp(path: Path, port: int) -> Iterator[None]:
    """A Unix socket at `path` whose every connection is relayed to 127.0.0.1:`port` (what a
    client of the runtime's protocol needs to speak through a TCP port)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(4)
    stop = threading.Event()

    def pump(src: socket.socket, dst: socket.socket, skip_first_line: bool = False) -> None:
        with contextlib.suppress(OSError):
            pending = b""
            while data := src.recv(65536):
                if skip_first_line:
                    # What the forwarder wrote first reaches the runtime as a malformed
                    # frame, which it answers with an error line: the attacker drops it.
                    pending += data
                    if b"\n" not in pending:
                        continue
                    data = pending.split(b"\n", 1)[1]
                    skip_first_line = False
                dst.sendall(data)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            try:
                up = socket.create_connection(("127.0.0.1", port), timeout=5)
            except OSError:
                conn.close()
                continue
            threading.Thread(target=pump, args=(up, conn, True), daemon=True).start()
            threading.Thread(target=pump, args=(conn, up), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        listener.close()
        thread.join(5)


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def test_the_forwarded_port_never_leads_to_the_runtime(meith_server: Any, tmp_path: Path) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (outside / "secret").write_text("the user's private key\n")
    srv = meith_server(plugins="process")
    srv.approve("process")
    srv.grant("starts-process", cwd=str(ws))
    # The local user runs commands unconfined (an ordinary standing grant of theirs).
    srv.grant("starts-process", tool="run_command")
    (ws / "swap.py").write_text(_SWAP)
    port = free_port()
    dev = srv.call(
        "start_dev_server",
        {"command": sys.executable, "args": ["swap.py", str(port), srv.socket]},
        cwd=str(ws),
    )
    assert dev["ok"], dev
    assert dev["content"]["confinedTo"] == os.path.realpath(ws)

    def logs() -> str:
        got = srv.call("get_process_logs", {"processId": dev["content"]["id"]}, cwd=str(ws))
        return "\n".join(e["text"] for e in got["content"]["logs"])

    assert wait_until(lambda: "listening on" in logs(), timeout=60), logs()
    # The dev server's port is reachable on the host (it announced it).
    assert wait_until(lambda: _accepts(port), timeout=30), logs()
    relay = tmp_path / "relay.sock"
    outcome: dict[str, Any]
    with unix_to_tcp(relay, port):
        try:
            with Client(str(relay), caller="cli", cwd=str(outside), connect_timeout=5) as client:
                result = client.call(
                    "run_command",
                    {"cwd": str(outside), "shell": "cat secret; id -u"},
                    timeout_ms=30000,
                )
                outcome = {"wire": result.to_wire()}
        except Exception as exc:  # the runtime is not at the other end
            outcome = {"refused": f"{type(exc).__name__}: {exc}"}
    text = json.dumps(outcome)
    assert "the user's private key" not in text, (outcome, logs())
    ran = [
        r
        for r in srv.audit_records()
        if r.get("toolName") == "run_command" and r.get("outcome") == "ok"
    ]
    assert ran == [], ran
    # By construction: no socket of the plumbing lies in the process's directories.
    assert "swapped:" not in logs(), logs()


_LISTEN = textwrap.dedent(
    """
    import socket, sys
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", int(sys.argv[1])))
    srv.listen(8)
    print(f"listening on http://127.0.0.1:{sys.argv[1]}", flush=True)
    while True:
        conn, _ = srv.accept()
        conn.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: 8\\r\\n\\r\\nsquatted")
        conn.close()
    """
)


def _bridge(srv: Any, port: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [MEITH, "mcp", "--http", str(port)],
        env=srv.cli_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def test_a_port_meith_uses_is_never_opened_for_a_confined_process(
    meith_server: Any, tmp_path: Path
) -> None:
    """A confined process that listens first on the port of the user's MCP HTTP bridge (and
    announces it) must not get it opened on the host: the bridge would fail to start, or its
    clients would hand their bearer token to the process."""
    ws = tmp_path / "ws"
    ws.mkdir()
    srv = meith_server(plugins="process")
    srv.approve("process")
    srv.grant("starts-process", cwd=str(ws))
    port = free_port()
    # The user serves MCP over HTTP on this port (their client is configured for it).
    bridge = _bridge(srv, port)
    try:
        assert wait_until(lambda: _accepts(port), timeout=60), bridge.stderr
    finally:
        reap(bridge, signal.SIGTERM)
    (ws / "listen.py").write_text(_LISTEN)
    dev = srv.call(
        "start_dev_server",
        {"command": sys.executable, "args": ["listen.py", str(port)]},
        cwd=str(ws),
    )
    assert dev["ok"], dev

    def record() -> dict[str, Any]:
        listed = srv.call("list_dev_servers", {}, cwd=str(ws))["content"]
        return next(s for s in listed if s["id"] == dev["content"]["id"])

    def asked() -> list[dict[str, Any]]:
        return [p for p in record().get("hostPorts", []) if p["port"] == port]

    # Either the runtime says what it did with the port, or the process got it on the host.
    assert wait_until(lambda: asked() or _accepts(port), timeout=60), record()
    assert not _accepts(port), "the confined process squats meith's port on the host"
    (entry,) = asked()
    assert entry["forwarded"] is False, entry
    assert "meith mcp --http" in entry["reason"], entry
    # The bridge starts again on its port, and nothing of the process answers there.
    again = _bridge(srv, port)
    try:
        assert wait_until(lambda: _accepts(port), timeout=60)
        assert again.poll() is None
    finally:
        reap(again, signal.SIGTERM)
