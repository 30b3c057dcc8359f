"""The call pipeline: the one path by which any caller runs a tool.

    shutting down -> unknown tool -> validate -> authorise -> run under deadline
    -> normalise -> audit

`CallPipeline.call()` never raises for anything a tool or a caller does; it resolves to a
ToolResult, and every call gets exactly one audit entry, whatever step it stopped at. The
catalogue (`call/catalogue.py`) says which tools exist, the executor (`call/executor.py`) runs one
under its deadline, and `audit/entry.py` builds the entry.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import structlog
from pydantic import BaseModel, ValidationError

from meith_core.audit.approval_view import approval_view
from meith_core.audit.entry import audit_entry, refusal_entry, refused_frame_entry
from meith_core.audit.log import AuditLog, now_ms
from meith_core.base.cancel import CancelToken
from meith_core.base.home import MeithHome
from meith_core.base.ids import new_id
from meith_core.call.catalogue import Catalogue, RegisteredTool
from meith_core.call.context import EventSink, ToolContext
from meith_core.call.executor import Executor, Outcome
from meith_core.call.record import CallRecord
from meith_core.call.tooldef import NO_TIMEOUT, ToolDefinition
from meith_core.call.validation import first_error, validate_arguments, validation_details
from meith_core.policy.asking import Decision
from meith_core.policy.service import PermissionService
from meith_core.protocol.call_approval import Notify
from meith_core.protocol.caller import CallerInfo
from meith_core.protocol.capabilities import privileged_of
from meith_core.protocol.errors import ErrorCode, ToolError
from meith_core.protocol.framing import dumps_bytes
from meith_core.protocol.results import ToolResult, error_result

#: Tools calling tools calling tools...: a loop is a bug, not a workload.
MAX_NESTED_CALLS: Final = 16

_log = structlog.get_logger("meith.pipeline")
_depth: contextvars.ContextVar[int] = contextvars.ContextVar("meith_call_depth", default=0)


class CallPipeline:
    def __init__(
        self,
        *,
        catalogue: Catalogue,
        permissions: PermissionService,
        audit: AuditLog,
        home: MeithHome,
        settings: Callable[[], Mapping[str, Any]],
        executor: Executor | None = None,
    ) -> None:
        self.catalogue = catalogue
        self.permissions = permissions
        self.audit = audit
        self.home = home
        #: The settings tools read (`ctx.settings`): a snapshot, taken when a tool asks.
        self.settings = settings
        self.executor = executor or Executor()
        #: `caller -> variables` for a process a tool starts for `caller` (set by the runtime;
        #: `ToolContext.child_environment`).
        self.child_environment: Callable[[CallerInfo], dict[str, str]] | None = None
        self._shutting_down = False
        #: Asked before a call is answered UNKNOWN_TOOL: the host loads plugins installed
        #: since it started, which may provide the tool.
        self.on_unknown_tool: Callable[[], Awaitable[object]] | None = None

    # -- shutdown -----------------------------------------------------------------------

    def begin_shutdown(self) -> None:
        """Every later call answers RUNTIME_SHUTTING_DOWN (checked before anything else)."""
        self._shutting_down = True

    def cancel_all(self, reason: str = "runtime shutting down") -> int:
        return self.executor.cancel_all(reason)

    @property
    def in_flight(self) -> int:
        return self.executor.in_flight

    async def drain(self, timeout_s: float) -> bool:
        return await self.executor.drain(timeout_s)

    # -- the pipeline -------------------------------------------------------------------

    async def call(
        self,
        caller: CallerInfo,
        name: str,
        arguments: Any = None,
        *,
        timeout_ms: int | None = None,
        cancel: CancelToken | None = None,
        emit: EventSink | None = None,
        request_id: str | None = None,
        render: bool = True,
        text_only: bool = False,
        trace: dict[str, str] | None = None,
    ) -> ToolResult:
        """Run one call through every step; never raises. `render`: whether a tool with a
        renderer writes the result's `text` (socket callers ask for it, `withText`).
        `text_only`: the encoded (wire) result of a rendered call carries the text and not the
        content (`textOnly`); the ToolResult itself, its audit record and its events keep it.
        `trace`: the caller's W3C trace context, kept in the audit record (the call's span is
        its child)."""
        call = CallRecord(
            request_id=request_id or new_id("req"),
            caller=caller,
            name=name,
            arguments={} if arguments is None else arguments,
            cwd=caller.cwd or os.getcwd(),
            started=time.perf_counter(),
            timeout_ms=timeout_ms,
            cancel=cancel,
            emit=emit,
            render=render,
            text_only=text_only,
            trace=trace,
        )
        try:
            result = await self._steps(call)
        except asyncio.CancelledError:
            # The caller itself went away (its task was cancelled): record it, then let the
            # cancellation propagate as structured concurrency expects.
            self._audit(call, error_result(ErrorCode.CANCELLED, f'Tool "{name}" was cancelled'))
            raise
        except Exception as exc:
            # Last line of defence: call() never raises. A bug here (in the permission
            # service, a hook...) fails this call, is logged with its traceback, and is audited.
            _log.error(
                "call pipeline failed", toolName=name, requestId=call.request_id, exc_info=True
            )
            result = error_result(
                ErrorCode.TOOL_FAILED,
                f'Tool "{name}" failed inside the runtime: {type(exc).__name__}: {exc}'[:2000],
            )
        self._audit(call, result)
        return result

    async def _steps(self, call: CallRecord) -> ToolResult:
        if self._shutting_down:
            return error_result(ErrorCode.RUNTIME_SHUTTING_DOWN, "Runtime is shutting down")
        call.tool = self.catalogue.get(call.name)
        if call.tool is None and self.on_unknown_tool is not None:
            await self.on_unknown_tool()
            call.tool = self.catalogue.get(call.name)
        if call.tool is None:
            return error_result(
                ErrorCode.UNKNOWN_TOOL,
                f"Unknown tool: {call.name}",
                {"hint": "list the available tools with: meith tools"},
            )
        args = validate_arguments(call.tool.definition, call.arguments, call.cwd)
        if isinstance(args, ToolResult):
            return args
        call.decision = await self._authorise(call, call.tool, args)
        if not call.decision.allowed:
            return error_result(
                ErrorCode.PERMISSION_DENIED,
                call.decision.message or f'Tool "{call.name}" was denied: {call.decision.reason}',
                {"reason": call.decision.reason, **call.decision.details},
            )
        # Authorised and about to run: a privileged call is recorded before it runs, so a crash
        # mid-call leaves a trace (read-only calls pay nothing for it).
        if privileged_of(call.tool.definition.capabilities) and not self.audit.intent(call):
            problem = f"audit trail unavailable ({self.audit.last_error})"
            return error_result(
                ErrorCode.PERMISSION_DENIED,
                f'Tool "{call.name}" was not run: {problem}.',
                {"reason": problem},
            )
        return await self._run(call, call.tool, args)

    async def _authorise(self, call: CallRecord, tool: RegisteredTool, args: BaseModel) -> Decision:
        defn = tool.definition
        privileged = bool(privileged_of(defn.capabilities))
        # A privileged call never runs unaudited. Checked before authorising, so a refused
        # call neither uses up a one-use grant nor asks anyone at a prompt.
        problem = self.audit.preflight() if privileged else None
        if problem is not None:
            return Decision(False, problem, message=f'Tool "{defn.name}" was not run: {problem}.')
        arguments = call.arguments
        request = call.auth_request(
            tool,
            args,
            lambda: approval_view(dict(arguments)),
            _progress_notifier(call.emit),
        )
        return await self.permissions.authorize(request)

    async def _run(self, call: CallRecord, tool: RegisteredTool, args: BaseModel) -> ToolResult:
        defn = tool.definition
        depth = _depth.get()
        if depth >= MAX_NESTED_CALLS:
            return error_result(
                ErrorCode.TOOL_FAILED,
                f'Tool "{defn.name}" not run: tool calls nested deeper than {MAX_NESTED_CALLS}',
            )
        timeout_ms = call.timeout_ms
        if timeout_ms is None:
            timeout_ms = defn.effective_timeout_ms
        elif timeout_ms == NO_TIMEOUT:
            timeout_ms = None  # as for a tool's own timeout_ms: run until cancelled
        token = CancelToken()
        unlink = token.link(call.cancel) if call.cancel is not None else None
        caller, request_id = call.caller, call.request_id
        assert call.decision is not None  # authorised before it runs
        ctx = ToolContext(
            caller=caller if caller.cwd else caller.with_cwd(call.cwd),
            request_id=request_id,
            tool_name=defn.name,
            plugin_id=tool.plugin_id,
            cancel=token,
            emit=call.emit,
            home=self.home,
            settings=self.settings,
            nested_call=self._nested_call,
            logger=lambda: structlog.get_logger("meith.tool").bind(
                requestId=request_id,
                sessionId=caller.session_id,
                toolName=defn.name,
                plugin=tool.plugin_id,
            ),
            grant_scope=call.decision.grant_scope,
            grant_net=call.decision.grant_net,
            grant_sockets=call.decision.grant_sockets,
            refusals=functools.partial(self._audit_refusal, call),
            grant_check=self.permissions.grant_check(caller, defn.name),
            child_env=(
                functools.partial(self.child_environment, caller)
                if self.child_environment is not None
                else None
            ),
        )
        reset = _depth.set(depth + 1)
        try:
            outcome = await self.executor.run(defn, ctx, args, token, timeout_ms)
        finally:
            _depth.reset(reset)
            if unlink is not None:
                unlink()
            ctx._close()
        if isinstance(outcome, ToolResult):
            return outcome
        return _normalise(tool, outcome, render=call.render, text_only=call.text_only)

    async def _nested_call(
        self,
        caller: CallerInfo,
        name: str,
        arguments: dict[str, Any],
        timeout_ms: int | None,
        token: CancelToken,
    ) -> ToolResult:
        return await self.call(caller, name, arguments, timeout_ms=timeout_ms, cancel=token)

    def record_refused(
        self, caller: CallerInfo, request_id: str | None, tool_name: str | None, reason: str
    ) -> None:
        """Audit (coalesced) a `tool_call` frame the connection rules refused before it ran."""
        entry = refused_frame_entry(
            caller,
            request_id=request_id,
            tool_name=tool_name,
            reason=reason,
            entry_id=new_id("audit"),
            ts=now_ms(),
        )
        if not self.audit.write(entry):
            _log.error("audit record not written", toolName=tool_name, error=self.audit.last_error)

    def _audit_refusal(self, call: CallRecord, subject: str, reason: str, outcome: str) -> None:
        """A refusal on behalf of what `call` started (see `ToolContext.refusal_recorder`)."""
        entry = refusal_entry(
            call,
            subject=subject,
            reason=reason,
            outcome=outcome,
            entry_id=new_id("audit"),
            ts=now_ms(),
        )
        if not self.audit.write(entry):
            _log.error("audit record not written", toolName=call.name, error=self.audit.last_error)

    def _audit(self, call: CallRecord, result: ToolResult) -> None:
        entry = audit_entry(
            call,
            result,
            entry_id=new_id("audit"),
            ts=now_ms(),
            duration_ms=round((time.perf_counter() - call.started) * 1000, 3),
        )
        if not self.audit.write(entry):
            _log.error("audit record not written", toolName=call.name, error=self.audit.last_error)


def _progress_notifier(emit: EventSink | None) -> Notify | None:
    """An approver's word to the caller, before the tool runs: a progress event, marked
    `awaiting: approval` while the call waits for a person (where, how long). The caller's
    sink failing is not the call's failure."""
    if emit is None:
        return None

    def notify(message: str, *, awaiting: bool = False) -> None:
        event: dict[str, Any] = {"kind": "progress", "message": message}
        if awaiting:
            event["awaiting"] = "approval"
        try:
            emit(event)
        except Exception as exc:
            _log.warning("event sink failed", error=repr(exc))

    return notify


