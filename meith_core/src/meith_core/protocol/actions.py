"""What the sans-IO `Connection` hands its adapter: the connection's identity and the
actions the adapter must carry out (send bytes, start a call, answer a listing, ...)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from meith_core.protocol.call_approval import CallApprovalReply
from meith_core.protocol.caller import CallerInfo, CallerKind
from meith_core.protocol.messages import ToolCall


@dataclass(frozen=True, slots=True)
class Identity:
    caller: CallerKind
    label: str | None = None
    #: The connection answers `approval_request` frames.
    answers_call_approvals: bool = False
    #: The session a child's token binds this connection to (its calls are that session's).
    session_id: str | None = None
    #: The local user's console: asked about every session's approval requests.
    console: bool = False
    #: Where that console answers (`clientInfo.consoleUrl`), to tell a waiting caller.
    console_url: str | None = None
    #: The directory the session was opened for (see `CallerInfo.workspace`).
    workspace: str | None = None
    #: With `answers_call_approvals`: the others approvers are asked at the same time.
    shares_call_approvals: bool = False


# -- actions: what the adapter must do --------------------------------------------------


class Send(NamedTuple):
    data: bytes


class StartCall(NamedTuple):
    """Run the call (with a cancellation token of the adapter's: the rules hold only ids)."""

    call: ToolCall
    caller: CallerInfo


class CancelCall(NamedTuple):
    """Cancel the call with this request id (a `cancel_tool_call`, or the connection closed)."""

    request_id: str
    reason: str


class SendTools(NamedTuple):
    names: list[str] | None


class SendSessions(NamedTuple):
    #: Who asked: an agent sees only its own session unless granted every session's.
    viewer: CallerInfo


class IdentityFixed(NamedTuple):
    identity: Identity


class SessionResumed(NamedTuple):
    """The connection took over a detached session: the one it was opened with is dropped."""

    dropped_session_id: str
    session_id: str


class RevokeSession(NamedTuple):
    """End a session's grants (asked by the local user's console `by`, which the audit
    record names)."""

    session_id: str
    by: CallerInfo


class CallApprovalAnswered(NamedTuple):
    approval_id: str
    reply: CallApprovalReply


class RefusedCall(NamedTuple):
    """A `tool_call` frame refused before it became a call (invalid, another protocol version,
    a request id in flight, too many calls, a void token): the adapter has it audited, as the
    pipeline audits the calls it refuses."""

    request_id: str | None
    #: The name the frame asked for, when it named one (cut to 200 characters).
    tool_name: str | None
    caller: CallerInfo
    reason: str


Action = (
    Send
    | StartCall
    | CancelCall
    | SendTools
    | SendSessions
    | IdentityFixed
    | SessionResumed
    | CallApprovalAnswered
    | RefusedCall
    | RevokeSession
)


class ResumedSession(NamedTuple):
    """Who a detached session was, as its resume token's lookup tells the connection rules."""

    session_id: str
    caller: CallerKind
    label: str | None
    workspace: str | None = None


class CallApprovalAsk(NamedTuple):
    """An approval request to send: its id, the frame, and how long to wait for the answer."""

    approval_id: str
    data: bytes
    timeout_s: float


class Refused(ValueError):
    """A frame the connection refuses; the message goes back in an `error` frame."""
