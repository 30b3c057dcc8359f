"""One asyncio connection's frames: sent, routed to their requests or handlers, kept alive."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from meith_core.call.tasks import TaskSet
from meith_core.client._core import (
    TransportError,
    approval_response_frame,
    error_from_frame,
    ping_frame,
)
from meith_core.protocol.framing import Frame, NdjsonFramer, encode_frame

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


class AsyncLink:
    """The frames of one connection; `AsyncClient` adds the requests."""

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

    @property
    def closed(self) -> bool:
        """The connection is gone (closed by either side); every request now fails."""
        return self._closed is not None

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
            self._spawn(self._answer_call_approval(frame))
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

    async def _answer_call_approval(self, request: dict[str, Any]) -> None:
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

    async def _send(self, frame: dict[str, Any]) -> None:
        if self._closed is not None:
            raise self._closed
        self._writer.write(encode_frame(frame))
        await self._writer.drain()

    def _keep_alive_within(self, idle_timeout_s: object) -> None:
        """Ping often enough for the runtime's idle timeout (a third of it, when shorter)."""
        if self._keepalive_s and isinstance(idle_timeout_s, int | float) and idle_timeout_s > 0:
            wanted = min(self._keepalive_s, idle_timeout_s / 3)
            if wanted < self._keepalive_s and self._closed is None:
                self._keepalive_s = wanted
                if self._keepalive_task is not None:
                    self._keepalive_task.cancel()
                self._keepalive_task = asyncio.get_running_loop().create_task(
                    self._keepalive(wanted)
                )


async def _awaited(value: Awaitable[Any]) -> None:
    await value
