"""One MCP session's connection to the runtime: an `AsyncClient` of caller `agent`, labelled
with the MCP client's name, i.e. one runtime session.

The session is the agent's, not the socket's: it is resumable, so when the connection breaks
(the runtime closed it, or it failed) the runtime keeps the session for a while and a new link
takes it over with the resume token only this bridge holds (`connect(resume=...)`), with its
processes, terminals, tabs and grants as they were. The client pings often enough for the
runtime's idle timeout, so a pause alone does not break it. A deliberate `aclose` ends the
session (`end_session`): what it started is then stopped.

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

#: Tries at resuming a session before a new one is started, and the pause between them.
RESUME_ATTEMPTS = 2
RESUME_RETRY_S = 0.25
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
    def __init__(self, label: str, cwd: str = "") -> None:
        self.label = label
        self.cwd = cwd
        self.welcome: dict[str, Any] = {}
        self.on_tools_changed: Callable[[], None] | None = None
        #: Sees every item of every call as it is queued (the events extension watches).
        self.observer: Callable[[CallHandle, tuple[str, Any]], None] | None = None
        self.broken = False
        self._client: AsyncClient | None = None
        self._calls: dict[str, CallHandle] = {}
        #: Approval requests waiting for this side's answer, by approval ID.
        self._asked: dict[str, asyncio.Future[Answer]] = {}

    @classmethod
    async def connect(
        cls,
        socket_path: str,
        *,
        label: str,
        cwd: str,
        answers_call_approvals: bool,
        resume: RuntimeLink | None = None,
        shares_call_approvals: bool = False,
    ) -> RuntimeLink:
        """`answers_call_approvals`: whether this session can ask its person (the MCP client
        can elicit). When it cannot, the runtime asks its other approvers (a `serve` prompt)
        instead. `shares_call_approvals` (an MCP client with tasks): the runtime asks those at
        the same time, and an approval answered there is withdrawn here.

        `resume`: the broken link whose session this one takes over. When the runtime no
        longer keeps it (it ended, or the runtime restarted), a new session is started and
        `resumed` is False."""
        link = cls(label, cwd)
        link._client = await AsyncClient.connect(
            socket_path,
            caller="agent",
            cwd=cwd,
            label=label,
            on_approval=link._on_call_approval if answers_call_approvals else None,
            on_tools_changed=link._tools_changed,
            approvals_shared=shares_call_approvals,
            on_approval_closed=link._call_approval_closed,
        )
        token = resume.resume_token if resume is not None else None
        try:
            if token is not None:
                link.welcome = await link._resume(token)
            else:
                link.welcome = await link.client.hello(resumable=True)
        except TransportError as exc:
            await link.aclose()
            raise TransportError(
                f"the runtime at {socket_path} does not accept agent sessions ({exc.message}); "
                "is it an older meith?",
                socket_path=socket_path,
            ) from None
        return link

    async def _resume(self, token: str) -> dict[str, Any]:
        """The welcome of the session `token` resumes, else of a new one. Asked twice: the
        runtime detaches the old connection's session only once it has seen it close, which
        can come a moment after this side saw the close."""
        for attempt in range(RESUME_ATTEMPTS):
            try:
                return await self.client.hello(resumable=True, resume_token=token)
            except TransportError:
                if self.client.closed:
                    raise
                if attempt + 1 < RESUME_ATTEMPTS:
                    await asyncio.sleep(RESUME_RETRY_S)
        return await self.client.hello(resumable=True)

    @property
    def client(self) -> AsyncClient:
        assert self._client is not None
        return self._client

    @property
    def resume_token(self) -> str | None:
        value = self.welcome.get("resumeToken")
        return value if isinstance(value, str) else None

    @property
    def resumed(self) -> bool:
        return self.welcome.get("resumed") is True

    @property
    def usable(self) -> bool:
        """Neither a call nor the runtime has broken the connection."""
        return not self.broken and self._client is not None and not self._client.closed

    @property
    def busy(self) -> bool:
        """A call of this session is in flight in the runtime."""
        return bool(self._calls)

    @property
    def session_id(self) -> str | None:
        value = self.welcome.get("sessionId")
        return value if isinstance(value, str) else None

    async def aclose(self, *, end_session: bool = True) -> None:
        """Close the connection; `end_session` (the default) ends the runtime session too, so
        the runtime stops what it started instead of keeping it for a resume."""
        usable = self.usable
        self.broken = True
        if self._client is not None:
            if end_session and usable:
                with contextlib.suppress(TransportError, OSError):
                    await self._client.end_session()
            await self._client.aclose()

    def _tools_changed(self) -> None:
        if self.on_tools_changed is not None:
            self.on_tools_changed()

    async def _on_call_approval(self, request: dict[str, Any]) -> Answer:
        call = self._calls.get(str(request.get("requestId")))
        if call is None or call.done:
            return ("deny", "bridge: the call is no longer waiting")
        answer: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        approval_id = str(request.get("approvalId"))
        self._asked[approval_id] = answer
        self._put(call, ("approval", (request, answer)))
        try:
            return await answer
        finally:
            self._asked.pop(approval_id, None)
            if not answer.done():
                answer.cancel()

    def _call_approval_closed(self, frame: dict[str, Any]) -> None:
        """Answered elsewhere (or no longer waiting): whoever waits here for this side's
        answer learns it is not needed (the runtime ignores a late one)."""
        answer = self._asked.get(str(frame.get("approvalId")))
        if answer is not None and not answer.done():
            answer.set_result(("deny", "withdrawn: answered elsewhere"))

    async def list_tools(self) -> list[dict[str, Any]]:
        try:
            tools = await self.client.list_tools(watch=True)
        except TransportError:
            self.broken = True
            raise
        return [t for t in tools if isinstance(t, dict)]

    async def start_call(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        text_only: bool = False,
        trace: dict[str, str] | None = None,
    ) -> CallHandle:
        """Start a call. The model reads the tool's text: it is asked for beside the content,
        or (`text_only`) in place of it where the tool renders one. `trace`: the client's W3C
        trace context, which the call's span joins."""
        try:
            stream = await self.client.start_stream(
                name, arguments, None, True, text_only, trace=trace
            )
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
                self._put(call, ("event", event))
            self._put(call, ("result", call.stream.result))
        except TransportError as exc:
            self.broken = True
            self._put(call, ("error", exc))
        finally:
            call.done = True
            call.finished.set()
            self._calls.pop(call.request_id, None)
            with contextlib.suppress(Exception):
                await call.stream.__aexit__(None, None, None)

    def _put(self, call: CallHandle, item: tuple[str, Any]) -> None:
        if self.observer is not None:
            with contextlib.suppress(Exception):  # a watcher's fault is never the call's
                self.observer(call, item)
        call.queue.put_nowait(item)

    async def cancel(self, call: CallHandle) -> None:
        if not call.done:
            with contextlib.suppress(TransportError):
                await call.stream.cancel()
