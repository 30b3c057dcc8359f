"""Asking a person for a call approval: the `Decision` a gate returns, and asking an approver
while the call may be cancelled (what is asked and answered: `protocol.call_approval`)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from meith_core.base.cancel import CancelToken
from meith_core.protocol.call_approval import ApprovalAnswer, ApprovalRequest, CallApprovalReply


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    reason: str
    #: The directory the allowing grant is confined to, passed on to the tool.
    grant_scope: str | None = None
    #: The network destinations the allowing grant names (`--net`), for confined processes.
    grant_net: tuple[str, ...] = ()
    #: The Unix sockets the allowing grant names (`--socket`), for confined processes.
    grant_sockets: tuple[str, ...] = ()
    #: For denials: the sentence the caller sees, with what to do next.
    message: str = ""
    details: dict[str, object] = field(default_factory=dict)


Approver = Callable[[ApprovalRequest], Awaitable[ApprovalAnswer | CallApprovalReply | None]]


class PromptCancelled(Exception):
    """The call was cancelled while its approval prompt was open."""


async def ask_unless_cancelled(
    approver: Approver, request: ApprovalRequest, cancel: CancelToken | None
) -> tuple[ApprovalAnswer | None, str]:
    """The approver's answer (normalised), racing the call's cancellation."""
    if cancel is None:
        return _answer(await approver(request))
    if cancel.is_set():
        raise PromptCancelled
    asking = asyncio.ensure_future(approver(request))
    waiter = asyncio.ensure_future(cancel.wait())
    try:
        await asyncio.wait({asking, waiter}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        asking.cancel()
        raise
    finally:
        waiter.cancel()
    if not asking.done():
        asking.cancel()
        raise PromptCancelled
    return _answer(asking.result())


def _answer(value: object) -> tuple[ApprovalAnswer | None, str]:
    """Approvers may answer with the enum, its value or an CallApprovalReply; anything else is an
    approver error. Returns the answer and the words saying who gave it."""
    if isinstance(value, CallApprovalReply):
        return _answer(value.answer)[0], f"by {value.answered_by}"
    if value is None or isinstance(value, ApprovalAnswer):
        return value, "at prompt"
    if isinstance(value, str) and value in _ANSWERS:
        return ApprovalAnswer(value), "at prompt"
    expected = sorted(_ANSWERS)
    raise ValueError(f"approver answered {value!r:.80}; expected one of {expected} or None")


_ANSWERS: frozenset[str] = frozenset(a.value for a in ApprovalAnswer)
