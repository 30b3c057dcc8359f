"""Readiness probes for `wait_for_dev_server`: a TCP port accepting connections, an HTTP URL
answering below 500."""

from __future__ import annotations

import ssl
from typing import Final
from urllib.parse import urlsplit

import anyio
import anyio.abc

PROBE_TIMEOUT_S: Final = 1.0
_LOOPBACK: Final = ("127.0.0.1", "::1")


async def port_accepts(port: int, hosts: tuple[str, ...] = _LOOPBACK) -> bool:
    """True when something accepts a TCP connection on `port` of a loopback address."""
    for host in hosts:
        try:
            with anyio.fail_after(PROBE_TIMEOUT_S):
                stream = await anyio.connect_tcp(host, port)
        except (OSError, TimeoutError):
            continue
        await stream.aclose()
        return True
    return False


def _probe_tls_context() -> ssl.SSLContext:
    # A readiness probe of a local dev server, which commonly has a self-signed certificate:
    # nothing is sent but a GET and nothing received is trusted beyond the status code.
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


async def _connect(host: str, port: int, tls: bool) -> anyio.abc.ByteStream:
    if tls:
        return await anyio.connect_tcp(
            host, port, ssl_context=_probe_tls_context(), tls_standard_compatible=False
        )
    return await anyio.connect_tcp(host, port)


async def http_status(url: str) -> int | None:
    """The status code `url` answers a GET with, or None (no connection, no HTTP answer)."""
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    tls = parts.scheme == "https"
    try:
        port = parts.port or (443 if tls else 80)
    except ValueError:
        return None
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    netloc = parts.netloc.rsplit("@", 1)[-1]
    request = (
        f"GET {path} HTTP/1.1\r\nHost: {netloc}\r\nUser-Agent: meith-wait-for-dev-server\r\n"
        "Accept: */*\r\nConnection: close\r\n\r\n"
    ).encode("latin-1", "replace")
    try:
        with anyio.fail_after(PROBE_TIMEOUT_S * 2):
            stream = await _connect(host, port, tls)
            try:
                await stream.send(request)
                head = b""
                while b"\r\n" not in head and len(head) < 4096:
                    head += await stream.receive()
            finally:
                await stream.aclose()
    except (OSError, TimeoutError, anyio.EndOfStream, anyio.BrokenResourceError, ssl.SSLError):
        return None
    fields = head.split(b"\r\n", 1)[0].split()
    if len(fields) >= 2 and fields[0].startswith(b"HTTP/") and fields[1].isdigit():
        return int(fields[1])
    return None
