"""The console's routes (Starlette): the page, its event stream, and the actions it takes.

Everything the console does, it does as the local user, exactly like the CLI: calls go
through `meith_core.client` (as caller `cli`), grants and plugin approvals are read and edited
in `$MEITH_HOME` through the same stores `meith grants` and `meith plugins` use, the audit
trail is read like `meith audit --follow`. `DoorMiddleware` (`ui.guard`) stands in front of
every route.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from importlib import resources
from typing import Any, Final

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from meith_core.base.home import MeithHome
from meith_core.client import TransportError
from meith_core.policy.grants import Grant, StandingGrants, new_grant
from meith_core.policy.plugin_approvals import PluginApprovals
from meith_core.protocol.capabilities import PRIVILEGED, parse_capabilities
from meith_core.ui.audit_feed import AuditFeed
from meith_core.ui.guard import Door, DoorMiddleware
from meith_core.ui.link import ConsoleLink, Hub

Handler = Callable[["Console", Request], Awaitable[Response]]
_DECISIONS: Final = frozenset({"allow_once", "allow_session", "deny"})
#: The tools the Processes panel calls (through the client, as the local user).
PANEL_TOOLS: Final = frozenset(
    {
        "list_dev_servers",
        "list_terminals",
        "get_tabs",
        "get_process_logs",
        "stop_dev_server",
        "kill_terminal",
        "take_screenshot",
    }
)
_ARTIFACT: Final = re.compile(r"screenshot-[A-Za-z0-9_.-]+\.png")
_STATIC: Final = {"console.js": "text/javascript", "console.css": "text/css"}
#: Seconds between keepalive comments on an idle event stream.
_KEEPALIVE_S: Final = 15.0


class Console:
    """What one `meith ui` run holds: its door, its runtime link, the audit feed."""

    def __init__(self, door: Door, home: MeithHome, socket_path: str | None = None) -> None:
        self.door = door
        self.home = home
        self.hub = Hub()
        self.link = ConsoleLink(self.hub, socket_path)
        self.audit = AuditFeed(home, self.hub)
        #: Sessions this console revoked (a revoked session stays listed until it ends).
        self.revoked: set[str] = set()


def build_app(console: Console) -> Any:
    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        console.link.start()
        console.audit.start()
        try:
            yield
        finally:
            await console.link.aclose()
            await console.audit.aclose()

    def bound(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            return await handler(console, request)

        return endpoint

    routes = [
        Route("/", bound(_page), methods=["GET"]),
        Route("/static/{name}", bound(_static), methods=["GET"]),
        Route("/api/events", bound(_events), methods=["GET"]),
        Route("/api/approvals/{aid}", bound(_answer), methods=["POST"]),
        Route("/api/sessions/{sid}/revoke", bound(_revoke), methods=["POST"]),
        Route("/api/audit/verify", bound(_verify), methods=["POST"]),
        Route("/api/grants", bound(_grants), methods=["GET"]),
        Route("/api/grants", bound(_add_grant), methods=["POST"]),
        Route("/api/grants/{gid}/revoke", bound(_revoke_grant), methods=["POST"]),
        Route("/api/plugins", bound(_plugins), methods=["GET"]),
        Route("/api/plugins/{pid}/revoke", bound(_revoke_plugin), methods=["POST"]),
        Route("/api/tools/{name}", bound(_tool), methods=["POST"]),
        Route("/api/artifacts/{name}", bound(_artifact), methods=["GET"]),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    return DoorMiddleware(app, console.door)


def _headers() -> dict[str, str]:
    return {
        "cache-control": "no-store",
        "content-security-policy": (
            "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
            "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
        ),
        "x-frame-options": "DENY",
        "referrer-policy": "no-referrer",
        "x-content-type-options": "nosniff",
    }


def _asset(name: str) -> str:
    return resources.files("meith_core.ui").joinpath("static", name).read_text("utf-8")


async def _page(console: Console, request: Request) -> Response:
    html = _asset("index.html").replace("{{csrf}}", console.door.csrf)
    return Response(html, media_type="text/html; charset=utf-8", headers=_headers())


async def _static(console: Console, request: Request) -> Response:
    name = request.path_params["name"]
    if name not in _STATIC:
        return Response("not found", status_code=404)
    return Response(_asset(name), media_type=_STATIC[name], headers=_headers())


def _snapshot(console: Console) -> dict[str, Any]:
    link = console.link
    return {
        "type": "snapshot",
        "connected": link.connected,
        "error": link.error,
        "welcome": link.welcome,
        "approvals": [p.request for p in link.pending.values()],
        "audit": list(console.audit.recent),
        "verification": console.audit.verification,
        "revoked": sorted(console.revoked),
    }


async def _events(console: Console, request: Request) -> Response:
    queue = console.hub.subscribe()

    async def stream() -> AsyncIterator[bytes]:
        try:
            yield _sse(_snapshot(console))
            while True:
                try:
                    event = await asyncio.wait_for(queue.get(), _KEEPALIVE_S)
                except TimeoutError:
                    yield b": keepalive\n\n"
                    continue
                if event is None:
                    return
                yield _sse(event)
        finally:
            console.hub.unsubscribe(queue)

    return StreamingResponse(
        stream(), media_type="text/event-stream", headers={"cache-control": "no-store"}
    )


def _sse(event: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(event, ensure_ascii=False).encode() + b"\n\n"


async def _body(request: Request) -> dict[str, Any]:
    with contextlib.suppress(ValueError):
        data = await request.json()
        if isinstance(data, dict):
            return data
    return {}


def _error(message: str, status: int = 400) -> JSONResponse:
    return JSONResponse({"ok": False, "error": message}, status_code=status)


async def _answer(console: Console, request: Request) -> Response:
    decision = (await _body(request)).get("decision")
    if decision not in _DECISIONS:
        return _error("decision must be allow_once, allow_session or deny")
    if not console.link.answer(request.path_params["aid"], str(decision), "the local user"):
        return _error("that request no longer waits for an answer", 409)
    return JSONResponse({"ok": True})


async def _revoke(console: Console, request: Request) -> Response:
    sid = request.path_params["sid"]
    try:
        sessions = await console.link.require().revoke_session(sid)
    except TransportError as exc:
        return _error(exc.message, 502)
    console.revoked.add(sid)
    console.hub.publish({"type": "sessions", "sessions": sessions})
    console.hub.publish({"type": "revoked", "sessionId": sid})
    return JSONResponse({"ok": True})


async def _verify(console: Console, request: Request) -> Response:
    return JSONResponse(await console.audit.check())


# -- grants and plugins: the trust root, edited as `meith grants` / `meith plugins` do -------


async def _grants(console: Console, request: Request) -> Response:
    store = StandingGrants(console.home.grants_path)
    now = time.time_ns() // 1_000_000
    grants = [{**g.to_json(), "expired": g.expired(now)} for g in store.current()]
    return JSONResponse({"grants": grants, "warning": store.load_error})


async def _add_grant(console: Console, request: Request) -> Response:
    body = await _body(request)
    try:
        grant = await asyncio.to_thread(_grant_from_form, body)
    except (ValueError, TypeError) as exc:
        return _error(str(exc))
    StandingGrants(console.home.grants_path).add(grant)
    return JSONResponse({"ok": True, "grant": grant.to_json()})


def _grant_from_form(body: dict[str, Any]) -> Grant:
    """The CLI's narrow forms: caller (and agent name), capabilities, tool, directory, expiry
    in seconds, uses."""
    caps = parse_capabilities([str(c) for c in body.get("capabilities") or []])
    if not caps or any(c not in PRIVILEGED for c in caps):
        raise ValueError("choose one or more privileged capabilities")
    cwd = str(body.get("cwd") or "").strip() or None
    prefix = os.path.abspath(os.path.expanduser(cwd)) if cwd else None
    if prefix is not None and not os.path.isdir(prefix):
        raise ValueError(f"{prefix}: no such directory")
    expires_s = int(body.get("expiresS") or 0)
    return new_grant(
        str(body.get("caller") or "cli"),
        caps,
        tool=str(body.get("tool") or "").strip() or None,
        uses=int(body.get("uses") or 0) or None,
        expires_at=time.time_ns() // 1_000_000 + expires_s * 1000 if expires_s > 0 else None,
        cwd_prefix=prefix,
        source="standing",
        agent=str(body.get("agent") or "").strip() or None,
    )


async def _revoke_grant(console: Console, request: Request) -> Response:
    if StandingGrants(console.home.grants_path).revoke(request.path_params["gid"]):
        return JSONResponse({"ok": True})
    return _error("no such standing grant", 404)


async def _plugins(console: Console, request: Request) -> Response:
    """The runtime's plugin listing with, per approval, what its fingerprint covers and what
    changed since (version, or the tool descriptors under the same version)."""
    approvals = PluginApprovals(console.home.plugins_path).current()
    try:
        result = await console.link.require().call("list_plugins", {})
    except TransportError as exc:
        return _error(exc.message, 502)
    listing = result.content if result.ok and isinstance(result.content, list) else []
    for entry in listing:
        approval = approvals.get(str(entry.get("id")))
        if approval is None:
            continue
        changed = []
        if approval.fingerprint != entry.get("fingerprint"):
            if approval.version != entry.get("version"):
                changed.append(f"version {approval.version} → {entry.get('version')}")
            else:
                changed.append("its tools (names, schemas or capabilities) under the same version")
        entry["approvalRecord"] = {**approval.to_json(), "changed": changed}
    return JSONResponse({"plugins": listing})


async def _revoke_plugin(console: Console, request: Request) -> Response:
    if PluginApprovals(console.home.plugins_path).revoke(request.path_params["pid"]):
        return JSONResponse({"ok": True})
    return _error("no approval for that plugin", 404)


async def _artifact(console: Console, request: Request) -> Response:
    """A screenshot the browser plugin wrote under `$MEITH_HOME/artifacts/` (by name only)."""
    name = request.path_params["name"]
    if not _ARTIFACT.fullmatch(name):
        return Response("not found", status_code=404)
    path = console.home.artifacts_dir / name
    try:
        data = await asyncio.to_thread(path.read_bytes)
    except OSError:
        return Response("not found", status_code=404)
    return Response(data, media_type="image/png", headers=_headers())


async def _tool(console: Console, request: Request) -> Response:
    name = request.path_params["name"]
    if name not in PANEL_TOOLS:
        return _error("the console calls only the tools of its panels", 404)
    try:
        result = await console.link.require().call(name, await _body(request))
    except TransportError as exc:
        return _error(exc.message, 502)
    return JSONResponse(result.to_wire())
