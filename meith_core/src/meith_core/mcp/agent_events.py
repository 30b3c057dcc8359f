"""The events extension (`io.modelcontextprotocol/events`, 2026-07-28): what an agent would
otherwise poll for, announced to a client that subscribes (`events/list`, `events/poll`,
`events/stream`).

Event types, each about the subscriber's own agent session: `dev_server.ready` (a dev server
answers on its port: the bridge waits for it as `wait_for_dev_server` does), `dev_server.exited`
(no longer among what the session owns), `command.finished` (a `run_command` ended),
`approval.decided` (a person allowed or denied one of its calls) and `planted_git.neutralised`
(git metadata a confined process planted was made inert, as the audit trail records it).
Occurrences are kept in memory, the newest `KEEP`; a cursor is a position in them, so a client
that reconnects resumes, and is told (`truncated`) when some it missed were dropped.
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import anyio
import anyio.abc
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field

from meith_core.audit.follow import Follower
from meith_core.mcp.link import CallHandle
from meith_core.mcp.listen import Notice
from meith_core.mcp.sessions import BridgeSessions
from meith_core.protocol.call_approval import APPROVED, awaits_approval

EVENTS_EXTENSION: Final = "io.modelcontextprotocol/events"
KEEP: Final = 2000
#: Seconds between looks at the runtime's dev servers and the audit trail, while watched.
POLL_S: Final = 1.0
#: A push stream says it is alive at least this often (with the cursor it has reached).
HEARTBEAT_S: Final = 15.0
_ID = {"type": "string", "description": "A dev server id (dev_…)"}
_OBJECT: dict[str, Any] = {"type": "object"}
TYPES: Final[dict[str, dict[str, Any]]] = {
    "dev_server.ready": {
        "description": "A dev server of this session answers on its port (once).",
        "inputSchema": {
            "type": "object",
            "properties": {"devServerId": _ID},
            "required": ["devServerId"],
        },
    },
    "dev_server.exited": {
        "description": "A dev server of this session stopped running (exited, failed or stopped).",
        "inputSchema": {"type": "object", "properties": {"devServerId": _ID}},
    },
    "command.finished": {
        "description": "A run_command of this session ended: its exit status and duration.",
        "inputSchema": _OBJECT,
    },
    "approval.decided": {
        "description": "A person allowed or denied a call of this session that waited for them.",
        "inputSchema": _OBJECT,
    },
    "planted_git.neutralised": {
        "description": "Git metadata a confined process of this session planted was made inert.",
        "inputSchema": _OBJECT,
    },
}


class ListParams(types.RequestParams):
    cursor: str | None = None


class SubscribeParams(types.RequestParams):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    cursor: str | None = None


def require(ctx: ServerRequestContext[Any, Any]) -> None:
    """Only a client that declares the extension on the request (-32021 otherwise)."""
    caps = ctx.session.client_capabilities
    if not (
        ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        and caps is not None
        and EVENTS_EXTENSION in (caps.extensions or {})
    ):
        raise MCPError(
            code=types.MISSING_REQUIRED_CLIENT_CAPABILITY,
            message=f"Missing required client capability: extensions.{EVENTS_EXTENSION}",
            data={"requiredCapabilities": {"extensions": {EVENTS_EXTENSION: {}}}},
        )


@dataclass(frozen=True)
class _Kept:
    seq: int
    owner: str
    name: str
    data: dict[str, Any]
    at: float


def _occurrence(kept: _Kept) -> dict[str, Any]:
    stamp = datetime.fromtimestamp(kept.at, UTC).isoformat().replace("+00:00", "Z")
    return {
        "eventId": f"ev-{kept.seq}",
        "name": kept.name,
        "timestamp": stamp,
        "data": kept.data,
        "cursor": str(kept.seq),
    }


def _decided(call: CallHandle, decision: str) -> dict[str, Any]:
    return {"tool": call.tool, "requestId": call.request_id, "decision": decision}


def _finished(call: CallHandle, wire: dict[str, Any]) -> dict[str, Any]:
    """A finished command as its answer's first line says it (`exit 1 in 0.4 s, …`)."""
    error = wire.get("error") or {}
    text = wire.get("text") if wire.get("ok") else error.get("message")
    return {
        "requestId": call.request_id,
        "ok": bool(wire.get("ok")),
        "summary": str(text or "").split("\n", 1)[0][:500],
    }


