"""A call approval: what a person (an approver) is asked about one call and may answer.

`ApprovalRequest` and `ApprovalAnswer` are public and keep the bare word, as the
`approval_request` / `approval_response` frames do; shared by the connection rules and the policy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final, Protocol

from meith_core.base.envknobs import seconds_from_env
from meith_core.protocol.caller import CallerInfo
from meith_core.protocol.capabilities import Capability

#: A task's status while the agent's own client is asked (the runtime's progress message says
#: where a person is asked and for how long: `waiting_for`), and what a call says once an
#: approver allowed it: an MCP client's task reads its status from these.
WAITING_FOR_APPROVAL = "waiting for approval by the user"
APPROVED = "approved; running"


class Notify(Protocol):
    """Tells a waiting caller something as a progress event on its call; `awaiting`: the
    message says the call waits for a person (the event is marked `awaiting: approval`)."""

    def __call__(self, message: str, *, awaiting: bool = False) -> None: ...


def awaits_approval(event: object) -> bool:
    """Whether a call's event says the call now waits for a person."""
    return isinstance(event, dict) and event.get("awaiting") == "approval"


#: How long a calling connection gets to answer an approval request; no answer is a denial.
DEFAULT_CALL_APPROVAL_TIMEOUT_S = 60.0
#: Shortens (tests) or lengthens (a slow reviewer) that wait, in seconds.
CALL_APPROVAL_TIMEOUT_ENV = "MEITH_APPROVAL_TIMEOUT_S"
_MAX_CALL_APPROVAL_TIMEOUT_S = 86400.0
#: The most an approver is shown of one call (command and arguments, whole). A call that does
#: not fit is not offered for approval: it is denied, saying to allow it with a grant instead.
MAX_SHOWN_CHARS: Final = 64 * 1024


def call_approval_timeout_s(environ: Mapping[str, str]) -> float:
    """The approval wait `MEITH_APPROVAL_TIMEOUT_S` asks for, else 60 s (up to a day)."""
    return seconds_from_env(
        environ,
        CALL_APPROVAL_TIMEOUT_ENV,
        DEFAULT_CALL_APPROVAL_TIMEOUT_S,
        _MAX_CALL_APPROVAL_TIMEOUT_S,
    )


class ApprovalAnswer(StrEnum):
    ALLOW_ONCE = "allow_once"
    ALLOW_SESSION = "allow_session"
    DENY = "deny"


@dataclass(frozen=True, slots=True)
class ApprovalView:
    """What a person approving a call is shown, rendered once by the core for every channel
    (the `serve` prompt, an MCP elicitation, the console): every argument whole, only the
    secret values masked (by the audit's redaction table), every shell metacharacter left
    visible, control and invisible formatting characters escaped, nothing cut."""

    #: The arguments, one `name: value` per line (a multi-line value indented below its name).
    text: str
    #: The command line the call runs, when it runs one (`shell`, or `command` [+ `args`]).
    command: str | None = None
    #: The arguments as JSON values, masked the same way (a console diffs a write with them).
    arguments: Any = None

    @property
    def chars(self) -> int:
        return len(self.text) + len(self.command or "")

    @property
    def fits(self) -> bool:
        """Whether every channel can show it whole."""
        return self.chars <= MAX_SHOWN_CHARS


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
    #: What the approver is shown of the call (see `ApprovalView`).
    view: ApprovalView
    #: Tells the waiting caller something as a progress event on its call: that it waits for a
    #: person (`waiting_for`: where, how long; marked `awaiting: approval`), then that one
    #: allowed it (`APPROVED`); never raises. None when the call has no event sink.
    notify: Notify | None = field(default=None, compare=False, repr=False)


def waiting_for(where: str, timeout_s: float) -> str:
    """What a call waiting for a person tells its caller: where to answer, and how long it
    waits before no answer is a denial."""
    return f"waiting for approval {where}: denied after {timeout_s:g} s without an answer"


def where_it_runs(capabilities: tuple[Capability, ...] | list[str], cwd: str) -> str:
    """What a person approving a call is told about where it acts, in plain words.

    An approval covers the call without a directory grant, so a process it starts is never
    confined: it runs with the user's full access, and its directory is only where it starts.
    """
    values = {c.value if isinstance(c, Capability) else str(c) for c in capabilities}
    if Capability.STARTS_PROCESS.value in values:
        return (
            "NOT confined: the process runs with your full access (files, network, your "
            f"other programs); it only starts in {cwd}"
        )
    return f"Acts on: {cwd}"


@dataclass(frozen=True, slots=True)
class CallApprovalReply:
    """An answer together with who gave it; `answered_by` lands in the decision's reason."""

    answer: ApprovalAnswer
    answered_by: str
