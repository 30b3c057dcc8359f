"""CallRecord: one tool call as it moves through the pipeline."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from meith_core.base.cancel import CancelToken
from meith_core.call.catalogue import RegisteredTool
from meith_core.call.context import EventSink
from meith_core.policy.asking import Decision
from meith_core.policy.request import AuthRequest, CallTarget
from meith_core.policy.service import acting_target
from meith_core.protocol.call_approval import ApprovalView, Notify
from meith_core.protocol.caller import CallerInfo
from meith_core.protocol.capabilities import privileged_of

#: The target of a call no gate looks at (no privileged capability): not derived, it costs
#: syscalls.
_UNEXAMINED = CallTarget("undeclared", None, "nothing a gate looks at")


@dataclass(slots=True)
class CallRecord:
    """What was asked, by whom, and (as the pipeline gets there) which tool and what decision.

    The audit entry is built from this record and the result, whatever step the call reached.
    """

    request_id: str
    caller: CallerInfo
    name: str
    arguments: Any
    #: The caller's working directory, else the runtime's.
    cwd: str
    #: `time.perf_counter()` when the call arrived.
    started: float
    timeout_ms: int | None = None
    cancel: CancelToken | None = None
    emit: EventSink | None = None
    #: Whether the result carries the tool's rendered `text` (see `Pipeline.call`).
    render: bool = True
    #: The wire result leaves out `content` when the tool rendered `text` (see `Pipeline.call`).
    text_only: bool = False
    #: The caller's W3C trace context (`traceparent`, `tracestate`), when it sent one.
    trace: dict[str, str] | None = None
    #: Set once the name is found in the catalogue.
    tool: RegisteredTool | None = None
    #: Set once the permission service has decided.
    decision: Decision | None = None

    def auth_request(
        self,
        tool: RegisteredTool,
        args: object,
        approval_view: Callable[[], ApprovalView],
        notify: Notify | None,
    ) -> AuthRequest:
        """The one request the permission service decides, built from this record and the
        validated arguments (the only place one is built)."""
        defn = tool.definition
        privileged = privileged_of(defn.capabilities)
        return AuthRequest(
            request_id=self.request_id,
            caller=self.caller,
            tool=defn.name,
            plugin_id=tool.plugin_id,
            capabilities=defn.capabilities,
            privileged=privileged,
            target=(
                acting_target(defn.declared_target, self.cwd, args) if privileged else _UNEXAMINED
            ),
            caller_cwd=self.cwd,
            approval_view=approval_view,
            cancel=self.cancel,
            notify=notify,
        )
