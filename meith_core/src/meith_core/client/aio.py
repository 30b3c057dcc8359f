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
after `list_tools(watch=True)`. The local user's console (`meith ui`) connects with
`console=True`: it is asked about every session's approval requests, told through
`on_approval_closed` when one stops waiting, and may `revoke_session`.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import socket
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from types import TracebackType
from typing import TYPE_CHECKING, Any

from meith_core.base.home import MeithHome
from meith_core.call.tasks import TaskSet
from meith_core.client._core import (
    ConnectError,
    EventCallback,
    TransportError,
    approval_response_frame,
    cancel_frame,
    client_info,
    end_session_frame,
    error_from_frame,
    hello_frame,
    list_sessions_frame,
    list_tools_frame,
    locate,
    open_socket,
    ping_frame,
    revoke_session_frame,
    tool_call_frame,
)
from meith_core.protocol.framing import Frame, NdjsonFramer, encode_frame

if TYPE_CHECKING:
    from meith_core.protocol.results import ToolResult

_END = object()

#: Answers one `approval_request` frame: a decision, or (decision, who answered).
ApprovalHandler = Callable[[dict[str, Any]], Awaitable[str | tuple[str, str]]]
#: Told that the tool list changed (after `list_tools(watch=True)`); may be async.
ToolsChangedHandler = Callable[[], Awaitable[None] | None]
#: Told (with the `approval_closed` frame) that an approval request stopped waiting.
ApprovalClosedHandler = Callable[[dict[str, Any]], None]
#: Seconds between `ping` frames: keeps an idle connection clear of the runtime's idle
#: timeout (10 minutes by default), so a client that waits for a person is never cut off.
KEEPALIVE_S = 60.0
#: Answers that come back in the order their requests were sent (no requestId).
_ORDERED = frozenset({"tools_list", "sessions_list", "welcome"})


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


