"""The call approvals one connection is asked for, without I/O, and what an answer means.

A connection that said it answers approvals (`clientInfo.approvals`) is asked about its own
calls, the local user's console (`clientInfo.console`) about every session's: `ask` builds the
`approval_request` frame and remembers which call it is for; an
`approval_response` naming a request still waiting becomes the decision (with who answered,
as the peer says); one that names anything else — unknown, already answered, timed out — is
ignored. Part of `Connection` (`protocol.connection`), whose identity it reads.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any, Final

from meith_core.base.ids import new_id
from meith_core.protocol.actions import CallApprovalAnswered, CallApprovalAsk
from meith_core.protocol.call_approval import (
    ApprovalAnswer,
    ApprovalRequest,
    CallApprovalReply,
    call_approval_timeout_s,
    where_it_runs,
)
from meith_core.protocol.caller import sanitize_label
from meith_core.protocol.frames import frame
from meith_core.protocol.messages import ApprovalResponse

if TYPE_CHECKING:
    from meith_core.protocol.connection import Connection

#: How long a connection gets to answer an approval request; no answer is a denial. 60 s
#: unless `MEITH_APPROVAL_TIMEOUT_S` says otherwise (read once, when the runtime starts).
CALL_APPROVAL_TIMEOUT_S: float = call_approval_timeout_s(os.environ)
#: Longest `answeredBy` kept (it lands in the audit record's reason).
MAX_ANSWERED_BY_CHARS: Final = 80


class CallApprovalDesk:
    __slots__ = ("_conn", "_waiting")

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._waiting: dict[str, str] = {}  # approval id -> request id of the call

    @property
    def pending(self) -> int:
        return len(self._waiting)

    def ask(self, request: ApprovalRequest) -> CallApprovalAsk | None:
        """Bookkeep an approval request for one of this connection's calls; None when this
        connection cannot answer (closed, or it did not say it answers approvals)."""
        ident = self._conn.identity
        if self._conn.closed or not (ident.answers_call_approvals or ident.console):
            return None
        approval_id = new_id("ap")
        self._waiting[approval_id] = request.request_id
        timeout_s = CALL_APPROVAL_TIMEOUT_S
        # A console is asked about others' calls: it is told whose, the session included.
        whose: dict[str, Any] = (
            {
                "caller": request.caller.caller.value,
                "label": request.caller.label,
                "sessionId": request.caller.session_id,
            }
            if ident.console
            else {"caller": ident.caller.value, "label": ident.label}
        )
        data = frame(
            "approval_request",
            approvalId=approval_id,
            requestId=request.request_id,
            toolName=request.tool_name,
            plugin=request.plugin_id,
            capabilities=[c.value for c in request.capabilities],
            cwd=request.cwd,
            runs=where_it_runs(request.capabilities, request.cwd),
            # Shown whole, secrets masked (`ApprovalView`); `arguments` as JSON values, so
            # a console can show a write's content against the file it replaces.
            command=request.view.command,
            shown=request.view.text,
            arguments=request.view.arguments,
            **whose,
            timeoutMs=round(timeout_s * 1000),
            # The wall clock, not a monotonic one: a page opened later counts down what is left.
            askedAt=time.time_ns() // 1_000_000,
        )
        return CallApprovalAsk(approval_id, data, timeout_s)

    def settled(self, approval_id: str) -> None:
        """The request was answered, timed out or abandoned: a later answer is ignored."""
        self._waiting.pop(approval_id, None)

    def unanswered(self, timeout_s: float) -> CallApprovalReply:
        return CallApprovalReply(
            ApprovalAnswer.DENY, f"{self._who()}: no answer within {timeout_s:g}s"
        )

    def closed_before_answer(self) -> CallApprovalReply:
        return CallApprovalReply(ApprovalAnswer.DENY, f"{self._who()}: closed before answering")

    def answer(self, msg: ApprovalResponse) -> CallApprovalAnswered | None:
        """The decision an `approval_response` carries, or None when it answers nothing that
        is waiting."""
        if self._waiting.pop(msg.approvalId, None) is None:
            return None  # unknown, already answered or timed out: ignored
        # Who answered is the peer's word, so the reason says who reported it: "denied by the
        # user at the MCP client, who declined (reported by the calling agent connection 'x')"
        # reads as the person's answer, not as the connection's.
        by = (sanitize_label(msg.answeredBy) or "")[:MAX_ANSWERED_BY_CHARS]
        words = f"{by} (reported by {self._who()})" if by else f"{self._who()} (it named no one)"
        reply = CallApprovalReply(ApprovalAnswer(msg.decision), words)
        return CallApprovalAnswered(msg.approvalId, reply)

    def abandon_all(self) -> list[str]:
        """The connection closed: the ids still waiting, forgotten."""
        pending, self._waiting = list(self._waiting), {}
        return pending

    def closed_frame(self, ask: CallApprovalAsk, request: ApprovalRequest, reason: str) -> bytes:
        """Tells a console that a request it shows waits no longer (answered elsewhere, timed
        out, or the call went away)."""
        return frame(
            "approval_closed",
            approvalId=ask.approval_id,
            requestId=request.request_id,
            reason=reason,
        )

    def _who(self) -> str:
        ident = self._conn.identity
        if ident.console:
            return "the local user's console (meith ui)"
        label = f" {ident.label!r}" if ident.label else ""
        return f"the calling {ident.caller.value} connection{label}"
