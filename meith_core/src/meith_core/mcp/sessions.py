"""MCP sessions to runtime sessions: which link serves a request, and when it ends.

Over stdio the bridge process serves exactly one client: one agent session, whatever the era,
ending with the process. Over HTTP a handshake-era session (one `Mcp-Session-Id`) is one agent
session and its link closes with it. A 2026-07-28 HTTP request carries no session at all: the
SDK builds a fresh connection for every POST, and all clients present the same bearer token, so
the only thing telling clients apart is the name they report. Such requests share one link per
client name (and per whether the client can elicit: the runtime asks a link's connection for
approvals only if it said it could answer when it connected), at most `MAX_NAMED_SESSIONS` of
them at once. Such a session ends after `NAMED_IDLE_S` without a request and without a call in
flight, as the SDK drops an idle handshake-era HTTP session after the same time: its session
grants, and what it started, end with it.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse
from urllib.request import url2pathname

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from meith_core.base.envknobs import seconds_from_env
from meith_core.client._core import TransportError
from meith_core.mcp.link import RuntimeLink
from meith_core.mcp.profiles import Selection
from meith_core.mcp.tasks import negotiated
from meith_core.protocol.caller import sanitize_label

ROOTS_TIMEOUT_S = 5.0
#: 2026-07-28 HTTP sessions kept at once. Their names are the clients' to choose and each holds
#: a runtime connection, so a new name past this many ends the least recently used one.
MAX_NAMED_SESSIONS = 64
#: How long an HTTP session (either era) may sit unused before it ends, and with it its runtime
#: session and what that started: two hours, so an agent that waits an hour for its human finds
#: its work as it left it (the SDK's own default for handshake-era sessions is 30 minutes; the
#: bridge passes this instead). `MEITH_MCP_SESSION_IDLE_S` tunes it.
NAMED_IDLE_S = seconds_from_env(os.environ, "MEITH_MCP_SESSION_IDLE_S", 2 * 3600.0)
_NAMED = "http-2026:"


def label_of(name: str | None) -> str:
    """The MCP client's self-reported name as the session label (a hint, never a secret)."""
    return sanitize_label(name) or "mcp-client"


def _client_name(ctx: ServerRequestContext[Any, Any]) -> str | None:
    params = ctx.session.client_params
    return params.client_info.name if params is not None else None


