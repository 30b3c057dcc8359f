"""What the sans-IO `Connection` hands its adapter: the connection's identity and the
actions the adapter must carry out (send bytes, start a call, answer a listing, ...)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from meith_core.protocol.approval import ApprovalReply
from meith_core.protocol.caller import CallerInfo, CallerKind
from meith_core.protocol.messages import ToolCall


@dataclass(frozen=True, slots=True)
class Identity:
    caller: CallerKind
    label: str | None = None
    #: The connection answers `approval_request` frames.
    approvals: bool = False
    #: The session a child's token binds this connection to (its calls are that session's).
    session_id: str | None = None
    #: The local user's console: asked about every session's approval requests.
    console: bool = False


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
    pass


class IdentityFixed(NamedTuple):
    identity: Identity


class RevokeSession(NamedTuple):
    """End a session's grants (asked by the local user's console)."""

    session_id: str


class ApprovalAnswered(NamedTuple):
    approval_id: str
    reply: ApprovalReply


Action = (
    Send
    | StartCall
    | CancelCall
    | SendTools
    | SendSessions
    | IdentityFixed
    | ApprovalAnswered
    | RevokeSession
)


class ApprovalAsk(NamedTuple):
    """An approval request to send: its id, the frame, and how long to wait for the answer."""

    approval_id: str
    data: bytes
    timeout_s: float


class Refused(ValueError):
    """A frame the connection refuses; the message goes back in an `error` frame."""