def _rendered(defn: ToolDefinition, content: Any) -> str | None:
    """The tool's text of a result; a renderer that fails costs the text, never the call."""
    assert defn.render is not None
    try:
        text = defn.render(content)
    except Exception as exc:
        _log.error("tool renderer raised", toolName=defn.name, error=f"{type(exc).__name__}: {exc}")
        return None
    return text if isinstance(text, str) else None


def _normalise(
    tool: RegisteredTool, outcome: Outcome, *, render: bool = True, text_only: bool = False
) -> ToolResult:
    """The tool's return value or exception as a ToolResult, pre-encoded for the wire (with
    the tool's rendered `text` when `render`; without the content beside it when `text_only`)."""
    defn = tool.definition
    exc = outcome.exc
    if exc is not None:
        if isinstance(exc, ToolError):
            return error_result(exc.code, exc.message, _json_safe(exc.details))
        _log.error(
            "tool raised",
            toolName=defn.name,
            error=f"{type(exc).__name__}: {exc}",
            exc_info=(type(exc), exc, exc.__traceback__),
        )
        return error_result(
            ErrorCode.TOOL_FAILED,
            f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__,
        )
    value = outcome.value
    try:
        if isinstance(value, ToolResult):
            result = value
        elif isinstance(value, BaseModel):
            result = ToolResult(ok=True, content=value.model_dump(mode="json", by_alias=True))
        else:
            if defn.output_model is not None and value is not None:
                value = defn.output_model.model_validate(value).model_dump(
                    mode="json", by_alias=True
                )
            result = ToolResult(ok=True, content=value)
        if render and defn.render is not None and result.ok and result.text is None:
            result.text = _rendered(defn, result.content)
        wire = result.to_wire()
        if text_only and result.text is not None:
            # The caller reads the text; the content (often ten times its size, e.g. a status
            # as objects) is neither encoded nor sent. Not encoding it also means it is not
            # checked for being JSON here: a renderer already read it, and the audit's
            # redactor takes any value.
            del wire["content"]
        result.set_encoded(dumps_bytes(wire))
    except ValidationError as err:
        return error_result(
            ErrorCode.TOOL_FAILED,
            f'Tool "{defn.name}" returned a result that does not match its output schema: '
            f"{first_error(validation_details(err))}",
        )
    except (TypeError, ValueError, RecursionError) as err:
        return error_result(
            ErrorCode.TOOL_FAILED,
            f'Tool "{defn.name}" returned a result that is not JSON: {err}',
        )
    return result


def _json_safe(value: Any) -> Any:
    try:
        dumps_bytes(value)
        return value
    except (TypeError, ValueError, RecursionError):
        return repr(value)[:2000]
