"""The rules of one server connection, without I/O: bytes in, actions out (like h11).

`Connection` decides everything a connection decides — protocol version, message
validity, who the caller is (`protocol.identity_rules`), duplicate and excess in-flight calls,
cancel routing, call-approval bookkeeping, congestion, idleness — and knows nothing of sockets,
tasks or the runtime. The asyncio adapter (`serve.socket_connection`) feeds it bytes and
carries out the actions it returns.

Sessions that outlive a connection: a `hello` asking `resumable` gets a `resumeToken` in its
`welcome`; a later connection whose first claim is a `hello` presenting it takes that session
over (see `protocol.identity_rules`). `end_session` says the client is done: the session then
ends with the connection. The `welcome` also says the idle timeout, so a client knows how often
to `ping`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from pydantic import ValidationError

from meith_core.protocol.actions import (
    Action,
    CancelCall,
    Identity,
    Refused,
    RefusedCall,
    ResumedSession,
    RevokeSession,
    Send,
    SendSessions,
    SendTools,
    StartCall,
)
from meith_core.protocol.call_approval_desk import CallApprovalDesk
from meith_core.protocol.caller import ChildBinding
from meith_core.protocol.constants import MAX_FRAME_BYTES, PROTOCOL_VERSION
from meith_core.protocol.frames import PONG, error_frame, frame
from meith_core.protocol.framing import FrameError, NdjsonFramer
from meith_core.protocol.identity_rules import IdentityRules
from meith_core.protocol.messages import (
    ApprovalResponse,
    CancelToolCall,
    EndSession,
    Hello,
    ListSessions,
    ListTools,
    Ping,
    RevokeSessionMessage,
    ToolCall,
    client_message_adapter,
)

MAX_IN_FLIGHT_PER_CONNECTION: Final = 1024


def _short_validation(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False, include_input=False, include_context=False)[:3]:
        where = ".".join(str(p) for p in err["loc"]) or "message"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


class Connection:
    """One connection's protocol state. Every method is synchronous and does no I/O."""

    def __init__(
        self,
        session_id: str,
        *,
        runtime_cwd: str,
        server_version: str,
        now: float = 0.0,
        max_in_flight: int = MAX_IN_FLIGHT_PER_CONNECTION,
        max_frame_bytes: int = MAX_FRAME_BYTES,
        may_answer_call_approvals: bool = True,
        resolve_token: Callable[[str], ChildBinding | None] | None = None,
        token_required: bool = False,
        idle_timeout_s: float | None = None,
        resume: Callable[[str], ResumedSession | None] | None = None,
        issue_resume_token: Callable[[str], str | None] | None = None,
    ) -> None:
        self._who = IdentityRules(
            session_id,
            runtime_cwd=runtime_cwd,
            may_answer_call_approvals=may_answer_call_approvals,
            resolve_token=resolve_token,
            token_required=token_required,
            resume=resume,
        )
        self._idle_timeout_s = idle_timeout_s
        self._issue_resume_token = issue_resume_token
        #: The client sent `end_session`: its session ends with this connection.
        self.ending = False
        self._server_version = server_version
        self._max_in_flight = max_in_flight
        self._framer = NdjsonFramer(max_frame_bytes=max_frame_bytes)
        #: Request ids of this connection's calls that have not finished.
        self._in_flight: set[str] = set()
        #: Approval requests sent to this connection and not yet answered.
        self.call_approvals = CallApprovalDesk(self)
        self._closed = False
        self._partial_since: float | None = None
        self._last_active = now
        self._opened = now
        self._watching = False
        self._congested = False

    # -- state, read-only from outside ---------------------------------------------------

    @property
    def session_id(self) -> str:
        return self._who.session_id

    @property
    def identity(self) -> Identity:
        return self._who.identity

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def watching(self) -> bool:
        """The client asked to be told when the tool list changes."""
        return self._watching

    @property
    def congested(self) -> bool:
        """The outbound buffer is above its high-water mark (flow-controlled streams wait)."""
        return self._congested

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    @property
    def pending_call_approvals(self) -> int:
        return self.call_approvals.pending

    # -- bytes in --------------------------------------------------------------------------

    def receive_data(self, data: bytes, now: float) -> list[Action]:
        actions: list[Action] = []
        if self._closed:
            return actions
        events = self._framer.feed(data)
        if events:
            self._last_active = now
        for event in events:
            if isinstance(event, FrameError):
                actions.append(Send(error_frame(None, f"Malformed frame ignored: {event.reason}")))
            else:
                self._handle(event.message, actions)
        if self._framer.pending_bytes:
            if self._partial_since is None:
                self._partial_since = now
        else:
            self._partial_since = None
        return actions

    def receive_eof(self) -> list[Send]:
        return [
            Send(error_frame(None, f"Malformed frame ignored: {event.reason}"))
            for event in self._framer.close()
            if isinstance(event, FrameError)
        ]

    def _handle(self, msg: dict[str, Any], out: list[Action]) -> None:
        request_id = msg.get("requestId")
        if not (isinstance(request_id, str) and 0 < len(request_id) <= 200):
            request_id = None
        proto = msg.get("protocol")
        if proto is not None and not (type(proto) is int and proto == PROTOCOL_VERSION):
            message = f"Unsupported protocol version {proto!r}; server requires {PROTOCOL_VERSION}"
            out.append(Send(error_frame(request_id, message)))
            self._refused_frame(msg, request_id, message, out)
            return
        try:
            parsed = client_message_adapter.validate_python(msg)
        except ValidationError as exc:
            message = f"Invalid message: {_short_validation(exc)}"
            out.append(Send(error_frame(None, message)))
            self._refused_frame(msg, request_id, message, out)
            return
        if isinstance(parsed, ToolCall):
            self._start_call(parsed, out)
        elif isinstance(parsed, CancelToolCall):
            if parsed.requestId in self._in_flight:  # only this connection's own calls
                out.append(CancelCall(parsed.requestId, "cancelled by the client"))
        elif isinstance(parsed, ApprovalResponse):
            answered = self.call_approvals.answer(parsed)
            if answered is not None:
                out.append(answered)
        elif isinstance(parsed, ListTools):
            if "clientInfo" in parsed.model_fields_set:
                self._who.claim(parsed.clientInfo, out)
            self._watching = self._watching or parsed.watch
            out.append(SendTools(parsed.names))
        elif isinstance(parsed, Hello):
            self._hello(parsed, request_id, out)
        elif isinstance(parsed, EndSession):
            self.ending = True
        elif isinstance(parsed, ListSessions):
            refused = self._who.token_refusal()
            out.append(
                Send(error_frame(request_id, refused))
                if refused
                else SendSessions(self._who.sender())
            )
        elif isinstance(parsed, Ping):
            out.append(Send(PONG))
        elif isinstance(parsed, RevokeSessionMessage):
            if self.identity.console:
                out.append(RevokeSession(parsed.sessionId, self._who.sender()))
                out.append(SendSessions(self._who.sender()))
            else:
                refusal = (
                    "only the local user's console (meith ui) revokes sessions over the socket"
                )
                out.append(Send(error_frame(request_id, refusal)))

    def _refused_frame(
        self, msg: dict[str, Any], request_id: str | None, reason: str, out: list[Action]
    ) -> None:
        """A refused frame that asked to run a tool is audited (other frames run nothing)."""
        if msg.get("type") != "tool_call":
            return
        name = msg.get("toolName")
        tool_name = name[:200] if isinstance(name, str) else None
        out.append(RefusedCall(request_id, tool_name, self._who.sender(), reason))

    def _hello(self, hello: Hello, request_id: str | None, out: list[Action]) -> None:
        resumed = False
        if hello.resumeToken is not None:
            why = self._who.take_over(hello, out)
            if why:
                out.append(Send(error_frame(request_id, why)))
                return
            resumed = True
        else:
            self._who.claim(hello.clientInfo, out)
        refused = self._who.token_refusal()
        if refused:
            out.append(Send(error_frame(request_id, refused)))
            return
        ident = self.identity
        fields: dict[str, Any] = {
            "sessionId": ident.session_id or self.session_id,
            "caller": ident.caller.value,
            "label": ident.label,
            "serverVersion": self._server_version,
        }
        if ident.workspace is not None:
            fields["workspace"] = ident.workspace
        if self._idle_timeout_s is not None:
            fields["idleTimeoutS"] = self._idle_timeout_s
        if (hello.resumable or resumed) and self._issue_resume_token and not self._who.token_bound:
            token = self._issue_resume_token(self.session_id)
            if token is not None:
                fields["resumeToken"] = token
        if resumed:
            fields["resumed"] = True
        out.append(Send(frame("welcome", **fields)))

    # -- calls -----------------------------------------------------------------------------

    def _start_call(self, call: ToolCall, out: list[Action]) -> None:
        rid = call.requestId
        if rid in self._in_flight:
            message = (
                f"requestId {rid!r} is already in flight on this connection; the call was not run"
            )
            self._refuse_call(call, message, out)
            return
        if len(self._in_flight) >= self._max_in_flight:
            message = f"too many calls in flight on this connection (limit {self._max_in_flight})"
            self._refuse_call(call, message, out)
            return
        claimed = self._who.claim(call.clientInfo, out)
        refused = self._who.token_refusal()
        if refused:
            self._refuse_call(call, refused, out)
            return
        try:
            caller = self._who.caller(call.clientInfo, claimed)
        except Refused as exc:
            self._refuse_call(call, str(exc), out)
            return
        self._in_flight.add(rid)
        out.append(StartCall(call, caller))

    def _refuse_call(self, call: ToolCall, message: str, out: list[Action]) -> None:
        out.append(Send(error_frame(call.requestId, message)))
        out.append(RefusedCall(call.requestId, call.toolName, self._who.sender(), message))

    def call_finished(self, request_id: str, now: float) -> None:
        self._in_flight.discard(request_id)
        self._last_active = now

    # -- liveness --------------------------------------------------------------------------

    def pause_writing(self) -> None:
        self._congested = True

    def resume_writing(self) -> None:
        self._congested = False

    def overdue(
        self,
        now: float,
        partial_timeout_s: float,
        idle_timeout_s: float | None,
        token_grace_s: float | None = None,
    ) -> str:
        """Why the connection should be closed now, or "" when it should not. A connection
        that must present a session token and holds no valid one `token_grace_s` after it
        opened is closed: presenting nothing (or a dead session's token) holds no slot."""
        if self._closed:
            return ""
        if (
            token_grace_s is not None
            and now - self._opened > token_grace_s
            and self._who.token_bound
            and self._who.token_refusal()
        ):
            return (
                f"no valid session token presented within {token_grace_s:g}s; closing the "
                "connection"
            )
        since = self._partial_since
        if since is not None and now - since > partial_timeout_s:
            return f"frame not completed within {partial_timeout_s:g}s; closing the connection"
        if (
            idle_timeout_s is not None
            and not self._in_flight
            and since is None
            and now - self._last_active > idle_timeout_s
        ):
            return f"idle for {idle_timeout_s:g}s with nothing in flight; closing the connection"
        return ""

    def close(self, reason: str = "client disconnected") -> list[CancelCall]:
        """No more frames: the approval requests still waiting are forgotten, and the calls
        still in flight are to be cancelled (returned)."""
        self._closed = True
        self.call_approvals.abandon_all()
        return [CancelCall(rid, reason) for rid in self._in_flight]
