"""The asyncio client: many calls in flight on one connection, events by callback or iterator.

```python
async with await AsyncClient.connect() as c:
    result = await c.call("git_status", {"cwd": "."})
    async with c.stream("attach_process_logs", {"cwd": "."}) as events:
        async for event in events: ...
```

An agent bridge connects as `caller="agent"` with a `label`, answers approval requests through
`on_approval` (which returns `"allow_once"`, `"allow_session"` or `"deny"`, optionally with
who answered: `("deny", "user")`), and learns of tool list changes through `on_tools_changed`
after `list_tools(watch=True)`; with `approvals_shared=True` its approval requests go to the
local user's consoles and `serve` prompt at the same time, the first answer wins and the others
are told through `on_approval_closed`. The local user's console (`meith ui`) connects with
`console=True` (and its address, `console_url`, which a call waiting for it tells its
caller): it is asked about every session's approval requests, told through
`on_approval_closed` when one stops waiting, and may `revoke_session`; its own privileged calls
are the local user's actions.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from types import TracebackType
from typing import TYPE_CHECKING, Any

from meith_core.base.home import MeithHome
from meith_core.client._aio_link import (
    KEEPALIVE_S,
    ApprovalClosedHandler,
    ApprovalHandler,
    AsyncLink,
    ToolsChangedHandler,
)
from meith_core.client._core import (
    ConnectError,
    EventCallback,
    TransportError,
    cancel_frame,
    client_info,
    end_session_frame,
    hello_frame,
    list_sessions_frame,
    list_tools_frame,
    locate,
    open_socket,
    revoke_session_frame,
    tool_call_frame,
)

if TYPE_CHECKING:
    from meith_core.protocol.results import ToolResult


class CallStream:
    """Events of one call as an async iterator; `result` is set once it ends."""

    def __init__(self, client: AsyncClient, request_id: str, queue: asyncio.Queue[Any]) -> None:
        self._client = client
        self.request_id = request_id
        self._queue = queue
        self.result: ToolResult | None = None

    def __aiter__(self) -> CallStream:
        return self

    async def __anext__(self) -> dict[str, Any]:
        if self.result is not None:
            raise StopAsyncIteration
        item = await self._queue.get()
        if isinstance(item, BaseException):
            raise item
        kind, payload = item
        if kind == "event":
            return payload  # type: ignore[no-any-return]
        from meith_core.protocol.results import ToolResult

        self.result = ToolResult.model_validate(payload)
        raise StopAsyncIteration

    async def cancel(self) -> None:
        await self._client.cancel(self.request_id)

    async def __aenter__(self) -> CallStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.result is None:
            await self.cancel()
        self._client.forget(self.request_id)


class AsyncClient(AsyncLink):
    """A client of the runtime on asyncio: many calls in flight on one connection."""

    @classmethod
    async def connect(
        cls,
        socket_path: str | None = None,
        *,
        instance: str | None = None,
        home: MeithHome | None = None,
        caller: str = "cli",
        cwd: str | None = None,
        connect_timeout: float = 5.0,
        label: str | None = None,
        on_approval: ApprovalHandler | None = None,
        on_tools_changed: ToolsChangedHandler | None = None,
        keepalive_s: float | None = KEEPALIVE_S,
        console: bool = False,
        on_approval_closed: ApprovalClosedHandler | None = None,
        console_url: str | None = None,
        approvals_shared: bool = False,
    ) -> AsyncClient:
        target = locate(socket_path, instance, home)
        loop = asyncio.get_running_loop()
        # Connect (and check the peer's uid) off the loop; the socket is then handed to asyncio.
        sock: socket.socket = await loop.run_in_executor(
            None, open_socket, target.socket_path, connect_timeout
        )
        sock.setblocking(False)
        reader, writer = await asyncio.open_unix_connection(sock=sock, limit=1 << 20)
        info = client_info(
            caller,
            cwd,
            label=label,
            approvals=on_approval is not None and not console,
            socket_path=target.socket_path,
            console=console,
            console_url=console_url,
            approvals_shared=approvals_shared,
        )
        return cls(
            reader,
            writer,
            target.socket_path,
            info,
            on_approval=on_approval,
            on_tools_changed=on_tools_changed,
            keepalive_s=keepalive_s,
            on_approval_closed=on_approval_closed,
        )

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def hello(
        self, *, resumable: bool = False, resume_token: str | None = None
    ) -> dict[str, Any]:
        """Fix this connection's identity now; returns the `welcome` frame (sessionId, caller,
        label, serverVersion, idleTimeoutS, protocol).

        `resumable`: the runtime keeps the session for a while when this connection closes
        without `end_session`, and the welcome carries the `resumeToken` that takes it over
        from another connection (`resume_token`; a TransportError when it no longer can).
        Pings then come often enough for the runtime's idle timeout."""
        frame = hello_frame(self._info)
        if resumable:
            frame["resumable"] = True
        if resume_token is not None:
            frame["resumeToken"] = resume_token
        welcome = await self._ask("welcome", frame)
        self._keep_alive_within(welcome.get("idleTimeoutS"))
        return welcome

    async def end_session(self) -> None:
        """Say this client is done: its session ends with the connection, not kept to resume."""
        await self._send(end_session_frame())

    async def list_sessions(self) -> list[dict[str, Any]]:
        """The runtime's live sessions: sessionId, caller, label, since, calls, grants."""
        frame = await self._ask("sessions_list", list_sessions_frame())
        sessions = frame.get("sessions")
        return sessions if isinstance(sessions, list) else []

    async def revoke_session(self, session_id: str) -> list[dict[str, Any]]:
        """End a session's grants at once (a console connection only); the sessions after."""
        frame = await self._ask("sessions_list", revoke_session_frame(session_id))
        sessions = frame.get("sessions")
        return sessions if isinstance(sessions, list) else []

    async def list_tools(
        self, names: list[str] | None = None, *, watch: bool = False
    ) -> list[dict[str, Any]]:
        """Tool descriptors; `watch` also subscribes to `tools_changed` (see on_tools_changed)."""
        frame = await self._ask("tools_list", list_tools_frame(self._info, names, watch=watch))
        tools = frame.get("tools")
        return tools if isinstance(tools, list) else []

    def stream(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout_ms: int | None = None,
        with_text: bool = False,
        text_only: bool = False,
    ) -> _StreamStarter:
        return _StreamStarter(self, name, arguments, timeout_ms, with_text, text_only)

    def forget(self, request_id: str) -> None:
        """Stop routing frames of this call (its stream is done with)."""
        self._pending.pop(request_id, None)

    async def start_stream(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        timeout_ms: int | None,
        with_text: bool = False,
        text_only: bool = False,
        *,
        trace: dict[str, str] | None = None,
    ) -> CallStream:
        """Send a call; its events and result arrive through the returned stream. `with_text`:
        the result carries the tool's text for a model too (`text`); `text_only`: a result the
        tool rendered carries only that text, no `content` (for a caller that reads the text);
        `trace`: the W3C trace context (`traceparent`, `tracestate`) the call's span joins."""
        frame = tool_call_frame(
            name,
            arguments,
            request_id=None,
            info=self._info,
            timeout_ms=timeout_ms,
            with_text=with_text,
            text_only=text_only,
            trace=trace,
        )
        queue: asyncio.Queue[Any] = asyncio.Queue()
        self._pending[frame["requestId"]] = queue
        await self._send(frame)
        return CallStream(self, frame["requestId"], queue)

    async def call(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout_ms: int | None = None,
        on_event: EventCallback | None = None,
        with_text: bool = False,
    ) -> ToolResult:
        """Call a tool; a cancelled await sends `cancel_tool_call` for it."""
        stream = await self.start_stream(name, arguments, timeout_ms, with_text)
        try:
            async for event in stream:
                if on_event is not None:
                    on_event(event)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await self.cancel(stream.request_id)
            raise
        finally:
            self._pending.pop(stream.request_id, None)
        assert stream.result is not None
        return stream.result

    async def cancel(self, request_id: str) -> None:
        await self._send(cancel_frame(request_id))


class _StreamStarter:
    """`async with client.stream(...) as events:` sugar."""

    def __init__(
        self,
        client: AsyncClient,
        name: str,
        arguments: dict[str, Any] | None,
        timeout_ms: int | None,
        with_text: bool = False,
        text_only: bool = False,
    ) -> None:
        self._args = (name, arguments, timeout_ms, with_text, text_only)
        self._client = client
        self._stream: CallStream | None = None

    async def __aenter__(self) -> CallStream:
        self._stream = await self._client.start_stream(*self._args)
        return self._stream

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._stream is not None:
            await self._stream.__aexit__(exc_type, exc, tb)

    def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        raise TypeError("use `async with client.stream(...) as events: async for e in events`")


__all__ = [
    "ApprovalHandler",
    "AsyncClient",
    "CallStream",
    "ConnectError",
    "ToolsChangedHandler",
    "TransportError",
]