def can_elicit(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether the client behind this request declared the elicitation capability."""
    caps = ctx.session.client_capabilities
    return caps is not None and caps.elicitation is not None


def log(message: str) -> None:
    sys.stderr.write(f"meith mcp: {message}\n")
    sys.stderr.flush()


@dataclass
class BridgeConfig:
    socket_path: str
    cwd: str
    selection: Selection = field(default_factory=Selection)
    artifacts_dir: Path | None = None
    #: The runtime's audit trail (read for the events extension's planted-git events).
    audit_path: Path | None = None
    #: `--cwd` was given: the client's roots do not override it.
    cwd_fixed: bool = False
    #: `--structured`: results carry `structuredContent` and tools their output schemas. Off
    #: by default, results are the text written for the model: a client may hand the model
    #: the structured JSON in place of the text when both are there (Claude Code does), and
    #: the machine form of a status or diff is several times the size of its text.
    structured: bool = False


@dataclass
class AgentSession:
    key: str
    label: str
    link: RuntimeLink
    tools: list[dict[str, Any]] | None = None
    log_level: str = "info"
    #: The directory the session's link said it works in (kept for its reconnects).
    cwd: str = ""
    #: Its approvals are asked of the local user elsewhere too (a client with tasks).
    shares: bool = False
    #: Who it is for the bridge (`BridgeSessions.owner`): its tasks and events are theirs.
    owner: str = ""
    last_used: float = field(default_factory=time.monotonic)

    async def all_tools(self) -> list[dict[str, Any]]:
        if self.tools is None:
            self.tools = await self.link.list_tools()
        return self.tools


class BridgeSessions:
    def __init__(
        self,
        config: BridgeConfig,
        on_tools_changed: Callable[[str], None],
        on_link: Callable[[AgentSession], None] | None = None,
    ) -> None:
        self.config = config
        self._on_tools_changed = on_tools_changed
        #: Told of each new link (a session's first, or one that resumes it).
        self._on_link = on_link
        self._sessions: dict[str, AgentSession] = {}
        self._connections: dict[str, Any] = {}
        self._lock = anyio.Lock()

    def of_owner(self, owner: str) -> list[AgentSession]:
        """The agent sessions of one owner (over 2026-07-28 HTTP, one per way of answering)."""
        return [s for s in self._sessions.values() if s.owner == owner and s.link.usable]

    def owner_of_runtime_session(self, session_id: str) -> str | None:
        for session in self._sessions.values():
            if session.link.session_id == session_id:
                return session.owner
        return None

    def connection(self, key: str) -> Any:
        """The handshake-era MCP connection of a session (None in the 2026-07-28 era)."""
        return self._connections.get(key)

    def _changed(self, key: str) -> None:
        session = self._sessions.get(key)
        if session is not None:
            session.tools = None
            self._on_tools_changed(key)

    async def aclose(self) -> None:
        for session in list(self._sessions.values()):
            await session.link.aclose()
        self._sessions.clear()

    def owner(self, ctx: ServerRequestContext[Any, Any]) -> str:
        """Who a request is, as far as the bridge can tell: what its tasks are bound to."""
        headers = getattr(ctx.request, "headers", None)
        if headers is None:
            return "stdio"
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return f"{_NAMED}{label_of(_client_name(ctx))}"
        return f"http:{headers.get('mcp-session-id')}"

    def _key(self, ctx: ServerRequestContext[Any, Any], elicits: bool, shares: bool) -> str:
        owner = self.owner(ctx)
        if not owner.startswith(_NAMED):
            return owner
        # The runtime asks a link's connection for approvals, and shares them, only as it
        # said when it connected: one link per way of answering.
        how = ("asks" if elicits else "mute") + ("+tasks" if shares else "")
        return f"{_NAMED}{how}:{owner.removeprefix(_NAMED)}"

    async def get(self, ctx: ServerRequestContext[Any, Any]) -> AgentSession:
        """This request's agent session, connecting its runtime link on first use."""
        label = label_of(_client_name(ctx))
        elicits = can_elicit(ctx)
        shares = elicits and negotiated(ctx)
        key = self._key(ctx, elicits, shares)
        session = self._sessions.get(key)
        if session is not None and session.link.usable:
            session.last_used = time.monotonic()
            return session
        async with self._lock:
            session = self._sessions.get(key)
            if session is not None and session.link.usable:
                return session
            if session is not None:
                return await self._reconnect(session, elicits)
            if key.startswith(_NAMED):
                await self._make_room()
            try:
                link = await RuntimeLink.connect(
                    self.config.socket_path,
                    label=label,
                    cwd=await self._cwd_for(ctx),
                    answers_call_approvals=elicits,
                    shares_call_approvals=shares,
                )
            except TransportError as exc:
                raise MCPError(code=types.INTERNAL_ERROR, message=exc.message) from None
            session = AgentSession(
                key, label, link, cwd=link.cwd, shares=shares, owner=self.owner(ctx)
            )
            link.on_tools_changed = lambda: self._changed(key)
            if self._on_link is not None:
                self._on_link(session)
            self._sessions[key] = session
            log(f"runtime session {link.session_id} for {label}")
            if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
                # The MCP connection's end is the runtime session's end.
                connection = ctx.session._connection
                self._connections[key] = connection
                connection.exit_stack.push_async_callback(self._end_session, key)
            return session

    async def _reconnect(self, session: AgentSession, elicits: bool) -> AgentSession:
        """A new link for a session whose link broke, resuming its runtime session."""
        old = session.link
        await old.aclose(end_session=False)
        try:
            link = await RuntimeLink.connect(
                self.config.socket_path,
                label=session.label,
                cwd=session.cwd,
                answers_call_approvals=elicits,
                resume=old,
                shares_call_approvals=session.shares,
            )
        except TransportError as exc:
            raise MCPError(code=types.INTERNAL_ERROR, message=exc.message) from None
        key = session.key
        link.on_tools_changed = lambda: self._changed(key)
        session.link, session.tools = link, None
        session.last_used = time.monotonic()
        if self._on_link is not None:
            self._on_link(session)
        if link.resumed:
            log(f"runtime session {link.session_id} resumed for {session.label}")
        else:
            log(
                f"runtime session {old.session_id} could not be resumed (it ended); "
                f"new runtime session {link.session_id} for {session.label}"
            )
        return session

    async def expire_idle_forever(self) -> None:
        """End 2026-07-28 sessions idle for `NAMED_IDLE_S` (run by the HTTP server)."""
        while True:
            await anyio.sleep(max(0.1, min(60.0, NAMED_IDLE_S / 4)))
            await self.expire_idle(time.monotonic())

    async def expire_idle(self, now: float) -> None:
        for session in self._sessions.values():
            if session.link.busy:  # the idle time counts from the end of its last call
                session.last_used = now
        idle = [
            s
            for k, s in self._sessions.items()
            if k.startswith(_NAMED) and not s.link.busy and now - s.last_used > NAMED_IDLE_S
        ]
        for session in idle:
            log(f"ending the 2026-07-28 session of {session.label}: unused for {NAMED_IDLE_S:g}s")
            await self._end_session(session.key)

    async def _make_room(self) -> None:
        """Below `MAX_NAMED_SESSIONS` 2026-07-28 sessions, ending the least recently used one
        without a call in flight when needed."""
        named = [s for k, s in self._sessions.items() if k.startswith(_NAMED)]
        for gone in [s for s in named if s.link.broken]:
            await self._end_session(gone.key)
        named = [s for s in named if not s.link.broken]
        if len(named) < MAX_NAMED_SESSIONS:
            return
        idle = [s for s in named if not s.link.busy]
        if not idle:
            raise MCPError(
                code=types.INTERNAL_ERROR,
                message=f"{len(named)} 2026-07-28 client names all have calls in flight; "
                "try again once one has finished",
            )
        oldest = min(idle, key=lambda s: s.last_used)
        log(f"ending the least recently used 2026-07-28 session ({oldest.label}) to make room")
        await self._end_session(oldest.key)

    async def _cwd_for(self, ctx: ServerRequestContext[Any, Any]) -> str:
        """The client's first file root where the era has roots, else the bridge's directory."""
        caps = ctx.session.client_capabilities
        if (
            self.config.cwd_fixed
            or ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
            or caps is None
            or caps.roots is None
        ):
            return self.config.cwd
        try:
            with anyio.fail_after(ROOTS_TIMEOUT_S):
                roots = await ctx.session.list_roots()
        except Exception as exc:
            log(
                f"could not read the client's roots ({type(exc).__name__}); using {self.config.cwd}"
            )
            return self.config.cwd
        for root in roots.roots:
            uri = str(root.uri)
            if uri.startswith("file://"):
                path = url2pathname(urlparse(uri).path)
                if path.startswith("/"):
                    return path
        return self.config.cwd

    async def _end_session(self, key: str) -> None:
        session = self._sessions.pop(key, None)
        self._connections.pop(key, None)
        if session is not None:
            with anyio.CancelScope(shield=True):
                await session.link.aclose()
