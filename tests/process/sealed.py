"""What the sealed-confinement tests share: a confined run through the real process plugin,
and loopback listeners (127.0.0.1 only, never any other address; those the escape corpus
uses too come from `meith_core.doctor.probes`)."""

from __future__ import annotations

import contextlib
import http.server
import os
import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from meith_core import CallerInfo
from meith_core.doctor.probes import (
    compile_constructor_library,
    free_port,
    tcp_listener,
    udp_listener,
)
from tests.process.conftest import Proc
from tests.process.support import eventually, ok

needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")

DONE = "done-marker"


def agent(proc: Proc, scope: Path, *, net: tuple[str, ...] = ()) -> CallerInfo:
    """An agent session holding nothing but `starts-process --cwd scope [--net ...]`."""
    session = proc.rt.open_session("agent", cwd=str(scope))
    extra = {"net": net} if net else {}
    proc.rt.grant(session, ["starts-process"], cwd_prefix=str(scope), **extra)
    return session


async def logs(proc: Proc, caller: CallerInfo, process_id: str) -> str:
    result = await proc.rt.call("get_process_logs", {"processId": process_id}, caller=caller)
    return "\n".join(e["text"] for e in ok(result)["logs"])


async def run_dev(
    proc: Proc,
    caller: CallerInfo,
    cwd: Path,
    command: str,
    *,
    env: dict[str, str] | None = None,
    args: list[str] | None = None,
) -> str:
    """Start a confined dev server running `command` (a shell line that ends by echoing
    DONE), wait for it, and return its output."""
    arguments: dict[str, Any] = {"cwd": str(cwd), "command": command}
    if args is not None:
        arguments["args"] = args
    if env:
        arguments["env"] = env
    started = ok(await proc.rt.call("start_dev_server", arguments, caller=caller))
    assert started["confinedTo"] == os.path.realpath(cwd), started
    pid = started["id"]

    async def finished() -> str:
        text = await logs(proc, caller, pid)
        return text if DONE in text else ""

    return await eventually(finished, f"{command!r} to finish", deadline_s=60)


class _Handler(http.server.BaseHTTPRequestHandler):
    body = b"hello from the loopback\n"

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def http_server() -> Iterator[int]:
    """An HTTP server on 127.0.0.1 answering every GET with `_Handler.body`."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(httpd.server_address[1])
    finally:
        httpd.shutdown()
        httpd.server_close()


async def until(predicate: Any, what: str) -> Any:
    return await eventually(predicate, what, deadline_s=30)


#: What the test itself sends a listener once the confined process is done.
SENTINEL = b"sentinel"


async def only_the_sentinel_arrives(
    tcp: tuple[int, list[bytes]] | None = None, udp: tuple[int, list[bytes]] | None = None
) -> None:
    """Nothing the confined process sent reached these listeners: a connection and a datagram
    sent from here after it was done arrive, and they are all that did."""
    if tcp is not None:
        with socket.create_connection(("127.0.0.1", tcp[0]), timeout=10) as conn:
            conn.sendall(SENTINEL)
    if udp is not None:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.sendto(SENTINEL, ("127.0.0.1", udp[0]))
    received = [got for _, got in (x for x in (tcp, udp) if x is not None)]
    await until(lambda: all(received), "the sentinels")
    for got in received:
        assert got == [SENTINEL], got


__all__ = [
    "DONE",
    "agent",
    "compile_constructor_library",
    "free_port",
    "http_server",
    "logs",
    "needs_cc",
    "only_the_sentinel_arrives",
    "run_dev",
    "tcp_listener",
    "udp_listener",
    "until",
]
