"""The console's connection to the runtime: a `cli` client (the local user) that says it is the
console, so the runtime asks it about every session's approval requests; and the hub that
fans what happens out to the open pages (server-sent events)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any, Final

import structlog

from meith_core.client import AsyncClient, TransportError

_log = structlog.get_logger("meith.ui")

#: Events a page that stops reading may fall behind by before it is dropped (it reconnects).
_QUEUE_BOUND: Final = 1000
#: Seconds between attempts to reach a runtime that is not (or no longer) there.
_RETRY_S: Final = 1.0
#: What the console says it is; lands in the audit reason of every answer it gives.
CONSOLE_LABEL: Final = "meith ui"


class Hub:
    """Every open page's event queue; a page too slow to keep up is dropped, not waited for."""

    def __init__(self) -> None:
        self._queues: set[asyncio.Queue[dict[str, Any] | None]] = set()

    def subscribe(self) -> asyncio.Queue[dict[str, Any] | None]:
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue(_QUEUE_BOUND)
        self._queues.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[dict[str, Any] | None]) -> None:
        self._queues.discard(queue)

    def publish(self, event: dict[str, Any]) -> None:
        for queue in list(self._queues):
            try:
                queue.put_nowait(event)
            except asyncio.QueueFull:
                self._queues.discard(queue)
                with contextlib.suppress(asyncio.QueueEmpty):
                    queue.get_nowait()
                queue.put_nowait(None)  # tells the page's stream to end


@dataclass
class Pending:
    """An approval request shown on the pages, and the future its answer goes to."""

    request: dict[str, Any]
    answer: asyncio.Future[tuple[str, str]]
    shown_at: float = field(default_factory=time.time)


class ConsoleLink:
    def __init__(self, hub: Hub, socket_path: str | None = None, url: str | None = None) -> None:
        self.hub = hub
        self.socket_path = socket_path
        #: The console's address (never its secret), told to callers waiting for it.
        self.url = url
        self.client: AsyncClient | None = None
        self.welcome: dict[str, Any] = {}
        self.pending: dict[str, Pending] = {}
        self.error = ""
        self._task: asyncio.Task[None] | None = None

    @property
    def connected(self) -> bool:
        return self.client is not None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._keep_connected())

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        await self._drop()

    async def _keep_connected(self) -> None:
        while True:
            try:
                client = await AsyncClient.connect(
                    self.socket_path,
                    caller="cli",
                    label=CONSOLE_LABEL,
                    console=True,
                    on_approval=self._on_call_approval,
                    on_approval_closed=self._on_closed,
                    console_url=self.url,
                )
                self.welcome = await client.hello()
            except (TransportError, OSError) as exc:
                self._set_error(getattr(exc, "message", str(exc)))
                await asyncio.sleep(_RETRY_S)
                continue
            self.client, self.error = client, ""
            self.hub.publish({"type": "runtime", "connected": True, "welcome": self.welcome})
            while True:  # a ping a second notices a runtime that went away
                await asyncio.sleep(_RETRY_S)
                try:
                    sessions = await client.list_sessions()
                    self.hub.publish({"type": "sessions", "sessions": sessions})
                except TransportError as exc:
                    self._set_error(exc.message)
                    break
            await self._drop()

    def _set_error(self, message: str) -> None:
        if message != self.error:
            self.error = message
            self.hub.publish({"type": "runtime", "connected": False, "error": message})

    async def _drop(self) -> None:
        client, self.client = self.client, None
        for approval_id in list(self.pending):
            self._close(approval_id, "the console lost the runtime")
        if client is not None:
            await client.aclose()

    # -- approvals ----------------------------------------------------------------------

    async def _on_call_approval(self, request: dict[str, Any]) -> tuple[str, str]:
        approval_id = str(request.get("approvalId"))
        fut: asyncio.Future[tuple[str, str]] = asyncio.get_running_loop().create_future()
        self.pending[approval_id] = Pending(request, fut)
        self.hub.publish({"type": "approval", "request": request})
        try:
            return await fut
        finally:
            self.pending.pop(approval_id, None)

    def _on_closed(self, frame: dict[str, Any]) -> None:
        self._close(str(frame.get("approvalId")), str(frame.get("reason") or ""))

    def _close(self, approval_id: str, reason: str) -> None:
        pending = self.pending.pop(approval_id, None)
        if pending is not None and not pending.answer.done():
            pending.answer.cancel()
        self.hub.publish({"type": "approval_closed", "approvalId": approval_id, "reason": reason})

    def answer(self, approval_id: str, decision: str, by: str) -> bool:
        """The person's answer to a request still waiting; False when it waits no longer."""
        pending = self.pending.pop(approval_id, None)
        if pending is None or pending.answer.done():
            return False
        pending.answer.set_result((decision, by))
        self.hub.publish({"type": "approval_closed", "approvalId": approval_id, "reason": decision})
        return True

    # -- calls as the local user --------------------------------------------------------

    def require(self) -> AsyncClient:
        if self.client is None:
            raise TransportError(self.error or "not connected to a runtime")
        return self.client
