"""One MCP session's socket connection to the runtime: one runtime session of caller `agent`.

It speaks the agent extensions of the socket protocol (hello/welcome, watched tool lists,
approval requests to the caller's own connection, session listing) on top of the frame
helpers the Python clients share.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from meith_core._protocol.constants import PROTOCOL_VERSION
from meith_core._protocol.framing import Frame, NdjsonFramer, encode_frame
from meith_core.client._core import (
    TransportError,
    cancel_frame,
    error_from_frame,
    open_socket,
    tool_call_frame,
)

#: How long to wait for the runtime's answer to `hello` / `list_sessions`.
REPLY_TIMEOUT_S = 10.0


@dataclass
class CallHandle:
    """A call in flight: its events, approval requests and final result arrive on `queue`
    as `(kind, payload)` with kind `event`, `approval`, `result` or `error`."""

    request_id: str
    tool: str
    queue: asyncio.Queue[tuple[str, Any]] = field(default_factory=asyncio.Queue)
    done: bool = False


class RuntimeLink:
    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        socket_path: str,
        info: dict[str, Any],
    ) -> None:
        self.socket_path = socket_path
        self.info = info
        self.welcome: dict[str, Any] = {}
        self.on_tools_changed: Callable[[], None] | None = None
        self._reader = reader
        self._writer = writer
        self._calls: dict[str, CallHandle] = {}
        # Replies without a request id, answered in order per frame type.
        self._waiters: dict[str, list[asyncio.Future[dict[str, Any]]]] = {}
        self._closed: TransportError | None = None
        self._task = asyncio.get_running_loop().create_task(self._read_loop())

    @classmethod
    async def connect(
        cls, socket_path: str, *, label: str, cwd: str, connect_timeout: float = 5.0
    ) -> RuntimeLink:
        loop = asyncio.get_running_loop()
        sock: socket.socket = await loop.run_in_executor(
            None, open_socket, socket_path, connect_timeout
        )
        sock.setblocking(False)
        reader, writer = await asyncio.open_unix_connection(sock=sock, limit=1 << 20)
        info = {"caller": "agent", "label": label, "approvals": True, "cwd": cwd}
        link = cls(reader, writer, socket_path, info)
        await link._hello()
        return link

    @property
    def closed(self) -> bool:
        return self._closed is not None

    @property
    def session_id(self) -> str | None:
        value = self.welcome.get("sessionId")
        return value if isinstance(value, str) else None

    async def aclose(self) -> None:
        self._task.cancel()
        with contextlib.suppress(BaseException):
            await self._task
        self._writer.close()
        with contextlib.suppress(Exception):
            await self._writer.wait_closed()
        self._fail_all(TransportError("bridge closed", socket_path=self.socket_path))

    # -- frames in ----------------------------------------------------------------------

    async def _read_loop(self) -> None:
        framer = NdjsonFramer(strict=False)  # the runtime's uid was verified at connect
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
        self._fail_all(
            TransportError("the runtime closed the connection", socket_path=self.socket_path)
        )

    def _route(self, frame: dict[str, Any]) -> None:
        kind = frame.get("type")
        if kind == "tools_changed":
            if self.on_tools_changed is not None:
                self.on_tools_changed()
            return
        if kind in ("welcome", "tools_list", "sessions_list"):
            self._resolve(str(kind), frame)
            return
        rid = frame.get("requestId")
        call = self._calls.get(rid) if isinstance(rid, str) else None
        if call is None:
            if kind == "approval_request":
                # Not a call of ours (or already over): refuse rather than leave it hanging.
                self._send_nowait(_approval_response(frame.get("approvalId"), "deny", "bridge"))
            elif kind == "error" and rid is None:
                self._fail_first(error_from_frame(frame, self.socket_path))
            return
        if kind == "tool_event" and isinstance(frame.get("event"), dict):
            call.queue.put_nowait(("event", frame["event"]))
        elif kind == "approval_request":
            call.queue.put_nowait(("approval", frame))
        elif kind == "tool_result" and isinstance(frame.get("result"), dict):
            call.done = True
            call.queue.put_nowait(("result", frame["result"]))
        elif kind == "error":
            call.done = True
            call.queue.put_nowait(("error", error_from_frame(frame, self.socket_path)))

    def _resolve(self, kind: str, frame: dict[str, Any]) -> None:
        waiters = self._waiters.get(kind) or []
        while waiters:
            fut = waiters.pop(0)
            if not fut.done():
                fut.set_result(frame)
                return

    def _fail_first(self, error: TransportError) -> None:
        for waiters in self._waiters.values():
            while waiters:
                fut = waiters.pop(0)
                if not fut.done():
                    fut.set_exception(error)
                    return

    def _fail_all(self, error: TransportError) -> None:
        self._closed = self._closed or error
        for call in self._calls.values():
            if not call.done:
                call.done = True
                call.queue.put_nowait(("error", error))
        for waiters in self._waiters.values():
            for fut in waiters:
                if not fut.done():
                    fut.set_exception(error)
            waiters.clear()

    # -- frames out ---------------------------------------------------------------------

    def _send_nowait(self, frame: dict[str, Any]) -> None:
        if self._closed is None and not self._writer.is_closing():
            self._writer.write(encode_frame(frame))

    async def _send(self, frame: dict[str, Any]) -> None:
        if self._closed is not None:
            raise self._closed
        self._writer.write(encode_frame(frame))
        if self._writer.transport.get_write_buffer_size():
            await self._writer.drain()  # only when the runtime is not keeping up

    async def _ask(self, reply: str, frame: dict[str, Any]) -> dict[str, Any]:
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(reply, []).append(fut)
        await self._send(frame)
        return await asyncio.wait_for(fut, REPLY_TIMEOUT_S)

    async def _hello(self) -> None:
        frame = {"type": "hello", "protocol": PROTOCOL_VERSION, "clientInfo": self.info}
        try:
            self.welcome = await self._ask("welcome", frame)
        except TransportError as exc:
            if self._closed is not None:
                raise
            # A runtime without the agent extensions: calls still work, as this peer's caller.
            self.welcome = {"error": exc.message}

    async def list_tools(self, *, watch: bool = True) -> list[dict[str, Any]]:
        frame: dict[str, Any] = {
            "type": "list_tools",
            "protocol": PROTOCOL_VERSION,
            "clientInfo": self.info,
        }
        if watch:
            frame["watch"] = True
        reply = await self._ask("tools_list", frame)
        tools = reply.get("tools")
        return [t for t in tools if isinstance(t, dict)] if isinstance(tools, list) else []

    async def list_sessions(self) -> list[dict[str, Any]]:
        reply = await self._ask(
            "sessions_list", {"type": "list_sessions", "protocol": PROTOCOL_VERSION}
        )
        sessions = reply.get("sessions")
        return [s for s in sessions if isinstance(s, dict)] if isinstance(sessions, list) else []

    async def start_call(
        self, name: str, arguments: dict[str, Any] | None, *, timeout_ms: int | None = None
    ) -> CallHandle:
        frame = tool_call_frame(
            name, arguments, request_id=None, info=self.info, timeout_ms=timeout_ms
        )
        call = CallHandle(frame["requestId"], name)
        self._calls[call.request_id] = call
        try:
            await self._send(frame)
        except BaseException:
            self._calls.pop(call.request_id, None)
            raise
        return call

    def forget(self, call: CallHandle) -> None:
        self._calls.pop(call.request_id, None)

    async def cancel(self, call: CallHandle) -> None:
        if not call.done and self._closed is None:
            await self._send(cancel_frame(call.request_id))

    async def answer_approval(self, approval_id: str, decision: str, answered_by: str) -> None:
        await self._send(_approval_response(approval_id, decision, answered_by))


def _approval_response(approval_id: Any, decision: str, answered_by: str) -> dict[str, Any]:
    return {
        "type": "approval_response",
        "protocol": PROTOCOL_VERSION,
        "approvalId": approval_id,
        "decision": decision,
        "answeredBy": answered_by[:200],
    }
