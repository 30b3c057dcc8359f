"""The audit entry of one call: a pure function of the call record and its result."""

from __future__ import annotations

from typing import Any

from meith_core._audit.redact import sensitive_fields_of, summarize_call
from meith_core._callrecord import CallRecord
from meith_core._errors import ErrorCode
from meith_core._results import ToolResult

#: Why a call that never reached the permission service was not run.
_NOT_RUN: dict[ErrorCode | None, str] = {
    ErrorCode.RUNTIME_SHUTTING_DOWN: "not run: runtime shutting down",
    ErrorCode.UNKNOWN_TOOL: "not run: unknown tool",
    ErrorCode.VALIDATION_ERROR: "not run: invalid arguments",
}


def audit_entry(
    call: CallRecord, result: ToolResult, *, entry_id: str, ts: int, duration_ms: float
) -> dict[str, Any]:
    """The audit record (see `_audit/log.py` for how it is written); summaries are redacted."""
    code = result.error_code
    tool = call.tool
    caller = call.caller
    name = call.name
    sensitive = sensitive_fields_of(tool.definition) if tool else frozenset[str]()
    args_summary, result_summary = summarize_call(call.arguments, result.to_wire(), sensitive)
    entry: dict[str, Any] = {
        "id": entry_id,
        "ts": ts,
        "requestId": call.request_id,
        "caller": caller.caller.value,
        "sessionId": caller.session_id,
        "toolName": name[:200] if isinstance(name, str) else repr(name)[:200],
        "plugin": tool.plugin_id if tool else None,
        "capabilities": [c.value for c in tool.definition.capabilities] if tool else [],
        "decision": "deny" if code is ErrorCode.PERMISSION_DENIED else "allow",
        "reason": (
            call.decision.reason if call.decision is not None else _NOT_RUN.get(code, "not run")
        ),
        "outcome": code.value if code is not None else "ok",
        "cwd": call.cwd,
        "spaceId": caller.space_id,
        "tabId": caller.tab_id,
        "argsSummary": args_summary,
        "resultSummary": result_summary,
        "durationMs": duration_ms,
    }
    if caller.claimed_caller is not None:
        entry["claimedCaller"] = caller.claimed_caller
    if caller.label is not None:
        entry["label"] = caller.label
    if caller.plugin_id is not None:
        entry["pluginId"] = caller.plugin_id
    return entry
