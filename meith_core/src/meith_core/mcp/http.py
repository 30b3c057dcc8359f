"""Streamable HTTP at /mcp: a bearer token, loopback by default, DNS-rebinding protection on."""

from __future__ import annotations

import hmac
import ipaddress
import os
import secrets
import socket
from collections.abc import MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from meith_core.base.home import MeithHome

if TYPE_CHECKING:  # the token helpers work without the MCP SDK installed
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.types import ASGIApp, Receive, Scope, Send

TOKEN_FILE = "mcp-token"  # noqa: S105 - a file name, not a secret


def token_path(home: MeithHome) -> Path:
    return home.root / TOKEN_FILE


def load_or_create_token(home: MeithHome) -> str:
    """The bridge's bearer token, generated (0600, owner only) on first use."""
    home.ensure()
    path = token_path(home)
    try:
        token = path.read_text().strip()
        if token:
            return token
    except FileNotFoundError:
        pass
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, (token + "\n").encode())
    finally:
        os.close(fd)
    return token


def parse_bind(value: str) -> tuple[str, int]:
    """`PORT`, `HOST:PORT` or `[V6]:PORT`; the host defaults to loopback."""
    host, sep, port = value.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", value
    host = host.strip("[]") or "127.0.0.1"
    try:
        number = int(port)
    except ValueError:
        raise ValueError(f"--http {value!r}: expected [HOST:]PORT") from None
    if not 0 <= number <= 65535:
        raise ValueError(f"--http {value!r}: port out of range")
    return host, number


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def security_settings(
    host: str, port: int, extra_origins: tuple[str, ...] = ()
) -> TransportSecuritySettings:
    """Only this server's own host names and its own origins — scheme, host *and port*: a page
    served from another port of the same machine (any local web server) is refused too.
    `extra_origins` are the ones the user allowed besides (`meith mcp --allow-origin`)."""
    from mcp.server.transport_security import TransportSecuritySettings

    names = {host, "127.0.0.1", "localhost", "[::1]"} if is_loopback(host) else {host}
    if host in ("0.0.0.0", "::"):  # noqa: S104 - the names this machine answers to
        names = {socket.gethostname(), socket.getfqdn()}
    shown = {f"[{n}]" if ":" in n and not n.startswith("[") else n for n in names}
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{n}:{port}" for n in shown],
        allowed_origins=[f"http://{n}:{port}" for n in shown] + list(extra_origins),
    )


def parse_origin(value: str) -> str:
    """An origin the user allows besides the bridge's own: `scheme://host[:port]`, exactly."""
    scheme, sep, rest = value.partition("://")
    if not sep or scheme not in ("http", "https") or not rest or "/" in rest or "*" in value:
        raise ValueError(
            f"--allow-origin {value!r}: expected an origin such as http://localhost:5173 "
            "(scheme, host and port; no path, no wildcard)"
        )
    return value


class BearerAuth:
    """Every request needs `Authorization: Bearer <token>` (compared in constant time)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self._authorized(scope):
            body = b'{"error":"unauthorized","message":"a valid bearer token is required (meith mcp token)"}'
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"www-authenticate", b'Bearer realm="meith"'),
                        (b"content-length", str(len(body)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)

    def _authorized(self, scope: MutableMapping[str, Any]) -> bool:
        for name, value in scope.get("headers") or []:
            if name == b"authorization":
                scheme, _, given = value.partition(b" ")
                return scheme.lower() == b"bearer" and hmac.compare_digest(
                    given.strip(), self._token
                )
        return False
