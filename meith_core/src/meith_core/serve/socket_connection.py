"""One socket connection: the asyncio Protocol around the sans-IO `protocol.connection.Connection`.

It has the server check the peer before reading a byte, feeds bytes to the rules, carries out
the actions they return (start a call task, send a frame, answer with the tool or session
list, resolve an approval), and bounds what it queues for a client that stops reading.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any, Final

import structlog

from meith_core._version import __version__
from meith_core.base.cancel import CancelToken
from meith_core.base.ids import new_session_id
from meith_core.protocol import frames
from meith_core.protocol.actions import (
    CallApprovalAnswered,
    CancelCall,
    IdentityFixed,
    RefusedCall,
    RevokeSession,
    Send,
    SendSessions,
    SendTools,
    SessionResumed,
    StartCall,
)
from meith_core.protocol.call_approval import ApprovalRequest, CallApprovalReply
from meith_core.protocol.caller import CallerInfo
from meith_core.protocol.connection import Connection
from meith_core.protocol.events import EventDict
from meith_core.protocol.framing import dumps_bytes
from meith_core.protocol.messages import ToolCall
from meith_core.serve.admission import Refusal
from meith_core.serve.capacity import Slot

if TYPE_CHECKING:
    from meith_core.serve.socket_server import SocketServer

_log = structlog.get_logger("meith.server")

#: Outbound bytes above which a connection counts as congested for flow-controlled streams
#: (`ToolContext.events_congested`), and below which it flows again. Far below the server's
#: outbound bound: a stream that honours it never gets its client disconnected.
FLOW_HIGH_WATER: Final = 1024 * 1024
FLOW_LOW_WATER: Final = 256 * 1024


class SocketConnection(asyncio.Protocol):
    def __init__(self, server: SocketServer, *, token_only: bool = False) -> None:
        self.server = server
        #: Accepted on the child socket: the peer is a session's token, or nobody.
        self.token_only = token_only
        self.transport: asyncio.Transport | None = None
        #: The connection's protocol rules (sans-IO), made when the peer is admitted.
        self.rules: Connection | None = None
        #: The cancellation token of each call in flight, by request id.
        self._tokens: dict[str, CancelToken] = {}
        self.peer_pid = 0
        #: Its place in the server's connection counts, while it holds one.
        self.slot: Slot | None = None
        self._call_approvals: dict[str, asyncio.Future[CallApprovalReply]] = {}
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
        admitted = self.server.admit(transport.get_extra_info("socket"))
        if isinstance(admitted, Refusal):
            _log.warning("connection refused", reason=admitted.reason)
            if admitted.tell:
                transport.write(frames.error_frame(None, f"connection refused: {admitted.reason}"))
                transport.close()
            else:
                transport.abort()
            return
        self.peer_pid = admitted.pid
        self.slot = admitted.slot
        runtime = self.server.runtime
        self.rules = Connection(
            new_session_id("socket"),
            runtime_cwd=runtime.cwd,
            server_version=__version__,
            now=time.monotonic(),
            # A process a tool started must not answer its own approval requests, and calls
            # only as its session, with its token (`SocketServer.admit`).
            may_answer_call_approvals=not admitted.descendant,
            resolve_token=runtime.child_tokens.resolve,
            token_required=self.token_only or admitted.descendant,
            idle_timeout_s=self.server.idle_timeout_s,
            resume=runtime.resume_session,
            issue_resume_token=runtime.sessions.issue_resume_token,
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
            sessions = server.runtime.list_sessions(action.viewer)
            self.send(frames.frame("sessions_list", sessions=sessions))
        elif isinstance(action, SessionResumed):
            server.runtime.sessions.end(action.dropped_session_id)  # opened here, never used
            _log.info("session resumed", sessionId=action.session_id)
        elif isinstance(action, IdentityFixed):
            ident = action.identity
            if ident.session_id:
                # A child's token binds it to a session: that session's slots are bounded.
                over = server.bind_session(self, ident.session_id)
                if over:
                    self.close(over)
                    return
            server.runtime.sessions.identify(
                self.session_id, ident.caller, ident.label, ident.workspace
            )
            if ident.console:
                server.runtime.set_console_approver(
                    self.session_id, self._ask_call_approval, ident.console_url
                )
            elif ident.answers_call_approvals:
                server.runtime.set_session_approver(
                    self.session_id, self._ask_call_approval, shared=ident.shares_call_approvals
                )
        elif isinstance(action, RevokeSession):
            _log.info("session revoked by the console", sessionId=action.session_id)
            server.runtime.revoke_session(action.session_id, action.by)
        elif isinstance(action, CancelCall):
            self._cancel(action)
        elif isinstance(action, RefusedCall):
            server.runtime.pipeline.record_refused(
                action.caller, action.request_id, action.tool_name, action.reason
            )
        elif isinstance(action, CallApprovalAnswered):
            fut = self._call_approvals.get(action.approval_id)
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
        self._end("client disconnected")
        self.server.forget(self)
        # Whoever closed it (the client, or this side: idle, not reading), the connection's
        # session ends now, or waits to be resumed.
        self.server.session_ended(rules.session_id, ending=rules.ending)

    def _end(self, reason: str) -> None:
        rules = self.rules
        if rules is None:
            return
        for cancel in rules.close(reason):
            self._cancel(cancel)
        for fut in self._call_approvals.values():
            if not fut.done():
                fut.set_result(rules.call_approvals.closed_before_answer())

    # -- calls ----------------------------------------------------------------------------

    def _start_call(self, action: StartCall) -> None:
        self.server.runtime.sessions.count_call(self.session_id)
        token = self._tokens[action.call.requestId] = CancelToken()
        self.server.call_tasks.spawn(self._run_call(action.call, action.caller, token))

    def _cancel(self, action: CancelCall) -> None:
        token = self._tokens.get(action.request_id)
        if token is not None:
            token.cancel(action.reason)

    async def _run_call(self, call: ToolCall, caller: CallerInfo, token: CancelToken) -> None:
        rid = call.requestId
        emit = _CallEvents(self, rid)
        try:
            result = await self.server.runtime.pipeline.call(
                caller,
                call.toolName,
                call.arguments,
                timeout_ms=call.timeoutMs,
                cancel=token,
                emit=emit,
                request_id=rid,
                render=call.withText or call.textOnly,
                text_only=call.textOnly,
                trace=call.traceContext.model_dump(exclude_none=True)
                if call.traceContext
                else None,
            )
        finally:
            self._tokens.pop(rid, None)
            if self.rules is not None:
                self.rules.call_finished(rid, time.monotonic())
        self.send(frames.result_frame(rid, call.toolName, result, self._narrowing(call.toolName)))

    def _narrowing(self, tool: str) -> Any:
        """Asked only for a result too large to send: the tool's arguments that ask for less."""

        def names() -> list[str]:
            registered = self.server.runtime.catalogue.get(tool)
            return registered.definition.narrowing_arguments if registered is not None else []

        return names

    async def _ask_call_approval(self, request: ApprovalRequest) -> CallApprovalReply | None:
        """The session approver of a connection that said it answers approvals."""
        rules = self.rules
        ask = rules.call_approvals.ask(request) if rules is not None else None
        if rules is None or ask is None:
            return None
        fut: asyncio.Future[CallApprovalReply] = asyncio.get_running_loop().create_future()
        self._call_approvals[ask.approval_id] = fut
        try:
            self.send(ask.data)
            return await asyncio.wait_for(fut, ask.timeout_s)
        except TimeoutError:
            return rules.call_approvals.unanswered(ask.timeout_s)
        finally:
            self._call_approvals.pop(ask.approval_id, None)
            rules.call_approvals.settled(ask.approval_id)
            ident = rules.identity
            if (ident.console or ident.shares_call_approvals) and not (
                fut.done() and not fut.cancelled()
            ):
                # Answered elsewhere, timed out or the call went away: the console's card (or
                # the sharing connection's question) goes.
                self.send(rules.call_approvals.closed_frame(ask, request, "no longer waiting"))

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
    (see `meith_core.call.context.FlowControlledSink`)."""

    __slots__ = ("conn", "prefix", "request_id")

    def __init__(self, conn: SocketConnection, request_id: str) -> None:
        self.conn = conn
        self.request_id = request_id
        self.prefix: bytes | None = None  # built at the first event: most calls send none

    def __call__(self, event: EventDict) -> None:
        if self.prefix is None:
            self.prefix = frames.event_prefix(self.request_id)
        self.conn.send(self.prefix + dumps_bytes(event) + b"}\n")

    @property
    def congested(self) -> bool:
        return self.conn.congested

    async def wait_flowing(self) -> None:
        await self.conn.writable.wait()
