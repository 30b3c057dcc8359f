"""Streamable HTTP at /mcp: a bearer token (not OAuth, and the OAuth discovery paths say so),
loopback by default, DNS-rebinding protection on."""

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


#: Where MCP is served, and the RFC 9728 protected-resource metadata about it: path-based (the
#: MCP path after the well-known prefix) and at the root, the two places MCP clients look.
MCP_PATH = "/mcp"
METADATA_PATHS = (
    "/.well-known/oauth-protected-resource" + MCP_PATH,
    "/.well-known/oauth-protected-resource",
)
#: The JSON-RPC error code of a refused request: implementation-defined (-32000 to -32099).
UNAUTHORIZED = -32001
_HOW = "send Authorization: Bearer <token> with every request; meith mcp token prints the token"
#: What a client is told, per problem; also the `error_description` of the challenge, so
#: within RFC 6750's character set (printable ASCII without `"` and `\`).
REFUSALS = {
    "missing": f"no bearer token. This server does not use OAuth: {_HOW}",
    "wrong": f"the bearer token is not this server's. It does not use OAuth: {_HOW}",
}
NOT_FOUND = {
    "error": "not_found",
    "error_description": (
        f"not found: meith's MCP bridge serves MCP at {MCP_PATH} only, and does not use OAuth "
        f"(no authorization server, no client registration): {_HOW}"
    ),
}


def json_rpc_error(
    status: int, code: int, message: str, headers: dict[str, str] | None = None
) -> ASGIApp:
    """An HTTP error whose body is a JSON-RPC error without a request id, as the SDK's own
    transport errors are: the SDK client raises its message as the failed request's error."""
    from starlette.responses import JSONResponse

    body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    return JSONResponse(body, status, headers)


class HttpFront:
    """What every HTTP request meets first. `/mcp` needs `Authorization: Bearer <token>`
    (compared in constant time) and is refused with a 401 that says how to authenticate, as a
    JSON-RPC error the SDK client shows and a challenge carrying `error_description`. The
    protected-resource metadata answers anyone: it names the resource, bearer tokens in the
    header, and no authorization server, so a client that tries OAuth finds none. Any other
    path, OAuth's included (authorization-server metadata, `/register`, `/authorize`), is a
    404 saying the same."""

    def __init__(self, app: ASGIApp, token: str, security: TransportSecuritySettings) -> None:
        from mcp.server.transport_security import TransportSecurityMiddleware

        self.app = app
        self._token = token.encode()
        self._guard = TransportSecurityMiddleware(security)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        from starlette.responses import JSONResponse

        path = scope["path"]
        response: ASGIApp
        if path in (MCP_PATH, MCP_PATH + "/"):
            problem = self._problem(scope)
            if problem is None:
                await self.app(scope, receive, send)
                return
            response = json_rpc_error(
                401,
                UNAUTHORIZED,
                f"Unauthorized: {REFUSALS[problem]}",
                {
                    "WWW-Authenticate": 'Bearer realm="meith", error="invalid_token", '
                    f'error_description="{REFUSALS[problem]}"'
                },
            )
        elif path in METADATA_PATHS:
            response = await self._metadata(scope, receive)
        else:
            response = JSONResponse(NOT_FOUND, 404)
        await response(scope, receive, send)

    def _problem(self, scope: MutableMapping[str, Any]) -> str | None:
        for name, value in scope.get("headers") or []:
            if name == b"authorization":
                scheme, _, given = value.partition(b" ")
                good = scheme.lower() == b"bearer" and hmac.compare_digest(
                    given.strip(), self._token
                )
                return None if good else "wrong"
        return "missing"

    async def _metadata(self, scope: Scope, receive: Receive) -> ASGIApp:
        """RFC 9728 metadata without `authorization_servers` (optional there): no OAuth here.
        The resource is named by the request's own `Host`, once the SDK's check accepted it."""
        from starlette.requests import Request
        from starlette.responses import JSONResponse

        if scope["method"] != "GET":
            return JSONResponse(
                {"error": "method_not_allowed", "error_description": "GET only"},
                405,
                {"Allow": "GET"},
            )
        request = Request(scope, receive)
        refused = await self._guard.validate_request(request)
        if refused is not None:
            return refused
        return JSONResponse(
            {
                "resource": f"http://{request.headers['host']}{MCP_PATH}",
                "resource_name": "meith MCP bridge",
                "bearer_methods_supported": ["header"],
                "meith_authentication": f"a static bearer token, not OAuth: {_HOW}",
            }
        )