class AsyncClient:
    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        socket_path: str,
        info: dict[str, Any],
        *,
        on_approval: ApprovalHandler | None = None,
        on_tools_changed: ToolsChangedHandler | None = None,
        keepalive_s: float | None = KEEPALIVE_S,
        on_approval_closed: ApprovalClosedHandler | None = None,
    ) -> None:
        self.socket_path = socket_path
        self._reader = reader
        self._writer = writer
        self._info = info
        self._pending: dict[str, asyncio.Queue[Any]] = {}
        self._ordered: deque[tuple[str, asyncio.Future[Any]]] = deque()
        self.on_approval = on_approval
        self.on_tools_changed = on_tools_changed
        self.on_approval_closed = on_approval_closed
        self._handlers = TaskSet("client handlers")
        self._reader_task = asyncio.get_running_loop().create_task(self._read_loop())
        self._closed: TransportError | None = None
        self._keepalive_s = keepalive_s
        self._keepalive_task: asyncio.Task[None] | None = None
        if keepalive_s:
            self._keepalive_task = asyncio.get_running_loop().create_task(
                self._keepalive(keepalive_s)
            )

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

    @property
    def closed(self) -> bool:
        """The connection is gone (closed by either side); every request now fails."""
        return self._closed is not None

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._keepalive_task is not None:
            self._keepalive_task.cancel()
        self._handlers.cancel()
        self._reader_task.cancel()
        with contextlib.suppress(BaseException):
            await self._reader_task
        self._writer.close()
        with contextlib.suppress(Exception):
            await self._writer.wait_closed()
        self._fail_all(TransportError("Client closed", socket_path=self.socket_path))

    async def _read_loop(self) -> None:
        framer = NdjsonFramer(strict=False)  # the runtime's uid was verified
        try:
            while True:
                data = await self._reader.read(1 << 16)
                if not data:
                    break
                for event in framer.feed(data):
                    if isinstance(event, Frame):
                        self._route(event.message)
        except (OSError, asyncio.IncompleteReadError):
            pass
        self._fail_all(TransportError("Connection closed by runtime", socket_path=self.socket_path))

    def _route(self, frame: dict[str, Any]) -> None:
        kind = frame.get("type")
        if kind in _ORDERED:
            if self._ordered:
                _expected, fut = self._ordered.popleft()
                if not fut.done():
                    fut.set_result(frame)
            return
        if kind == "approval_request":
            self._spawn(self._answer_approval(frame))
            return
        if kind == "approval_closed":
            if self.on_approval_closed is not None:
                self.on_approval_closed(frame)
            return
        if kind == "tools_changed":
            if self.on_tools_changed is not None:
                value = self.on_tools_changed()
                if inspect.isawaitable(value):
                    self._spawn(_awaited(value))
            return
        rid = frame.get("requestId")
        queue = self._pending.get(rid) if isinstance(rid, str) else None
        if queue is None:
            if kind == "error" and rid is None and self._ordered:
                _expected, fut = self._ordered.popleft()
                if not fut.done():
                    fut.set_exception(error_from_frame(frame, self.socket_path))
            return
        if kind == "tool_event" and isinstance(frame.get("event"), dict):
            queue.put_nowait(("event", frame["event"]))
        elif kind == "tool_result" and isinstance(frame.get("result"), dict):
            queue.put_nowait(("result", frame["result"]))
        elif kind == "error":
            queue.put_nowait(error_from_frame(frame, self.socket_path))

    def _fail_all(self, error: TransportError) -> None:
        self._closed = self._closed or error
        for queue in self._pending.values():
            queue.put_nowait(error)
        for _kind, fut in self._ordered:
            if not fut.done():
                fut.set_exception(error)
        self._ordered.clear()

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        self._handlers.spawn(coro)

    async def _keepalive(self, interval_s: float) -> None:
        while self._closed is None:
            await asyncio.sleep(interval_s)
            with contextlib.suppress(TransportError, OSError):
                await self._send(ping_frame())

    async def _answer_approval(self, request: dict[str, Any]) -> None:
        approval_id = request.get("approvalId")
        if not isinstance(approval_id, str):
            return
        decision, by = "deny", "client without an approval handler"
        if self.on_approval is not None:
            try:
                answer = await self.on_approval(request)
                decision, by = answer if isinstance(answer, tuple) else (answer, "client")
            except Exception as exc:  # a failing handler is a denial, never an open gate
                decision, by = "deny", f"approval handler failed: {type(exc).__name__}"
        if decision not in ("allow_once", "allow_session", "deny"):
            decision, by = "deny", f"approval handler answered {decision!r:.40}"
        with contextlib.suppress(TransportError):
            await self._send(approval_response_frame(approval_id, decision, by))

    async def _ask(self, kind: str, frame: dict[str, Any]) -> dict[str, Any]:
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._ordered.append((kind, fut))
        await self._send(frame)
        return await fut

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
        idle = welcome.get("idleTimeoutS")
        if self._keepalive_s and isinstance(idle, int | float) and idle > 0:
            wanted = min(self._keepalive_s, idle / 3)
            if wanted < self._keepalive_s and self._closed is None:
                self._keepalive_s = wanted
                if self._keepalive_task is not None:
                    self._keepalive_task.cancel()
                self._keepalive_task = asyncio.get_running_loop().create_task(
                    self._keepalive(wanted)
                )
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

    async def _send(self, frame: dict[str, Any]) -> None:
        if self._closed is not None:
            raise self._closed
        self._writer.write(encode_frame(frame))
        await self._writer.drain()

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
    ) -> CallStream:
        """Send a call; its events and result arrive through the returned stream. `with_text`:
        the result carries the tool's text for a model too (`text`); `text_only`: a result the
        tool rendered carries only that text, no `content` (for a caller that reads the text)."""
        frame = tool_call_frame(
            name,
            arguments,
            request_id=None,
            info=self._info,
            timeout_ms=timeout_ms,
            with_text=with_text,
            text_only=text_only,
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


async def _awaited(value: Awaitable[Any]) -> None:
    await value


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
