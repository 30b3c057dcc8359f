"""The socket server: NDJSON connections in, pipeline calls, frames out.

Built on asyncio's Protocol/Transport rather than anyio streams, deliberately: the peer's
credentials are checked in `connection_made`, before a single byte is read; frames are decoded
synchronously as bytes arrive; and the transport's write buffer gives an exact, cheap measure
for the per-connection outbound bound (a client that stops reading is disconnected instead of
growing the runtime's memory). Calls themselves run as tasks through `CallPipeline.call`.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any, Final

import structlog
from pydantic import ValidationError

from meith_core._caller import SOCKET_CALLERS, CallerInfo, CallerKind
from meith_core._cancel import CancelToken
from meith_core._errors import ErrorCode
from meith_core._events import EventDict
from meith_core._ids import new_session_id
from meith_core._instances import peer_credentials
from meith_core._protocol.constants import MAX_FRAME_BYTES, PROTOCOL_VERSION
from meith_core._protocol.framing import FrameError, NdjsonFramer, dumps_bytes
from meith_core._protocol.messages import (
    CancelToolCall,
    ClientInfo,
    ListTools,
    ToolCall,
    client_message_adapter,
)
from meith_core._results import ToolResult, error_result
from meith_core._runtime.host import Runtime
from meith_core._runtime.socketbind import BoundSocket
from meith_core._tasks import TaskSet

_log = structlog.get_logger("meith.server")

#: Bytes queued for one client before it counts as not reading and is disconnected.
MAX_OUTBOUND_BYTES: Final = 16 * 1024 * 1024
#: A frame started but not finished within this many seconds closes the connection.
PARTIAL_FRAME_TIMEOUT_S: Final = 30.0
MAX_IN_FLIGHT_PER_CONNECTION: Final = 1024
MAX_CONNECTIONS: Final = 4096
_PROTO: Final = f',"protocol":{PROTOCOL_VERSION}'.encode()
#: Outbound bytes above which a connection counts as congested for flow-controlled streams
#: (`ToolContext.events_congested`), and below which it flows again. Far below
#: MAX_OUTBOUND_BYTES: a stream that honours it never gets its client disconnected.
FLOW_HIGH_WATER: Final = 1024 * 1024
FLOW_LOW_WATER: Final = 256 * 1024


def _error_frame(
    request_id: str | None, message: str, code: ErrorCode = ErrorCode.PROTOCOL_ERROR
) -> bytes:
    frame: dict[str, Any] = {"type": "error", "protocol": PROTOCOL_VERSION}
    if request_id is not None:
        frame["requestId"] = request_id
    frame["code"] = code.value
    frame["message"] = message
    return dumps_bytes(frame) + b"\n"


def _short_validation(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False, include_input=False, include_context=False)[:3]:
        where = ".".join(str(p) for p in err["loc"]) or "message"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


class Connection(asyncio.Protocol):
    def __init__(self, server: SocketServer) -> None:
        self.server = server
        self.transport: asyncio.Transport | None = None
        self.framer = NdjsonFramer()
        self.session_id = ""
        self.peer_pid = 0
        self.closed = False
        self.in_flight: dict[str, CancelToken] = {}
        self.partial_since: float | None = None
        #: Set while the transport's write buffer is below the high-water mark.
        self.writable = asyncio.Event()
        self.writable.set()

    @property
    def is_open(self) -> bool:
        return not self.closed

    # -- transport callbacks ------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.set_write_buffer_limits(high=FLOW_HIGH_WATER, low=FLOW_LOW_WATER)
        sock = transport.get_extra_info("socket")
        try:
            pid, uid, _gid = peer_credentials(sock)
        except OSError as exc:
            _log.warning("connection refused: peer credentials unavailable", error=str(exc))
            self._drop()
            return
        if uid != self.server.uid and uid != 0:
            _log.warning(
                "connection refused: peer belongs to another user", peer_uid=uid, peer_pid=pid
            )
            self._drop()
            return
        if len(self.server.connections) >= MAX_CONNECTIONS:
            _log.warning("connection refused: too many connections", limit=MAX_CONNECTIONS)
            self._drop()
            return
        self.peer_pid = pid
        self.session_id = new_session_id("socket")
        self.server.connections.add(self)
        self.server.runtime.track_session(self.session_id, CallerKind.CLI)

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        for event in self.framer.feed(data):
            if not self.is_open:  # a frame before this one may have closed the connection
                return
            self._handle(event)
        if self.framer.pending_bytes:
            if self.partial_since is None:
                self.partial_since = time.monotonic()
        else:
            self.partial_since = None

    def eof_received(self) -> bool | None:
        for event in self.framer.close():
            if isinstance(event, FrameError):
                self._send(_error_frame(None, f"Malformed frame ignored: {event.reason}"))
        return False  # close our side too

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

    def connection_lost(self, exc: Exception | None) -> None:
        was_open = not self.closed
        self.closed = True
        self.writable.set()  # nobody waits on a closed connection
        for token in list(self.in_flight.values()):
            token.cancel("client disconnected")
        if self in self.server.connections:
            self.server.connections.discard(self)
        if was_open and self.session_id:
            self.server.session_ended(self.session_id)

    # -- frames in ----------------------------------------------------------------------

    def _handle(self, event: Any) -> None:
        if isinstance(event, FrameError):
            self._send(_error_frame(None, f"Malformed frame ignored: {event.reason}"))
            return
        msg: dict[str, Any] = event.message
        request_id = msg.get("requestId")
        if not (isinstance(request_id, str) and 0 < len(request_id) <= 200):
            request_id = None
        proto = msg.get("protocol")
        if proto is not None and not (type(proto) is int and proto == PROTOCOL_VERSION):
            self._send(
                _error_frame(
                    request_id,
                    f"Unsupported protocol version {proto!r}; server requires {PROTOCOL_VERSION}",
                )
            )
            return
        try:
            parsed = client_message_adapter.validate_python(msg)
        except ValidationError as exc:
            self._send(_error_frame(None, f"Invalid message: {_short_validation(exc)}"))
            return
        if isinstance(parsed, ToolCall):
            self._start_call(parsed)
        elif isinstance(parsed, CancelToolCall):
            token = self.in_flight.get(parsed.requestId)
            if token is not None:  # only this connection's own calls; unknown ids are ignored
                token.cancel("cancelled by the client")
        elif isinstance(parsed, ListTools):
            self._send(self.server.tools_list_frame(parsed.names))

    def _caller(self, info: ClientInfo) -> CallerInfo | str:
        claimed: str | None = None
        try:
            kind = CallerKind(info.caller)
        except ValueError:
            kind = CallerKind.CLI
            claimed = info.caller
        if kind not in SOCKET_CALLERS:
            claimed = kind.value
            kind = CallerKind.CLI
        if claimed is not None:
            _log.warning(
                "caller claim downgraded to cli", claimed=claimed[:64], sessionId=self.session_id
            )
        cwd = info.cwd
        if cwd is not None:
            if "\0" in cwd:
                return "clientInfo.cwd contains a NUL byte"
            cwd = os.path.join(
                self.server.runtime.cwd, cwd
            )  # relative hints are taken from the runtime's cwd
        return CallerInfo(
            caller=kind,
            session_id=self.session_id,  # the peer's sessionId is never used
            cwd=cwd or self.server.runtime.cwd,
            space_id=info.spaceId,
            tab_id=info.tabId,
            claimed_caller=claimed,
        )

    def _start_call(self, call: ToolCall) -> None:
        rid = call.requestId
        if rid in self.in_flight:
            self._send(
                _error_frame(
                    rid,
                    f"requestId {rid!r} is already in flight on this connection; the call was not run",
                )
            )
            return
        if len(self.in_flight) >= MAX_IN_FLIGHT_PER_CONNECTION:
            self._send(
                _error_frame(
                    rid,
                    f"too many calls in flight on this connection (limit {MAX_IN_FLIGHT_PER_CONNECTION})",
                )
            )
            return
        caller = self._caller(call.clientInfo)
        if isinstance(caller, str):
            self._send(_error_frame(rid, caller))
            return
        token = CancelToken()
        self.in_flight[rid] = token
        self.server.call_tasks.spawn(self._run_call(call, caller, token))

    async def _run_call(self, call: ToolCall, caller: CallerInfo, token: CancelToken) -> None:
        rid = call.requestId
        prefix = (
            b'{"type":"tool_event"' + _PROTO + b',"requestId":' + dumps_bytes(rid) + b',"event":'
        )
        emit = _CallEvents(self, prefix)
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
            self.in_flight.pop(rid, None)
        self._send(self._result_frame(rid, call.toolName, result))

    @staticmethod
    def _result_frame(rid: str, tool: str, result: ToolResult) -> bytes:
        body = result._encoded if result._encoded is not None else dumps_bytes(result.to_wire())
        head = (
            b'{"type":"tool_result"' + _PROTO + b',"requestId":' + dumps_bytes(rid) + b',"result":'
        )
        if len(head) + len(body) + 2 > MAX_FRAME_BYTES:
            too_big = error_result(
                ErrorCode.TOOL_FAILED,
                f'The result of "{tool}" is {len(body)} bytes, more than a frame may carry '
                f"({MAX_FRAME_BYTES}); narrow the request (e.g. a path or a limit)",
            )
            body = dumps_bytes(too_big.to_wire())
        return head + body + b"}\n"

    # -- frames out ---------------------------------------------------------------------

    def _send(self, data: bytes) -> None:
        transport = self.transport
        if self.closed or transport is None or transport.is_closing():
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

    def send_raw(self, data: bytes) -> None:
        self._send(data)

    def close(self) -> None:
        """Flush what is queued, then close."""
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    def abort(self) -> None:
        self.closed = True
        for token in list(self.in_flight.values()):
            token.cancel("client disconnected")
        if self.transport is not None:
            self.transport.abort()

    def _drop(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()


class _CallEvents:
    """The event sink of one call: `tool_event` frames on its connection, flow-controlled
    (see `meith_core._context.FlowControlledSink`)."""

    __slots__ = ("conn", "prefix")

    def __init__(self, conn: Connection, prefix: bytes) -> None:
        self.conn = conn
        self.prefix = prefix

    def __call__(self, event: EventDict) -> None:
        self.conn._send(self.prefix + dumps_bytes(event) + b"}\n")

    @property
    def congested(self) -> bool:
        return not self.conn.writable.is_set()

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
    ) -> None:
        self.runtime = runtime
        self.bound = bound
        self.uid = os.geteuid()
        self.max_outbound_bytes = max_outbound_bytes
        self.partial_frame_timeout_s = partial_frame_timeout_s
        self.connections: set[Connection] = set()
        self.call_tasks = TaskSet("calls")
        self._server: asyncio.AbstractServer | None = None
        self._watchdog: asyncio.Task[None] | None = None
        self._session_tasks = TaskSet("session clean-up")
        self._tools_frame: tuple[int, bytes] | None = None
        self.started_at = time.time()

    @property
    def socket_path(self) -> str:
        return str(self.bound.path)

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        # `sock=`: asyncio must not create (and so must not unlink) the path itself.
        self._server = await loop.create_unix_server(lambda: Connection(self), sock=self.bound.sock)
        self._watchdog = loop.create_task(self._watch_partial_frames())

    def tools_list_frame(self, names: list[str] | None = None) -> bytes:
        tools = self.runtime.catalogue.describe()
        if names is not None:
            wanted = set(names)
            subset = [t for t in tools if t["name"] in wanted]
            frame = {"type": "tools_list", "protocol": PROTOCOL_VERSION, "tools": subset}
            return dumps_bytes(frame) + b"\n"
        if self._tools_frame is None or self._tools_frame[0] != id(tools):
            frame = {"type": "tools_list", "protocol": PROTOCOL_VERSION, "tools": tools}
            self._tools_frame = (id(tools), dumps_bytes(frame) + b"\n")
        return self._tools_frame[1]

    def session_ended(self, session_id: str) -> None:
        self._session_tasks.spawn(self.runtime.close_session(session_id))

    async def _watch_partial_frames(self) -> None:
        interval = min(1.0, self.partial_frame_timeout_s / 4)
        while True:
            await asyncio.sleep(interval)
            now = time.monotonic()
            for conn in list(self.connections):
                since = conn.partial_since
                if since is not None and now - since > self.partial_frame_timeout_s:
                    _log.warning(
                        "closing connection: frame not completed in time", sessionId=conn.session_id
                    )
                    conn.send_raw(
                        _error_frame(
                            None,
                            f"frame not completed within {self.partial_frame_timeout_s:g}s; closing the connection",
                        )
                    )
                    conn.closed = True
                    conn.close()

    def status(self) -> dict[str, Any]:
        return {
            "socketPath": self.socket_path,
            "listening": self._server is not None and self._server.is_serving(),
            "connections": len(self.connections),
            "inFlight": sum(len(c.in_flight) for c in self.connections),
        }

    async def shutdown(self, answer_timeout_s: float = 0.6) -> None:
        """Refuse new calls, cancel in-flight ones and let them answer, then close everything."""
        self.runtime.pipeline.begin_shutdown()
        if self._server is not None:
            self._server.close()
        self.runtime.pipeline.cancel_all("runtime shutting down")
        await self.call_tasks.wait(answer_timeout_s)
        self.call_tasks.cancel()
        for conn in list(self.connections):
            conn.close()
        if self._watchdog is not None:
            self._watchdog.cancel()
        # Give transports a moment to flush the answers they hold (asyncio signals only the
        # high-water mark, not "drained", so poll briefly).
        deadline = time.monotonic() + 0.2
        while time.monotonic() < deadline and any(  # noqa: ASYNC110
            c.transport is not None and c.transport.get_write_buffer_size()
            for c in self.connections
        ):
            await asyncio.sleep(0.01)
        for conn in list(self.connections):
            conn.abort()
        await self._session_tasks.wait(0.2)
