"""The rules of one server connection, without I/O: bytes in, actions out (like h11).

`Connection` decides everything a connection decides — protocol version, message
validity, who the caller is, duplicate and excess in-flight calls, cancel routing, approval
bookkeeping, congestion, idleness — and knows nothing of sockets, tasks or the runtime. The
asyncio adapter (`serve.socket_connection`) feeds it bytes and carries out the actions it
returns.

Identity: the first frame that carries `clientInfo` (a `hello`, a `tool_call`, or a
`list_tools` that names one) fixes the connection's caller kind, label and whether it answers
approval requests. A socket peer may claim `cli`, `agent` or `plugin`; any other claim is
downgraded to `cli`. A later frame that claims a different kind runs as the fixed identity and
records the claim as `claimedCaller` (audited); later labels are ignored. A peer the runtime
itself started (a process or terminal of a tool, found by its parent chain) is never asked to
approve: it would be approving its own calls. A `cli` claim with `console` (the local user's
`meith ui`) answers approval requests for every session and may revoke sessions; a process the
runtime started, or a connection with a child's token, is never a console.

A first claim carrying `sessionToken` (a child of a session, see `policy.child_tokens`) is
that session instead, whatever it claims: its kind, label and session id, never approvals (the
local user's token: what it claims, as the user's processes may, in a session of its own). An
unknown token, or one whose session has ended since, is refused call by call: it never falls
back to an identity of its own choosing. A peer that must present one (a confined child) and
does not (a connection on the children's token-only socket, or any process the runtime started)
is refused the same way.

Sessions that outlive a connection: a `hello` asking `resumable` gets a `resumeToken` in its
`welcome`; a later connection whose first claim is a `hello` presenting it takes that session
over (its id, kind and label; approvals as this connection says) when the runtime still keeps
it detached. `end_session` says the client is done: the session then ends with the connection.
The `welcome` also says the idle timeout, so a client knows how often to `ping`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Final

from pydantic import ValidationError

from meith_core.protocol.actions import (
    Action,
    CancelCall,
    Identity,
    IdentityFixed,
    Refused,
    RefusedCall,
    ResumedSession,
    RevokeSession,
    Send,
    SendSessions,
    SendTools,
    SessionResumed,
    StartCall,
)
from meith_core.protocol.approval_desk import ApprovalDesk
from meith_core.protocol.caller import (
    SOCKET_CALLERS,
    CallerInfo,
    CallerKind,
    ChildBinding,
    sanitize_label,
)
from meith_core.protocol.constants import MAX_FRAME_BYTES, PROTOCOL_VERSION
from meith_core.protocol.frames import PONG, error_frame, frame
from meith_core.protocol.framing import FrameError, NdjsonFramer
from meith_core.protocol.messages import (
    ApprovalResponse,
    CancelToolCall,
    ClientInfo,
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
#: Distinct scope hints (cwd, spaceId, tabId) whose caller identity a connection keeps built.
_MAX_CACHED_CALLERS: Final = 64


def _short_validation(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False, include_input=False, include_context=False)[:3]:
        where = ".".join(str(p) for p in err["loc"]) or "message"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def _normalise(claim: str) -> CallerKind:
    try:
        kind = CallerKind(claim)
    except ValueError:
        return CallerKind.CLI
    return kind if kind in SOCKET_CALLERS else CallerKind.CLI


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
        may_answer_approvals: bool = True,
        resolve_token: Callable[[str], ChildBinding | None] | None = None,
        token_required: bool = False,
        idle_timeout_s: float | None = None,
        resume: Callable[[str], ResumedSession | None] | None = None,
        issue_resume_token: Callable[[str], str | None] | None = None,
    ) -> None:
        self.session_id = session_id
        self._idle_timeout_s = idle_timeout_s
        self._resume = resume
        self._issue_resume_token = issue_resume_token
        #: The client sent `end_session`: its session ends with this connection.
        self.ending = False
        self._resolve_token = resolve_token
        #: The child token this connection presented, checked again before every call ("":
        #: none, but one was required).
        self._token: str | None = None
        self._token_required = token_required
        #: False for a peer the runtime itself started: it may not approve its own calls.
        self._may_answer_approvals = may_answer_approvals
        self._runtime_cwd = runtime_cwd
        self._server_version = server_version
        self._max_in_flight = max_in_flight
        self._framer = NdjsonFramer(max_frame_bytes=max_frame_bytes)
        self._identity: Identity | None = None
        self._callers: dict[tuple[str | None, ...], CallerInfo] = {}
        #: Request ids of this connection's calls that have not finished.
        self._in_flight: set[str] = set()
        #: Approval requests sent to this connection and not yet answered.
        self.approvals = ApprovalDesk(self)
        self._closed = False
        self._partial_since: float | None = None
        self._last_active = now
        self._opened = now
        self._watching = False
        self._congested = False

    # -- state, read-only from outside ---------------------------------------------------

    @property
    def identity(self) -> Identity:
        return self._identity or Identity(CallerKind.CLI)

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
    def pending_approvals(self) -> int:
        return self.approvals.pending

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
            answered = self.approvals.answer(parsed)
            if answered is not None:
                out.append(answered)
        elif isinstance(parsed, ListTools):
            if "clientInfo" in parsed.model_fields_set:
                self._claim(parsed.clientInfo, out)
            self._watching = self._watching or parsed.watch
            out.append(SendTools(parsed.names))
        elif isinstance(parsed, Hello):
            self._hello(parsed, request_id, out)
        elif isinstance(parsed, EndSession):
            self.ending = True
        elif isinstance(parsed, ListSessions):
            refused = self._token_refusal()
            out.append(Send(error_frame(request_id, refused)) if refused else SendSessions())
        elif isinstance(parsed, Ping):
            out.append(Send(PONG))
        elif isinstance(parsed, RevokeSessionMessage):
            if self.identity.console:
                out.append(RevokeSession(parsed.sessionId, self._identity_caller()))
                out.append(SendSessions())
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
        out.append(RefusedCall(request_id, tool_name, self._identity_caller(), reason))

    def _identity_caller(self) -> CallerInfo:
        """Who sent a frame (a refused one, a console's revocation): the connection's identity
        so far, nothing the frame says."""
        ident = self.identity
        return CallerInfo(
            caller=ident.caller,
            session_id=ident.session_id or self.session_id,
            cwd=self._runtime_cwd,
            label=ident.label,
            workspace=ident.workspace,
        )

    def _hello(self, hello: Hello, request_id: str | None, out: list[Action]) -> None:
        resumed = False
        if hello.resumeToken is not None:
            why = self._take_over(hello, out)
            if why:
                out.append(Send(error_frame(request_id, why)))
                return
            resumed = True
        else:
            self._claim(hello.clientInfo, out)
        refused = self._token_refusal()
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
        if (hello.resumable or resumed) and self._issue_resume_token and self._token is None:
            token = self._issue_resume_token(self.session_id)
            if token is not None:
                fields["resumeToken"] = token
        if resumed:
            fields["resumed"] = True
        out.append(Send(frame("welcome", **fields)))

    def _take_over(self, hello: Hello, out: list[Action]) -> str:
        """Resume the detached session `hello.resumeToken` names; "" when done, else why not."""
        if self._identity is not None:
            return "a connection resumes a session only in its first frame"
        if self._token_required or hello.clientInfo.sessionToken is not None:
            return "a process started for a session cannot resume a session"
        found = self._resume(hello.resumeToken or "") if self._resume else None
        if found is None:
            return (
                "resumeToken is not valid: the session ended, is held by another connection, or "
                "was never issued; start a new session"
            )
        out.append(SessionResumed(self.session_id, found.session_id))
        self.session_id = found.session_id
        approvals = hello.clientInfo.approvals and self._may_answer_approvals
        # A resumed session keeps the workspace it was opened for.
        self._identity = Identity(found.caller, found.label, approvals, workspace=found.workspace)
        out.append(IdentityFixed(self._identity))
        return ""

    # -- identity --------------------------------------------------------------------------

    def _claim(self, info: ClientInfo, out: list[Action]) -> str | None:
        """Apply a claim; returns what to record as `claimedCaller` for this frame, if any."""
        claim = info.caller
        ident = self._identity
        if ident is not None:
            # Anything but the fixed kind, spelled as such, is another claim (a different
            # kind, or one that would be downgraded); a frame naming no kind claims nothing.
            if claim == ident.caller.value or "caller" not in info.model_fields_set:
                return None
            return claim
        if info.sessionToken is not None or self._token_required:
            self._token = info.sessionToken or ""
            binding = self._resolve_token(self._token) if self._resolve_token else None
            if binding is None:
                self._identity = Identity(CallerKind.AGENT)
            elif not binding.session_id:
                # The local user's processes claim what any of the user's processes may (an
                # MCP bridge in the user's terminal is an agent), in a session of their own.
                kind = _normalise(claim)
                self._identity = Identity(
                    kind, sanitize_label(info.label), False, "", workspace=self._workspace(info)
                )
            else:
                # A session's process reads within that session's workspace, whatever it says.
                self._identity = Identity(
                    binding.caller,
                    binding.label,
                    False,
                    binding.session_id,
                    workspace=binding.workspace,
                )
            out.append(IdentityFixed(self._identity))
            return None if self._identity.caller.value == claim else claim
        kind = _normalise(claim)
        approvals = info.approvals and self._may_answer_approvals
        # The console answers for others: only the local user, never a process of the runtime.
        console = info.console and self._may_answer_approvals and claim == CallerKind.CLI.value
        self._identity = Identity(
            kind,
            sanitize_label(info.label),
            approvals,
            console=console,
            workspace=self._workspace(info),
        )
        out.append(IdentityFixed(self._identity))
        return None if kind.value == claim else claim

    def _workspace(self, info: ClientInfo) -> str | None:
        """The workspace a session is opened for: the `cwd` of the frame that opens it (the
        MCP bridge's `--cwd`), taken once; None when that frame names none."""
        cwd = info.cwd
        if cwd is None or "\0" in cwd:  # a NUL: no workspace (its calls are refused anyway)
            return None
        return os.path.normpath(os.path.join(self._runtime_cwd, cwd))

    def _token_refusal(self) -> str:
        """Why this connection's calls are refused (its token is not, or no longer, valid)."""
        token = self._token
        if token is None and not self._token_required:
            return ""
        if not token:
            return (
                "this connection comes from a process started for a session (or confined by a "
                "meith runtime): it calls only as that session, with its token "
                "(MEITH_SESSION_TOKEN)"
            )
        binding = self._resolve_token(token) if self._resolve_token else None
        if binding is not None and binding.session_id == self.identity.session_id:
            return ""
        return (
            "sessionToken is not valid: the session that started this process has ended (or "
            "the token was never issued); its calls are refused"
        )

    def _caller(self, info: ClientInfo, claimed: str | None) -> CallerInfo:
        """The call's identity: the connection's, with this frame's scope hints. A client
        sends the same hints call after call, so the (immutable) result is reused."""
        key = (info.cwd, info.spaceId, info.tabId, claimed)
        cached = self._callers.get(key)
        if cached is not None:
            return cached
        cwd = info.cwd
        if cwd is not None:
            if "\0" in cwd:
                raise Refused("clientInfo.cwd contains a NUL byte")
            # Relative hints are taken from the runtime's cwd.
            cwd = os.path.join(self._runtime_cwd, cwd)
        ident = self.identity
        caller = CallerInfo(
            caller=ident.caller,
            # The peer's sessionId is never used; a child's token names its parent's.
            session_id=ident.session_id or self.session_id,
            cwd=cwd or self._runtime_cwd,
            space_id=info.spaceId,
            tab_id=info.tabId,
            claimed_caller=claimed,
            label=ident.label,
            workspace=ident.workspace,
        )
        if len(self._callers) >= _MAX_CACHED_CALLERS:
            self._callers.clear()
        self._callers[key] = caller
        return caller

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
        claimed = self._claim(call.clientInfo, out)
        refused = self._token_refusal()
        if refused:
            self._refuse_call(call, refused, out)
            return
        try:
            caller = self._caller(call.clientInfo, claimed)
        except Refused as exc:
            self._refuse_call(call, str(exc), out)
            return
        self._in_flight.add(rid)
        out.append(StartCall(call, caller))

    def _refuse_call(self, call: ToolCall, message: str, out: list[Action]) -> None:
        out.append(Send(error_frame(call.requestId, message)))
        out.append(RefusedCall(call.requestId, call.toolName, self._identity_caller(), message))

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
            and (self._token_required or self._token is not None)
            and self._token_refusal()
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
        self.approvals.abandon_all()
        return [CancelCall(rid, reason) for rid in self._in_flight]
