"""The records of one call, built in one place: its intent (before a privileged call runs) and
its outcome, each a pure function of the call and (for the outcome) its result; and the record
of a change to the trust root (a standing grant, a plugin approval, a revoked session), which
is no call."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from meith_core.audit.call_view import AuditedCall
from meith_core.audit.redact import (
    redact,
    redact_string,
    sensitive_fields_of,
    summarize,
    summarize_call,
)
from meith_core.protocol.caller import CallerInfo
from meith_core.protocol.errors import ErrorCode
from meith_core.protocol.results import ToolResult

#: Why a call that never reached the permission service was not run.
_NOT_RUN: dict[ErrorCode | None, str] = {
    ErrorCode.RUNTIME_SHUTTING_DOWN: "not run: runtime shutting down",
    ErrorCode.UNKNOWN_TOOL: "not run: unknown tool",
    ErrorCode.VALIDATION_ERROR: "not run: invalid arguments",
}


def audit_entry(
    call: AuditedCall, result: ToolResult, *, entry_id: str, ts: int, duration_ms: float
) -> dict[str, Any]:
    """The audit record (see `audit/log.py` for how it is written); summaries are redacted."""
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
    _add_identity(entry, call)
    return entry


def intent_entry(call: AuditedCall, *, entry_id: str, ts: int, pid: int) -> dict[str, Any]:
    """The `intent` record of an authorised privileged call, written before it runs."""
    tool, decision = call.tool, call.decision
    assert tool is not None
    assert decision is not None
    defn = tool.definition
    caller = call.caller
    record: dict[str, Any] = {
        "id": entry_id,
        "ts": ts,
        "kind": "intent",
        "requestId": call.request_id,
        "caller": caller.caller.value,
        "sessionId": caller.session_id,
        "toolName": defn.name,
        "plugin": tool.plugin_id,
        "capabilities": [c.value for c in defn.capabilities],
        "decision": "allow",
        "reason": decision.reason,
        "outcome": "started",
        "cwd": call.cwd,
        "argsSummary": summarize(call.arguments, sensitive_fields_of(defn)),
        "pid": pid,
    }
    _add_identity(record, call)
    return record


def refused_frame_entry(
    caller: CallerInfo,
    *,
    request_id: str | None,
    tool_name: str | None,
    reason: str,
    entry_id: str,
    ts: int,
) -> dict[str, Any]:
    """The record of a `tool_call` frame refused by the connection rules (it never became a
    call: no tool, no arguments looked at)."""
    record: dict[str, Any] = {
        "id": entry_id,
        "ts": ts,
        "requestId": request_id,
        "caller": caller.caller.value,
        "sessionId": caller.session_id,
        "toolName": tool_name[:200] if tool_name is not None else None,
        "plugin": None,
        "capabilities": [],
        "decision": "deny",
        "reason": f"refused frame: {redact_string(reason[:2000], 'reason')}"[:500],
        "outcome": ErrorCode.PROTOCOL_ERROR.value,
        "cwd": caller.cwd,
    }
    if caller.label is not None:
        record["label"] = caller.label
    return record


def refusal_entry(
    call: AuditedCall, *, subject: str, reason: str, outcome: str, entry_id: str, ts: int
) -> dict[str, Any]:
    """A refusal that happened after `call` was answered, on behalf of what it started (a
    confined process's connection to a destination its grant does not name). Not an intent
    record: floods of them are coalesced like refused calls."""
    tool = call.tool
    caller = call.caller
    record: dict[str, Any] = {
        "id": entry_id,
        "ts": ts,
        "requestId": call.request_id,
        "caller": caller.caller.value,
        "sessionId": caller.session_id,
        "toolName": call.name if isinstance(call.name, str) else repr(call.name)[:200],
        "plugin": tool.plugin_id if tool else None,
        "capabilities": ["accesses-network"],
        "decision": "deny",
        "reason": reason[:500],
        "outcome": outcome,
        "cwd": call.cwd,
        "spaceId": caller.space_id,
        "tabId": caller.tab_id,
        "argsSummary": summarize({"destination": subject}, frozenset()),
        "resultSummary": "",
        "durationMs": 0,
    }
    _add_identity(record, call)
    return record


#: The kind of a trust-root change record (size-based retention keeps it as evidence).
TRUST_CHANGE: Final = "trust-change"


def trust_change_entry(
    caller: CallerInfo,
    *,
    action: str,
    by: str,
    what: str,
    subject: Mapping[str, Any],
    capabilities: Iterable[str] = (),
    plugin: str | None = None,
    entry_id: str,
    ts: int,
    pid: int,
) -> dict[str, Any]:
    """The record of one change to the trust root by the local user: `action` names it
    (`grant-added`, `plugin-approved`, ...), `what` says it in words, `by` says through which
    door (`the local user (meith grants add)`, `the local user's console (meith ui)`); `subject`
    is the grant, approval or session as it was changed (redacted like every summary)."""
    record: dict[str, Any] = {
        "id": entry_id,
        "ts": ts,
        "kind": TRUST_CHANGE,
        "action": action,
        "caller": caller.caller.value,
        "sessionId": caller.session_id,
        "toolName": None,
        "plugin": plugin,
        "capabilities": list(capabilities),
        "decision": "allow",
        "reason": redact_string(f"{what} by {by}"[:500], "reason"),
        "outcome": "ok",
        "subject": redact(dict(subject)),
        "pid": pid,
    }
    if caller.label is not None:
        record["label"] = caller.label
    return record


def _add_identity(record: dict[str, Any], call: AuditedCall) -> None:
    """The optional identity fields, present only when set."""
    caller = call.caller
    for key, value in (
        ("claimedCaller", caller.claimed_caller),
        ("label", caller.label),
        ("pluginId", caller.plugin_id),
    ):
        if value is not None:
            record[key] = value
    if call.trace:
        # The caller's own trace (an MCP client's `_meta`): the call's span joins it.
        record["traceContext"] = dict(call.trace)
