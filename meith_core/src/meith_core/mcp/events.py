"""Resumable SSE streams over HTTP: the bounded in-memory event store the SDK primes streams
from, each session's events kept apart.

With an event store the SDK starts every POST's SSE stream (handshake era, protocol 2025-11-25
or later) with a priming event (an event ID, empty data and the `retry:` interval), stores every
message it sends, and answers a GET carrying `Last-Event-ID` by replaying what came after that
event on the same stream. The SDK hands one store to every session and names streams by the
client's request IDs (every client numbers them from 0) or `_GET_stream`, and tells the store
nothing of the session: so `ResumableStreams` marks each request with the session it belongs
to (its `Mcp-Session-Id`, or for the request that opens one, the ID the SDK answers with) and
the store keeps that mark with each event. The tasks the SDK starts for a session inherit the
mark of the request that opened it. A replay sends only events of the asking session and
stream; an ID the session cannot resume (unknown, evicted, another session's) is a 400 before
the SDK sees it, where the SDK would answer an empty stream that its client re-requests every
`retry:` until it closes.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from contextvars import ContextVar
from dataclasses import dataclass

from mcp.server.streamable_http import (
    LAST_EVENT_ID_HEADER,
    MCP_SESSION_ID_HEADER,
    EventCallback,
    EventId,
    EventMessage,
    EventStore,
    StreamId,
)
from mcp_types import INVALID_REQUEST, JSONRPCMessage, jsonrpc_message_adapter
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from meith_core.mcp.http import json_rpc_error

#: The store's caps, across all sessions: the oldest events go first once either is passed
#: (the newest is always kept, however large). A replay covers what is still kept.
MAX_EVENTS = 1000
MAX_BYTES = 16 * 1024 * 1024
#: The `retry:` of each priming event: how long a client waits before it reconnects.
RETRY_MS = 1000


class _Mark:
    """The session a request belongs to; for the request that opens a session it is filled in
    when the SDK answers with the new session's ID."""

    __slots__ = ("session",)

    def __init__(self, session: str | None) -> None:
        self.session = session


_NOBODY = _Mark(None)  # stored outside any request: never replayed
_MARK: ContextVar[_Mark] = ContextVar("meith_mcp_session_mark", default=_NOBODY)


@dataclass(slots=True)
class _Event:
    mark: _Mark
    stream: StreamId
    data: str | None  # the message as sent; None for a priming event


class BoundedEventStore(EventStore):
    """In memory, at most `max_events` events and `max_bytes` of messages (as JSON)."""

    def __init__(self, max_events: int = MAX_EVENTS, max_bytes: int = MAX_BYTES) -> None:
        self.max_events = max_events
        self.max_bytes = max_bytes
        self._events: OrderedDict[EventId, _Event] = OrderedDict()
        self._bytes = 0

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        data = (
            None if message is None else message.model_dump_json(by_alias=True, exclude_unset=True)
        )
        event_id = secrets.token_urlsafe(12)
        self._events[event_id] = _Event(_MARK.get(), stream_id, data)
        self._bytes += len(data or "")
        while len(self._events) > 1 and (
            len(self._events) > self.max_events or self._bytes > self.max_bytes
        ):
            _, old = self._events.popitem(last=False)
            self._bytes -= len(old.data or "")
        return event_id

    def resumable(self, session: str, event_id: str) -> bool:
        """Whether `session` may resume after `event_id`: a kept event of its own."""
        event = self._events.get(event_id)
        return event is not None and event.mark.session == session

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        session = _MARK.get().session
        if session is None or not self.resumable(session, last_event_id):
            return None
        stream = self._events[last_event_id].stream
        after: list[tuple[EventId, str]] = []
        seen = False
        for event_id, event in self._events.items():  # collected first: sending awaits
            mine = event.stream == stream and event.mark.session == session
            if seen and mine and event.data is not None:
                after.append((event_id, event.data))
            seen = seen or event_id == last_event_id
        for event_id, data in after:
            message = jsonrpc_message_adapter.validate_json(data, by_name=False)
            await send_callback(EventMessage(message, event_id))
        return stream


class ResumableStreams:
    """Marks each MCP request with its session for the store, and refuses a `Last-Event-ID`
    its session cannot resume."""

    def __init__(self, app: ASGIApp, store: BoundedEventStore) -> None:
        self.app = app
        self.store = store

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)  # the first of repeated headers, as the SDK reads them
        session = headers.get(MCP_SESSION_ID_HEADER)
        last = headers.get(LAST_EVENT_ID_HEADER)
        if (
            scope["method"] == "GET"
            and session
            and last
            and not self.store.resumable(session, last)
        ):
            message = (
                "Bad Request: Last-Event-ID names no event this session can resume (unknown, "
                f"another session's, or older than the last {self.store.max_events} events kept)"
            )
            await json_rpc_error(400, INVALID_REQUEST, message)(scope, receive, send)
            return
        mark = _Mark(session)

        async def answer(message: Message) -> None:
            if mark.session is None and message["type"] == "http.response.start":
                mark.session = Headers(raw=message.get("headers") or []).get(MCP_SESSION_ID_HEADER)
            await send(message)

        reset = _MARK.set(mark)
        try:
            await self.app(scope, receive, answer)
        finally:
            _MARK.reset(reset)
