"""One MCP session's connection to the runtime: an `AsyncClient` of caller `agent`, labelled
with the MCP client's name, i.e. one runtime session.

Each call's events, approval requests and result are funnelled into one queue, so the MCP
handler serving that call sees them in order and can turn an approval request into an
elicitation tied to the very request that caused it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from meith_core.client._core import TransportError
from meith_core.client.aio import AsyncClient, CallStream

#: (decision, who answered), as the runtime's approval_response wants them.
Answer = tuple[str, str]


@dataclass
class CallHandle:
    """A call in flight. `queue` yields `(kind, payload)`: `event` (an event dict), `approval`
    (the request frame and the future its answer goes to), `result` (a ToolResult) or `error`
    (a TransportError)."""

    tool: str
    stream: CallStream
    queue: asyncio.Queue[tuple[str, Any]] = field(default_factory=asyncio.Queue)
    done: bool = False
    #: Set once the runtime has answered the call (its result or a transport error queued).
    finished: asyncio.Event = field(default_factory=asyncio.Event)
    pump: asyncio.Task[None] | None = None

    @property
    def request_id(self) -> str:
        return self.stream.request_id


class RuntimeLink:
    def __init__(self, label: str) -> None:
        self.label = label
        self.welcome: dict[str, Any] = {}
        self.on_tools_changed: Callable[[], None] | None = None
        self.broken = False
        self._client: AsyncClient | None = None
        self._calls: dict[str, CallHandle] = {}

    @classmethod
    async def connect(
        cls, socket_path: str, *, label: str, cwd: str, approvals: bool
    ) -> RuntimeLink:
        """`approvals`: whether this session can ask its person (the MCP client can elicit).
        When it cannot, the runtime asks its other approvers (a `serve` prompt) instead."""
        link = cls(label)
        link._client = await AsyncClient.connect(
            socket_path,
            caller="agent",
            cwd=cwd,
            label=label,
            on_approval=link._on_approval if approvals else None,
            on_tools_changed=link._tools_changed,
        )
        try:
            link.welcome = await link.client.hello()
        except TransportError as exc:
            await link.aclose()
            raise TransportError(
                f"the runtime at {socket_path} does not accept agent sessions ({exc.message}); "
                "is it an older meith?",
                socket_path=socket_path,
            ) from None
        return link

    @property
    def client(self) -> AsyncClient:
        assert self._client is not None
        return self._client

    @property
    def busy(self) -> bool:
        """A call of this session is in flight in the runtime."""
        return bool(self._calls)

    @property
    def session_id(self) -> str | None:
        value = self.welcome.get("sessionId")
        return value if isinstance(value, str) else None

    async def aclose(self) -> None:
        self.broken = True
        if self._client is not None:
            await self._client.aclose()

    def _tools_changed(self) -> None:
        if self.on_tools_changed is not None:
            self.on_tools_changed()

    async def _on_approval(self, request: dict[str, Any]) -> Answer:
        call = self._calls.get(str(request.get("requestId")))
        if call is None or call.done:
            return ("deny", "bridge: the call is no longer waiting")
        answer: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        call.queue.put_nowait(("approval", (request, answer)))
        try:
            return await answer
        finally:
            if not answer.done():
                answer.cancel()

    async def list_tools(self) -> list[dict[str, Any]]:
        try:
            tools = await self.client.list_tools(watch=True)
        except TransportError:
            self.broken = True
            raise
        return [t for t in tools if isinstance(t, dict)]

    async def start_call(self, name: str, arguments: dict[str, Any]) -> CallHandle:
        try:
            stream = await self.client.stream(name, arguments).__aenter__()
        except TransportError:
            self.broken = True
            raise
        call = CallHandle(name, stream)
        self._calls[call.request_id] = call
        call.pump = asyncio.get_running_loop().create_task(self._pump(call))
        return call

    async def _pump(self, call: CallHandle) -> None:
        try:
            async for event in call.stream:
                call.queue.put_nowait(("event", event))
            call.queue.put_nowait(("result", call.stream.result))
        except TransportError as exc:
            self.broken = True
            call.queue.put_nowait(("error", exc))
        finally:
            call.done = True
            call.finished.set()
            self._calls.pop(call.request_id, None)
            with contextlib.suppress(Exception):
                await call.stream.__aexit__(None, None, None)

    async def cancel(self, call: CallHandle) -> None:
        if not call.done:
            with contextlib.suppress(TransportError):
                await call.stream.cancel()
