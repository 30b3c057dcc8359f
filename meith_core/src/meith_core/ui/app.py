"""The console's routes (Starlette): the page, its event stream, and the actions it takes.

Everything the console does, it does as the local user, exactly like the CLI: calls go
through `meith_core.client` (as caller `cli`, on the console's own connection, whose calls
the runtime takes as the local user's actions: they ask for no approval), grants and plugin approvals are read and edited
in `$MEITH_HOME` through the same `TrustEditor` `meith grants` and `meith plugins` use (each
change audited, naming the console), the audit trail is read like `meith audit --follow`.
`DoorMiddleware` (`ui.guard`) stands in front of every route.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
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
from meith_core.host.trust_edits import TrustEditor, UnauditedChange
from meith_core.policy.grants import Grant, StandingGrants, standing_grant
from meith_core.protocol.caller import CallerInfo, CallerKind
from meith_core.ui.audit_feed import AuditFeed
from meith_core.ui.guard import Door, DoorMiddleware
from meith_core.ui.link import CONSOLE_LABEL, ConsoleLink, Hub

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
_STATIC: Final = {
    "console.js": "text/javascript",
    "console.css": "text/css",
    "favicon.svg": "image/svg+xml",
}
#: Seconds between keepalive comments on an idle event stream.
_KEEPALIVE_S: Final = 15.0


class Console:
    """What one `meith ui` run holds: its door, its runtime link, the audit feed."""

    def __init__(
        self, door: Door, home: MeithHome, socket_path: str | None = None, url: str | None = None
    ) -> None:
        self.door = door
        self.home = home
        self.hub = Hub()
        self.link = ConsoleLink(self.hub, socket_path, url)
        self.audit = AuditFeed(home, self.hub)
        #: Sessions this console revoked (a revoked session stays listed until it ends).
        self.revoked: set[str] = set()

    def editor(self) -> TrustEditor:
        """The trust root as this console changes it: audited as the local user's console (its
        runtime session, when it has one)."""
        caller = CallerInfo(
            CallerKind.CLI, session_id=self.link.welcome.get("sessionId"), label=CONSOLE_LABEL
        )
        return TrustEditor(self.home, f"the local user's console ({CONSOLE_LABEL})", caller)


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
        # Where a browser looks for an icon when a page names none: no 404 in its log.
        Route("/favicon.ico", bound(_favicon), methods=["GET"]),
        Route("/api/events", bound(_events), methods=["GET"]),
        Route("/api/approvals/{aid}", bound(_answer_call_approval), methods=["POST"]),
        Route("/api/sessions/{sid}/revoke", bound(_revoke), methods=["POST"]),
        Route("/api/audit/verify", bound(_verify), methods=["POST"]),
        Route("/api/grants", bound(_grants), methods=["GET"]),
        Route("/api/grants", bound(_add_grant), methods=["POST"]),
        Route("/api/grants/{gid}/revoke", bound(_revoke_grant), methods=["POST"]),
        Route("/api/plugins", bound(_plugins), methods=["GET"]),
        Route("/api/plugins/{pid}/approve", bound(_approve_plugin), methods=["POST"]),
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


async def _favicon(console: Console, request: Request) -> Response:
    return Response(_asset("favicon.svg"), media_type="image/svg+xml", headers=_headers())


def _snapshot(console: Console) -> dict[str, Any]:
    link = console.link
    return {
        "type": "snapshot",
        # The console's clock: the page counts a request's deadline (`askedAt`) against it.
        "now": time.time_ns() // 1_000_000,
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


async def _answer_call_approval(console: Console, request: Request) -> Response:
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
    try:
        await asyncio.to_thread(console.editor().add_grant, grant)
    except UnauditedChange as exc:
        return _error(str(exc), 503)
    return JSONResponse({"ok": True, "grant": grant.to_json()})


def _grant_from_form(body: dict[str, Any]) -> Grant:
    """The form's fields are `meith grants add`'s options, checked by the same function."""

    def text(key: str) -> str | None:
        return str(body.get(key) or "").strip() or None

    uses = text("uses")
    if uses is not None and not uses.isdigit():
        raise ValueError(f"--uses {uses!r}: a whole number of calls")
    net = body.get("net") or []
    sockets = body.get("sockets") or []
    return standing_grant(
        text("caller") or "cli",
        [str(c) for c in body.get("capabilities") or []],
        tool=text("tool"),
        cwd=text("cwd"),
        expires=text("expires"),
        uses=int(uses) if uses is not None else None,
        agent=text("agent"),
        net=[net] if isinstance(net, str) else [str(n) for n in net],
        sockets=[sockets] if isinstance(sockets, str) else [str(s) for s in sockets],
    )


async def _revoke_grant(console: Console, request: Request) -> Response:
    try:
        revoked = await asyncio.to_thread(console.editor().revoke_grant, request.path_params["gid"])
    except UnauditedChange as exc:  # revoked all the same
        return JSONResponse({"ok": True, "warning": str(exc)})
    if revoked is None:
        return _error("no such standing grant (it may have been revoked or used up)", 404)
    return JSONResponse({"ok": True})


async def _plugin_listing(console: Console) -> list[dict[str, Any]]:
    """The runtime's `list_plugins`: what it loaded, each approval with what changed since."""
    result = await console.link.require().call("list_plugins", {})
    return result.content if result.ok and isinstance(result.content, list) else []


async def _plugins(console: Console, request: Request) -> Response:
    try:
        return JSONResponse({"plugins": await _plugin_listing(console)})
    except TransportError as exc:
        return _error(exc.message, 502)


async def _approve_plugin(console: Console, request: Request) -> Response:
    """`meith plugins approve PLUGIN`: every capability it requests, pinned to the fingerprint
    of the plugin the runtime loaded, which must be the one the page showed (`fingerprint`)."""
    pid = request.path_params["pid"]
    shown = (await _body(request)).get("fingerprint")
    try:
        listing = await _plugin_listing(console)
    except TransportError as exc:
        return _error(exc.message, 502)
    entry = next((p for p in listing if p.get("id") == pid), None)
    if entry is None:
        return _error(f"the runtime has no plugin {pid!r}: reload the page", 404)
    if entry.get("status") != "loaded" or not entry.get("fingerprint"):
        why = entry.get("reason") or entry.get("status")
        return _error(f"plugin {pid} cannot be approved: it is {entry.get('status')} ({why})", 409)
    if (entry.get("approval") or {}).get("implicit"):
        return _error(f"plugin {pid} is part of meith: it needs no approval", 409)
    if shown != entry["fingerprint"]:
        return _error(
            f"plugin {pid} changed since the page showed it: look at it again, then approve", 409
        )
    try:
        plugin_approval = await asyncio.to_thread(
            console.editor().approve_plugin,
            pid,
            entry.get("requestedCapabilities") or [],
            entry["fingerprint"],
            distribution=entry.get("distribution"),
            version=entry.get("version"),
            tools=entry.get("tools") or [],
        )
    except UnauditedChange as exc:
        return _error(str(exc), 503)
    return JSONResponse({"ok": True, "approval": plugin_approval.to_json()})


async def _revoke_plugin(console: Console, request: Request) -> Response:
    try:
        revoked = await asyncio.to_thread(
            console.editor().revoke_plugin, request.path_params["pid"]
        )
    except UnauditedChange as exc:  # revoked all the same
        return JSONResponse({"ok": True, "warning": str(exc)})
    if revoked is None:
        return _error("no approval for that plugin", 404)
    return JSONResponse({"ok": True})


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
