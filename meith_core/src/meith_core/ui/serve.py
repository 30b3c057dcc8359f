"""Serving the console: uvicorn on loopback (another address only with `--allow-remote` and
TLS), the URL with the run's secret printed, a browser opened unless told not to."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import sys
import webbrowser
from typing import TextIO

from meith_core.base.home import MeithHome
from meith_core.base.port_registry import record_port
from meith_core.ui.app import Console, build_app
from meith_core.ui.guard import Door


class UsageError(ValueError):
    """A `meith ui` option combination that would open the door wider than allowed."""


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, allow_remote: bool, certfile: str | None, keyfile: str | None) -> None:
    if _is_loopback(host):
        return
    if not allow_remote:
        raise UsageError(
            f"--host {host} is not loopback; add --allow-remote (with TLS) to serve it"
        )
    if not (certfile and keyfile):
        raise UsageError("--allow-remote needs --tls-cert and --tls-key: the console is a door")


async def serve_console(
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    open_browser: bool = True,
    socket_path: str | None = None,
    certfile: str | None = None,
    keyfile: str | None = None,
    allow_remote: bool = False,
    public_names: tuple[str, ...] = (),
    out: TextIO | None = None,
) -> None:
    import uvicorn

    check_bind(host, allow_remote, certfile, keyfile)
    out = out or sys.stdout
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host.strip("[]"), port))
    bound_port = sock.getsockname()[1]
    # Never opened on the host for a confined process (it would squat the console); noted
    # before anyone can connect.
    record_port(int(bound_port), "meith ui (the console)", configured=port != 0)
    sock.listen(128)  # connections wait for uvicorn from now on: the printed URL works at once
    shown_host = f"[{host.strip('[]')}]" if family == socket.AF_INET6 else host
    tls = bool(certfile and keyfile)
    door = Door.for_address(shown_host, bound_port, extra_hosts=public_names, tls=tls)
    address = door.address(shown_host, bound_port)
    console = Console(door, MeithHome.from_env().ensure(), socket_path, address)
    url = door.url(shown_host, bound_port)
    out.write(f"meith ui: {url}\n(the link is for you alone: it carries this run's secret)\n")
    out.flush()
    config = uvicorn.Config(
        build_app(console),
        log_level="warning",
        lifespan="on",
        access_log=False,
        ssl_certfile=certfile,
        ssl_keyfile=keyfile,
        # The door checks Host itself; forwarded headers are never trusted.
        proxy_headers=False,
        server_header=False,
        # Open event streams never end by themselves: stop waiting for them at shutdown.
        timeout_graceful_shutdown=1,
    )
    server = uvicorn.Server(config)
    opening = asyncio.create_task(_open_browser(url, out)) if open_browser else None
    try:
        await server.serve(sockets=[sock])
    finally:
        if opening is not None:
            opening.cancel()


async def _open_browser(url: str, out: TextIO) -> None:
    """Open the link in the user's browser (off the event loop: a text browser would hold it;
    the socket already listens, so the browser's request waits for uvicorn); where there is no
    browser, say so: the link printed above is then the way in."""
    try:
        opened = await asyncio.to_thread(webbrowser.open, url)
    except Exception:  # a broken BROWSER setting is no browser, not a crash
        opened = False
    if not opened:
        out.write("meith ui: no browser could be opened here: open the link above in yours\n")
        out.flush()
