"""The socket server: the asyncio adapter around `ServerConnection` (`_runtime.connection`).

Built on asyncio's Protocol/Transport rather than anyio streams, deliberately: the peer's
credentials are checked in `connection_made`, before a single byte is read; frames are decoded
synchronously as bytes arrive; and the transport's write buffer gives an exact, cheap measure
for the per-connection outbound bound (a client that stops reading is disconnected instead of
growing the runtime's memory). The protocol rules live in the sans-IO `ServerConnection`;
this module only moves bytes, runs calls as tasks through `CallPipeline.call`, and waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections import Counter
from typing import Any, Final

import structlog

from meith_core._caller import CallerInfo
from meith_core._events import EventDict
from meith_core._ids import new_session_id
from meith_core._instances import peer_credentials
from meith_core._permissions.service import ApprovalReply, ApprovalRequest
from meith_core._protocol.framing import dumps_bytes
from meith_core._protocol.messages import ToolCall
from meith_core._runtime import frames
from meith_core._runtime.connection import (
    ApprovalAnswered,
    IdentityFixed,
    Send,
    SendSessions,
    SendTools,
    ServerConnection,
    StartCall,
)
from meith_core._runtime.host import Runtime
from meith_core._runtime.socketbind import BoundSocket
from meith_core._version import __version__

_log = structlog.get_logger("meith.server")

#: Bytes queued for one client before it counts as not reading and is disconnected.
MAX_OUTBOUND_BYTES: Final = 16 * 1024 * 1024
#: A frame started but not finished within this many seconds closes the connection.
PARTIAL_FRAME_TIMEOUT_S: Final = 30.0
MAX_CONNECTIONS: Final = 4096
#: Connections one peer process may hold at once (one process cannot take every slot).
MAX_CONNECTIONS_PER_PEER: Final = 256
#: A connection with nothing in flight that sends nothing for this long is closed. Any frame
#: resets it; `{"type":"ping"}` is the cheap one.
IDLE_TIMEOUT_S: Final = 600.0
#: Outbound bytes above which a connection counts as congested for flow-controlled streams
#: (`ToolContext.events_congested`), and below which it flows again. Far below
#: MAX_OUTBOUND_BYTES: a stream that honours it never gets its client disconnected.
FLOW_HIGH_WATER: Final = 1024 * 1024
FLOW_LOW_WATER: Final = 256 * 1024


class Connection(asyncio.Protocol):
    def __init__(self, server: SocketServer) -> None:
        self.server = server
        self.transport: asyncio.Transport | None = None
        self.rules: ServerConnection | None = None
        self.peer_pid = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._approvals: dict[str, asyncio.Future[ApprovalReply]] = {}
        #: Set while the transport's write buffer is below the high-water mark.
        self.writable = asyncio.Event()
        self.writable.set()

    @property
    def session_id(self) -> str:
        return self.rules.session_id if self.rules is not None else ""

    @property
    def congested(self) -> bool:
        return self.rules is not None and self.rules.congested

    @property
    def is_open(self) -> bool:
        return self.rules is not None and not self.rules.closed

    # -- transport callbacks ------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.set_write_buffer_limits(high=FLOW_HIGH_WATER, low=FLOW_LOW_WATER)
        refusal = self.server.admit(transport.get_extra_info("socket"))
        if isinstance(refusal, str):
            _log.warning("connection refused: " + refusal)
            transport.abort()
            return
        self.peer_pid = refusal
        runtime = self.server.runtime
        self.rules = ServerConnection(
            new_session_id("socket"),
            runtime_cwd=runtime.cwd,
            server_version=__version__,
            now=time.monotonic(),
        )
        self.server.connections.add(self)
        self.server.runtime.track_session(self.rules.session_id, self.rules.identity.caller)

    def data_received(self, data: bytes) -> None:
        rules = self.rules
        if rules is None:
            return
        for action in rules.receive_data(data, time.monotonic()):
            if rules.closed:  # an action before this one closed the connection
                return
            if type(action) is StartCall:
                self._start_call(action)
            elif type(action) is Send:
                self.send(action.data)
            else:
                self._act(action)

    def _act(self, action: Any) -> None:
        server = self.server
        if isinstance(action, SendTools):
            self.send(server.tools_list_frame(action.names))
        elif isinstance(action, SendSessions):
            self.send(frames.frame("sessions_list", sessions=server.runtime.list_sessions()))
        elif isinstance(action, IdentityFixed):
            ident = action.identity
            server.runtime.sessions.identify(self.session_id, ident.caller, ident.label)
            if ident.approvals:
                server.runtime.set_session_approver(self.session_id, self._ask_approval)
        elif isinstance(action, ApprovalAnswered):
            fut = self._approvals.get(action.approval_id)
            if fut is not None and not fut.done():
                fut.set_result(action.reply)

    def eof_received(self) -> bool | None:
        if self.rules is not None:
            for action in self.rules.receive_eof():
                self.send(action.data)
        return False  # close our side too

    def pause_writing(self) -> None:
        self.writable.clear()
        if self.rules is not None:
            self.rules.pause_writing()

    def resume_writing(self) -> None:
        self.writable.set()
        if self.rules is not None:
            self.rules.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self.writable.set()  # nobody waits on a closed connection
        rules = self.rules
        if rules is None:
            return
        was_open = not rules.closed
        self._end("client disconnected")
        self.server.forget(self)
        if was_open:
            self.server.session_ended(rules.session_id)

    def _end(self, reason: str) -> None:
        rules = self.rules
        if rules is None:
            return
        rules.close(reason)
        for fut in self._approvals.values():
            if not fut.done():
                fut.set_result(rules.closed_before_answer())

    # -- calls ----------------------------------------------------------------------------

    def _start_call(self, action: StartCall) -> None:
        self.server.runtime.sessions.count_call(self.session_id)
        task = asyncio.get_running_loop().create_task(
            self._run_call(action.call, action.caller, action.token)
        )
        self._tasks.add(task)
        self.server.call_tasks.add(task)
        task.add_done_callback(self._call_done)

    def _call_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self.server.call_tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            _log.error("call task failed", error=repr(task.exception()))

    async def _run_call(self, call: ToolCall, caller: CallerInfo, token: Any) -> None:
        rid = call.requestId
        emit = _CallEvents(self, frames.event_prefix(rid))
        try:
            result = await self.server.runtime.pipeline.call(
                caller,
                call.toolName,
                call.arguments,
                timeout_ms=call.timeoutMs,
                cancel=token,
                emit=emit,
                request_id=rid,
            )
        finally:
            if self.rules is not None:
                self.rules.call_finished(rid, time.monotonic())
        self.send(frames.result_frame(rid, call.toolName, result))

    async def _ask_approval(self, request: ApprovalRequest) -> ApprovalReply | None:
        """The session approver of a connection that said it answers approvals."""
        rules = self.rules
        ask = rules.approval_request(request) if rules is not None else None
        if rules is None or ask is None:
            return None
        fut: asyncio.Future[ApprovalReply] = asyncio.get_running_loop().create_future()
        self._approvals[ask.approval_id] = fut
        try:
            self.send(ask.data)
            return await asyncio.wait_for(fut, ask.timeout_s)
        except TimeoutError:
            return rules.unanswered(ask.timeout_s)
        finally:
            self._approvals.pop(ask.approval_id, None)
            rules.approval_settled(ask.approval_id)

    # -- frames out ---------------------------------------------------------------------

    def send(self, data: bytes) -> None:
        transport = self.transport
        if not self.is_open or transport is None or transport.is_closing():
            return
        if transport.get_write_buffer_size() + len(data) > self.server.max_outbound_bytes:
            _log.warning(
                "client disconnected: it is not reading its output",
                sessionId=self.session_id,
                queuedBytes=transport.get_write_buffer_size(),
            )
            self.abort()
            return
        transport.write(data)

    def close(self, reason: str = "") -> None:
        """Flush what is queued (a last error frame saying `reason`), then close."""
        if reason:
            self.send(frames.error_frame(None, reason))
            self._end(reason)
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    def abort(self) -> None:
        self._end("client disconnected")
        if self.transport is not None:
            self.transport.abort()

    @property
    def buffered(self) -> int:
        return self.transport.get_write_buffer_size() if self.transport is not None else 0


class _CallEvents:
    """The event sink of one call: `tool_event` frames on its connection, flow-controlled
    (see `meith_core._context.FlowControlledSink`)."""

    __slots__ = ("conn", "prefix")

    def __init__(self, conn: Connection, prefix: bytes) -> None:
        self.conn = conn
        self.prefix = prefix

    def __call__(self, event: EventDict) -> None:
        self.conn.send(self.prefix + dumps_bytes(event) + b"}\n")

    @property
    def congested(self) -> bool:
        return self.conn.congested

    async def wait_flowing(self) -> None:
        await self.conn.writable.wait()


class SocketServer:
    def __init__(
        self,
        runtime: Runtime,
        bound: BoundSocket,
        *,
        max_outbound_bytes: int = MAX_OUTBOUND_BYTES,
        partial_frame_timeout_s: float = PARTIAL_FRAME_TIMEOUT_S,
        idle_timeout_s: float | None = IDLE_TIMEOUT_S,
        max_connections_per_peer: int = MAX_CONNECTIONS_PER_PEER,
        watch_interval_s: float = 1.0,
    ) -> None:
        self.runtime = runtime
        self.bound = bound
        self.uid = os.geteuid()
        self.max_outbound_bytes = max_outbound_bytes
        self.partial_frame_timeout_s = partial_frame_timeout_s
        self.idle_timeout_s = idle_timeout_s
        self.max_connections_per_peer = max_connections_per_peer
        self.watch_interval_s = watch_interval_s
        self.connections: set[Connection] = set()
        self._per_peer: Counter[int] = Counter()
        self.call_tasks: set[asyncio.Task[None]] = set()
        self._server: asyncio.AbstractServer | None = None
        self._watchdog: asyncio.Task[None] | None = None
        self._session_tasks: set[asyncio.Task[None]] = set()
        self._tools_frame: tuple[object, bytes] | None = None
        self.started_at = time.time()

    @property
    def socket_path(self) -> str:
        return str(self.bound.path)

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        # `sock=`: asyncio must not create (and so must not unlink) the path itself.
        self._server = await loop.create_unix_server(lambda: Connection(self), sock=self.bound.sock)
        self._watchdog = loop.create_task(self._watch())

    # -- admission --------------------------------------------------------------------------

    def admit(self, sock: Any) -> int | str:
        """The peer's pid when it may connect, else why not."""
        try:
            pid, uid, _gid = peer_credentials(sock)
        except OSError as exc:
            return f"peer credentials unavailable ({exc})"
        if uid != self.uid and uid != 0:
            return f"peer pid {pid} belongs to another user (uid {uid})"
        if len(self.connections) >= MAX_CONNECTIONS:
            return f"too many connections (limit {MAX_CONNECTIONS})"
        if self._per_peer[pid] >= self.max_connections_per_peer:
            return (
                f"peer pid {pid} holds too many connections (limit {self.max_connections_per_peer})"
            )
        self._per_peer[pid] += 1
        return pid

    def forget(self, conn: Connection) -> None:
        if conn in self.connections:
            self.connections.discard(conn)
            self._per_peer[conn.peer_pid] -= 1
            if self._per_peer[conn.peer_pid] <= 0:
                del self._per_peer[conn.peer_pid]

    # -- answers ----------------------------------------------------------------------------

    def tools_list_frame(self, names: list[str] | None = None) -> bytes:
        if names is not None:
            wanted = set(names)
            tools = [t for t in self.runtime.tool_listing() if t["name"] in wanted]
            return frames.tools_list_frame(tools)
        version = self.runtime.catalogue_version()
        if self._tools_frame is None or self._tools_frame[0] != version:
            self._tools_frame = (version, frames.tools_list_frame(self.runtime.tool_listing()))
        return self._tools_frame[1]

    def session_ended(self, session_id: str) -> None:
        task = asyncio.get_running_loop().create_task(self.runtime.close_session(session_id))
        self._session_tasks.add(task)
        task.add_done_callback(self._session_tasks.discard)

    # -- the watchdog: unfinished frames, idle connections, tool list changes -------------

    async def _watch(self) -> None:
        interval = min(self.watch_interval_s, self.partial_frame_timeout_s / 4)
        if self.idle_timeout_s is not None:
            interval = min(interval, self.idle_timeout_s / 4)
        catalogue = self.runtime.catalogue_version()
        while True:
            await asyncio.sleep(interval)
            now = time.monotonic()
            for conn in list(self.connections):
                why = (
                    conn.rules.overdue(now, self.partial_frame_timeout_s, self.idle_timeout_s)
                    if conn.rules
                    else ""
                )
                if why:
                    _log.info("closing connection", reason=why, sessionId=conn.session_id)
                    conn.close(why)
            watchers = [c for c in self.connections if c.rules is not None and c.rules.watching]
            if watchers:
                current = self.runtime.catalogue_version()
                if current != catalogue:
                    catalogue = current
                    for conn in watchers:
                        conn.send(frames.TOOLS_CHANGED)
            else:
                catalogue = self.runtime.catalogue_version()

    def status(self) -> dict[str, Any]:
        return {
            "socketPath": self.socket_path,
            "listening": self._server is not None and self._server.is_serving(),
            "connections": len(self.connections),
            "inFlight": sum(c.rules.in_flight for c in self.connections if c.rules),
        }

    async def shutdown(self, answer_timeout_s: float = 0.6) -> None:
        """Refuse new calls, cancel in-flight ones and let them answer, then close everything."""
        self.runtime.pipeline.begin_shutdown()
        if self._server is not None:
            self._server.close()
        self.runtime.pipeline.cancel_all("runtime shutting down")
        pending = [t for t in self.call_tasks if not t.done()]
        if pending:
            await asyncio.wait(pending, timeout=answer_timeout_s)
        for task in self.call_tasks:
            task.cancel()
        for conn in list(self.connections):
            conn.close()
        if self._watchdog is not None:
            self._watchdog.cancel()
        # Give transports a moment to flush the answers they hold (asyncio signals only the
        # high-water mark, not "drained", so poll briefly).
        deadline = time.monotonic() + 0.2
        while time.monotonic() < deadline and any(c.buffered for c in self.connections):  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        for conn in list(self.connections):
            conn.abort()
        if self._session_tasks:
            with contextlib.suppress(Exception):
                await asyncio.wait(list(self._session_tasks), timeout=0.2)
