"""Asking a person: what an approver is asked (`ApprovalRequest`), what it may answer, the
`Decision` a gate returns, and asking an approver while the call may be cancelled."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from meith_core._caller import CallerInfo
from meith_core._cancel import CancelToken
from meith_core._capabilities import Capability
from meith_core._envknobs import seconds_from_env

#: How long a calling connection gets to answer an approval request; no answer is a denial.
DEFAULT_APPROVAL_TIMEOUT_S = 60.0
#: Shortens (tests) or lengthens (a slow reviewer) that wait, in seconds.
APPROVAL_TIMEOUT_ENV = "MEITH_APPROVAL_TIMEOUT_S"
_MAX_APPROVAL_TIMEOUT_S = 86400.0


def approval_timeout_s(environ: Mapping[str, str]) -> float:
    """The approval wait `MEITH_APPROVAL_TIMEOUT_S` asks for, else 60 s (up to a day)."""
    return seconds_from_env(
        environ, APPROVAL_TIMEOUT_ENV, DEFAULT_APPROVAL_TIMEOUT_S, _MAX_APPROVAL_TIMEOUT_S
    )


class ApprovalAnswer(StrEnum):
    ALLOW_ONCE = "allow_once"
    ALLOW_SESSION = "allow_session"
    DENY = "deny"


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What an approver (the `meith_approve` hook) is asked about."""

    request_id: str
    caller: CallerInfo
    tool_name: str
    plugin_id: str
    capabilities: tuple[Capability, ...]
    privileged: tuple[Capability, ...]
    cwd: str
    arguments_summary: str  # already redacted
    #: Tells the waiting caller something (a progress event on its call), e.g. where it is
    #: being asked; never raises. None when the call has no event sink.
    notify: Callable[[str], None] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    reason: str
    #: The directory the allowing grant is confined to, passed on to the tool.
    grant_scope: str | None = None
    #: For denials: the sentence the caller sees, with what to do next.
    message: str = ""
    details: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ApprovalReply:
    """An answer together with who gave it; `answered_by` lands in the decision's reason."""

    answer: ApprovalAnswer
    answered_by: str


Approver = Callable[[ApprovalRequest], Awaitable[ApprovalAnswer | ApprovalReply | None]]


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
    """Approvers may answer with the enum, its value or an ApprovalReply; anything else is an
    approver error. Returns the answer and the words saying who gave it."""
    if isinstance(value, ApprovalReply):
        return _answer(value.answer)[0], f"by {value.answered_by}"
    if value is None or isinstance(value, ApprovalAnswer):
        return value, "at prompt"
    if isinstance(value, str) and value in _ANSWERS:
        return ApprovalAnswer(value), "at prompt"
    expected = sorted(_ANSWERS)
    raise ValueError(f"approver answered {value!r:.80}; expected one of {expected} or None")


_ANSWERS: frozenset[str] = frozenset(a.value for a in ApprovalAnswer)
