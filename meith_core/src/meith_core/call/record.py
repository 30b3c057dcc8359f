"""CallRecord: one tool call as it moves through the pipeline."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from meith_core.base.cancel import CancelToken
from meith_core.call.catalogue import RegisteredTool
from meith_core.call.context import EventSink
from meith_core.policy.asking import Decision
from meith_core.protocol.caller import CallerInfo


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
    #: Set once the name is found in the catalogue.
    tool: RegisteredTool | None = None
    #: Set once the permission service has decided.
    decision: Decision | None = None
