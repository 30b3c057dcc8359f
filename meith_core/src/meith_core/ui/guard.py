"""The console's door: every request passes here before any route.

- `Host` must name the console's own address (a page of another site that resolves its name to
  127.0.0.1 — DNS rebinding — sends its own name, and is refused);
- a browser's `Origin` (and `Sec-Fetch-Site`), when sent, must be the console's own;
- the per-run secret in the printed URL is exchanged once for an HttpOnly, SameSite=Strict
  cookie, then the browser is sent to the same page without it; without the cookie nothing is
  served;
- a state-changing request (anything but GET/HEAD) also carries the per-run CSRF token in the
  `X-Meith-CSRF` header, and an `Origin` that is the console's own.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any, Final
from urllib.parse import parse_qs

COOKIE: Final = "meith_ui"
CSRF_HEADER: Final = "x-meith-csrf"
SECRET_PARAM: Final = "k"  # noqa: S105 - the name of the query parameter, not a secret
_SAFE_METHODS: Final = frozenset({"GET", "HEAD"})

Scope = dict[str, Any]


@dataclass
class Door:
    """The secrets of one `meith ui` run and the addresses it answers to."""

    hosts: frozenset[str]
    scheme: str = "http"
    secret: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    cookie_value: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))

    @classmethod
    def for_address(
        cls, host: str, port: int, *, extra_hosts: Iterable[str] = (), tls: bool = False
    ) -> Door:
        names = {host, "127.0.0.1", "localhost", "[::1]", *extra_hosts}
        return cls(frozenset(f"{n}:{port}" for n in names), "https" if tls else "http")

    def address(self, host: str, port: int) -> str:
        """The console's address without the secret: what a caller waiting for it is told."""
        return f"{self.scheme}://{host}:{port}/"

    def url(self, host: str, port: int) -> str:
        return f"{self.address(host, port)}?{SECRET_PARAM}={self.secret}"

    @property
    def origins(self) -> frozenset[str]:
        return frozenset(f"{self.scheme}://{h}" for h in self.hosts)

    def refusal(self, scope: Scope) -> tuple[int, str] | None:
        """Why this request is refused (status, text), or None."""
        headers = _headers(scope)
        if headers.get("host", "") not in self.hosts:
            return 421, "unknown Host: the console answers only to its own address"
        origin = headers.get("origin")
        if origin is not None and origin not in self.origins:
            return 403, "foreign Origin"
        if headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
            return 403, "cross-site request"
        if not self.has_cookie(headers):
            return 401, "no console cookie: open the URL `meith ui` printed"
        if scope["method"] not in _SAFE_METHODS:
            if origin is None:
                return 403, "a state-changing request must say its Origin"
            token = headers.get(CSRF_HEADER, "")
            if not hmac.compare_digest(token.encode(), self.csrf.encode()):
                return 403, "missing or wrong CSRF token"
        return None

    def has_cookie(self, headers: dict[str, str]) -> bool:
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(headers.get("cookie", ""))
        except Exception:
            return False
        morsel = jar.get(COOKIE)
        return morsel is not None and hmac.compare_digest(
            morsel.value.encode(), self.cookie_value.encode()
        )

    def presents_secret(self, scope: Scope) -> bool:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        given = (query.get(SECRET_PARAM) or [""])[0]
        return bool(given) and hmac.compare_digest(given.encode(), self.secret.encode())

    def set_cookie_header(self) -> bytes:
        secure = "; Secure" if self.scheme == "https" else ""
        return (f"{COOKIE}={self.cookie_value}; HttpOnly; SameSite=Strict; Path=/{secure}").encode()


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}


class DoorMiddleware:
    """ASGI middleware applying `Door` to every HTTP request."""

    def __init__(self, app: Any, door: Door) -> None:
        self.app = app
        self.door = door

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        door = self.door
        headers = _headers(scope)
        if (
            scope["method"] == "GET"
            and scope.get("path") == "/"
            and headers.get("host", "") in door.hosts
            and door.presents_secret(scope)
        ):
            # The secret is spent on a cookie; the address bar and history lose it.
            await _respond(
                send, 303, b"", [(b"location", b"/"), (b"set-cookie", door.set_cookie_header())]
            )
            return
        refused = door.refusal(scope)
        if refused is not None:
            status, text = refused
            await _respond(
                send, status, text.encode(), [(b"content-type", b"text/plain; charset=utf-8")]
            )
            return
        await self.app(scope, receive, send)


async def _respond(send: Any, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                *headers,
                (b"content-length", str(len(body)).encode()),
                (b"cache-control", b"no-store"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