def _matches(kept: _Kept, owner: str, name: str, arguments: dict[str, Any]) -> bool:
    if kept.owner != owner or kept.name != name:
        return False
    return all(kept.data.get(k) == v for k, v in arguments.items())


class AgentEvents:
    """Occurrences by agent session, and the watches that find them: a session's calls as the
    bridge relays them, its dev servers as the runtime lists them, and the audit trail."""

    def __init__(
        self,
        sessions: BridgeSessions,
        audit_path: Path | None,
        group: Callable[[], anyio.abc.TaskGroup | None],
    ) -> None:
        self._sessions = sessions
        self._audit_path = audit_path
        #: Where the watches run (the bridge's task group, once it serves).
        self._group = group
        self._kept: deque[_Kept] = deque(maxlen=KEEP)
        self._seq = itertools.count(1)
        self._changed = anyio.Event()
        #: What is watched already: (owner, kind[, dev server]).
        self._watching: set[tuple[str, ...]] = set()
        #: Calls that waited for a person, and whether the decision was told.
        self._waited: dict[str, bool] = {}

    @property
    def position(self) -> int:
        return self._kept[-1].seq if self._kept else 0

    def publish(self, owner: str, name: str, data: dict[str, Any]) -> None:
        self._kept.append(_Kept(next(self._seq), owner, name, data, time.time()))
        self._changed.set()
        self._changed = anyio.Event()

    # -- finding occurrences ------------------------------------------------------------------

    def observe(self, owner: str, call: CallHandle, item: tuple[str, Any]) -> None:
        """One item of a session's call as the bridge queues it: approvals and commands."""
        kind, payload = item
        said = payload.get("message") if kind == "event" and isinstance(payload, dict) else None
        rid = call.request_id
        if kind == "approval" or (kind == "event" and awaits_approval(payload)):
            self._waited.setdefault(rid, False)
        elif said == APPROVED and self._waited.get(rid) is False:
            self._waited[rid] = True
            self.publish(owner, "approval.decided", _decided(call, "allowed"))
        elif kind in ("result", "error"):
            wire: dict[str, Any] = (
                payload.to_wire() if kind == "result" else {"ok": False, "error": {}}
            )
            if self._waited.pop(rid, True) is False:
                denied = (wire.get("error") or {}).get("code") == "PERMISSION_DENIED"
                self.publish(
                    owner, "approval.decided", _decided(call, "denied" if denied else "allowed")
                )
            if call.tool == "run_command":
                self.publish(owner, "command.finished", _finished(call, wire))

    async def _watch(self, owner: str, name: str, arguments: dict[str, Any]) -> None:
        """Begin what finds a subscription's occurrences (once each)."""
        group = self._group()
        if group is None:
            return
        if name == "dev_server.ready":
            key = (owner, name, str(arguments["devServerId"]))
            if key not in self._watching:
                self._watching.add(key)
                group.start_soon(self._ready, owner, key[2])
        elif name == "dev_server.exited" and (owner, name) not in self._watching:
            self._watching.add((owner, name))
            group.start_soon(self._exits, owner)
        elif name == "planted_git.neutralised" and ("", name) not in self._watching:
            self._watching.add(("", name))
            group.start_soon(self._planted)

    async def _ready(self, owner: str, dev_server_id: str) -> None:
        """Wait for the dev server to answer, as `wait_for_dev_server` waits for it."""
        for session in self._sessions.of_owner(owner)[:1]:
            arguments = {"devServerId": dev_server_id, "timeoutMs": 600_000}
            call = await session.link.start_call("wait_for_dev_server", arguments)
            while (item := await call.queue.get())[0] == "event":
                pass
            record = item[1].content if item[0] == "result" and item[1].ok else None
            if isinstance(record, dict):
                data = {"devServerId": dev_server_id, "port": record.get("port")}
                self.publish(owner, "dev_server.ready", {**data, "status": record.get("status")})
        self._watching.discard((owner, "dev_server.ready", dev_server_id))

    async def _exits(self, owner: str) -> None:
        """The owner's dev servers, as the runtime lists its sessions (not a tool call: not
        audited); one that is no longer there has stopped running."""
        alive: dict[str, str] = {}
        while sessions := self._sessions.of_owner(owner):
            mine = {s.link.session_id for s in sessions}
            listed = await sessions[0].link.client.list_sessions()
            now = {
                str(o.get("id")): str(o.get("summary") or "")
                for s in listed
                if isinstance(s, dict) and s.get("sessionId") in mine
                for o in s.get("owns") or []
                if isinstance(o, dict) and o.get("kind") == "dev-server"
            }
            for gone in alive.keys() - now.keys():
                self.publish(owner, "dev_server.exited", {"devServerId": gone, "was": alive[gone]})
            alive = now
            await anyio.sleep(POLL_S)
        self._watching.discard((owner, "dev_server.exited"))

    async def _planted(self) -> None:
        """The audit trail's planted-git records, as `meith audit --follow` reads it."""
        if self._audit_path is None:
            return
        follower = Follower(self._audit_path)
        while True:
            for record in follower.new_records():
                owner = self._sessions.owner_of_runtime_session(str(record.get("sessionId")))
                if record.get("kind") == "planted-git" and owner is not None:
                    keep = ("reason", "outcome", "subject", "findings", "complete")
                    self.publish(owner, "planted_git.neutralised", {k: record.get(k) for k in keep})
            await anyio.sleep(POLL_S)

    def _after(
        self, cursor: int, owner: str, name: str, arguments: dict[str, Any]
    ) -> tuple[list[dict[str, Any]], bool]:
        """What matches after `cursor`, and whether some after it were already dropped."""
        truncated = bool(self._kept) and self._kept[0].seq > cursor + 1
        found = [
            _occurrence(k)
            for k in self._kept
            if k.seq > cursor and _matches(k, owner, name, arguments)
        ]
        return found, truncated

    def _check(self, params: SubscribeParams) -> int:
        if params.name not in TYPES:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"unknown event type {params.name!r}: events/list lists them",
            )
        required = TYPES[params.name]["inputSchema"].get("required", [])
        if missing := [r for r in required if r not in params.arguments]:
            raise MCPError(code=types.INVALID_PARAMS, message=f"missing argument {missing[0]!r}")
        if params.cursor is None:
            return self.position
        try:
            return int(params.cursor)
        except ValueError:
            raise MCPError(
                code=types.INVALID_PARAMS, message="not a cursor of this server"
            ) from None

    # -- the methods ----------------------------------------------------------------------

    async def list_types(
        self, ctx: ServerRequestContext[Any, Any], params: ListParams
    ) -> dict[str, Any]:
        require(ctx)
        return {
            "events": [
                {"name": name, **spec, "payloadSchema": _OBJECT, "delivery": ["poll", "push"]}
                for name, spec in TYPES.items()
            ]
        }

    async def poll(
        self, ctx: ServerRequestContext[Any, Any], params: SubscribeParams, owner: str
    ) -> dict[str, Any]:
        """The occurrences after the cursor (none, and the position now, without one)."""
        require(ctx)
        fresh = params.cursor is None
        cursor = self._check(params)
        await self._watch(owner, params.name, params.arguments)
        found, truncated = (
            ([], False) if fresh else self._after(cursor, owner, params.name, params.arguments)
        )
        last = found[-1]["cursor"] if found else str(max(cursor, self.position))
        return {"events": found, "cursor": last, "truncated": truncated}

    async def stream(
        self, ctx: ServerRequestContext[Any, Any], params: SubscribeParams, owner: str
    ) -> dict[str, Any]:
        """One subscription, until the client closes it: `active`, then each occurrence, and a
        heartbeat with the cursor reached."""
        require(ctx)
        cursor = self._check(params)
        await self._watch(owner, params.name, params.arguments)
        meta = {"io.modelcontextprotocol/subscriptionId": ctx.request_id}

        async def say(kind: str, body: dict[str, Any]) -> None:
            notice = Notice(method=f"notifications/events/{kind}", params={**body, "_meta": meta})
            await ctx.session.send_notification(notice, related_request_id=ctx.request_id)  # type: ignore[arg-type]

        found, truncated = self._after(cursor, owner, params.name, params.arguments)
        await say("active", {"cursor": str(cursor), "truncated": truncated})
        while True:
            for occurrence in found:
                await say("event", occurrence)
                cursor = int(occurrence["cursor"])
            changed = self._changed
            with anyio.move_on_after(HEARTBEAT_S) as idle:
                await changed.wait()
            cursor = max(cursor, self.position) if idle.cancelled_caught else cursor
            if idle.cancelled_caught:
                await say("heartbeat", {"cursor": str(cursor)})
            found, _ = self._after(cursor, owner, params.name, params.arguments)
