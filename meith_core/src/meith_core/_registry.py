"""ToolRegistry: the one call pipeline. Nothing else executes a tool.

    shutdown -> lookup -> validate -> authorise -> run under deadline and cancellation
    -> normalise -> audit

`call()` never raises for anything a tool or a caller does; it resolves to a ToolResult. The
tool runs in a task of its own that the registry races against the deadline and the caller's
cancellation, so a tool that swallows cancellation or blocks a worker thread cannot hold the
answer back; its late result is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import anyio
import anyio.to_thread
import structlog
from pydantic import BaseModel, ValidationError

from meith_core._audit.log import AuditLog, now_ms
from meith_core._audit.redact import summarize
from meith_core._caller import CallerInfo
from meith_core._cancel import CancelToken
from meith_core._capabilities import privileged_of
from meith_core._context import EventSink, ToolContext
from meith_core._errors import ErrorCode, ToolError
from meith_core._home import MeithHome
from meith_core._ids import new_id
from meith_core._permissions.service import Decision, PermissionService
from meith_core._protocol.framing import dumps_bytes
from meith_core._results import ToolResult, error_result
from meith_core._settings import SettingsStore
from meith_core._tooldef import NO_TIMEOUT, ToolDefinition

#: After a cancel, how long a cooperative tool may take to return its own result
#: (a log stream answering `{attached: true}`) before the registry answers CANCELLED.
CANCEL_GRACE_S: Final = 0.25
#: Tools calling tools calling tools...: a loop is a bug, not a workload.
MAX_NESTED_CALLS: Final = 16
WORKER_THREADS: Final = 64

_log = structlog.get_logger("meith.registry")
_depth: contextvars.ContextVar[int] = contextvars.ContextVar("meith_call_depth", default=0)


class DuplicateToolError(ValueError):
    """A tool name that another plugin registered first."""


@dataclass(frozen=True, slots=True)
class RegisteredTool:
    definition: ToolDefinition
    plugin_id: str


@dataclass(slots=True)
class _Outcome:
    value: Any = None
    exc: BaseException | None = None


def _validation_details(exc: ValidationError) -> dict[str, Any]:
    # Only locations and messages: the offending input may be huge or hostile.
    errors = [
        {
            "path": [p if isinstance(p, int) else str(p) for p in err["loc"]],
            "message": err["msg"],
            "type": err["type"],
        }
        for err in exc.errors(include_url=False, include_context=False, include_input=False)[:50]
    ]
    return {"errors": errors}


def _first_error(details: dict[str, Any]) -> str:
    err = details["errors"][0] if details["errors"] else None
    if err is None:
        return "invalid"
    where = ".".join(str(p) for p in err["path"]) or "arguments"
    return f"{where}: {err['message']}"


def _json_safe(value: Any) -> Any:
    try:
        dumps_bytes(value)
        return value
    except (TypeError, ValueError, RecursionError):
        return repr(value)[:2000]


class ToolRegistry:
    def __init__(
        self,
        *,
        permissions: PermissionService,
        audit: AuditLog,
        home: MeithHome,
        settings: SettingsStore,
    ) -> None:
        self.permissions = permissions
        self.audit = audit
        self.home = home
        self.settings = settings
        self._tools: dict[str, RegisteredTool] = {}
        self._described: list[dict[str, Any]] | None = None
        self._shutting_down = False
        self._active: dict[int, CancelToken] = {}
        self._tasks: set[asyncio.Future[Any]] = set()
        self._limiter: anyio.CapacityLimiter | None = None
        self.calls_total = 0

    # -- registration -------------------------------------------------------------------

    def register(self, tool: ToolDefinition, plugin_id: str = "app") -> None:
        self.register_many([tool], plugin_id)

    def register_many(self, tools: Iterable[ToolDefinition], plugin_id: str) -> None:
        """Register all of `tools` or none of them."""
        batch = list(tools)
        seen: set[str] = set()
        for tool in batch:
            if not isinstance(tool, ToolDefinition):
                raise TypeError(f"expected a ToolDefinition, got {type(tool).__name__}")
            existing = self._tools.get(tool.name)
            if existing is not None:
                raise DuplicateToolError(
                    f"tool {tool.name!r} is already registered by plugin {existing.plugin_id!r}"
                )
            if tool.name in seen:
                raise DuplicateToolError(f"tool {tool.name!r} is declared twice")
            seen.add(tool.name)
            tool.input_schema  # noqa: B018 - fail at registration, not at the first call
            tool.output_schema  # noqa: B018
        for tool in batch:
            self._tools[tool.name] = RegisteredTool(tool, plugin_id)
        self._described = None

    def unregister_plugin(self, plugin_id: str) -> None:
        for name in [n for n, t in self._tools.items() if t.plugin_id == plugin_id]:
            del self._tools[name]
        self._described = None

    def get(self, name: str) -> RegisteredTool | None:
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def tools(self) -> list[RegisteredTool]:
        return list(self._tools.values())

    def describe(self) -> list[dict[str, Any]]:
        """Tool descriptors in registration order (cached until the next registration)."""
        if self._described is None:
            self._described = [t.definition.descriptor(t.plugin_id) for t in self._tools.values()]
        return self._described

    # -- shutdown -----------------------------------------------------------------------

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def begin_shutdown(self) -> None:
        """Every later call answers RUNTIME_SHUTTING_DOWN (checked before anything else)."""
        self._shutting_down = True

    def cancel_all(self, reason: str = "runtime shutting down") -> int:
        tokens = list(self._active.values())
        for token in tokens:
            token.cancel(reason)
        return len(tokens)

    @property
    def in_flight(self) -> int:
        return len(self._active)

    async def drain(self, timeout_s: float) -> bool:
        """Wait (bounded) for abandoned tool tasks to finish their cleanup."""
        pending = [t for t in self._tasks if not t.done()]
        if not pending:
            return True
        _done, still = await asyncio.wait(pending, timeout=timeout_s)
        return not still

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
    ) -> ToolResult:
        started = time.perf_counter()
        request_id = request_id or new_id("req")
        cwd = caller.cwd or os.getcwd()
        if arguments is None:
            arguments = {}
        self.calls_total += 1
        reg: RegisteredTool | None = None
        decision: Decision | None = None
        result: ToolResult
        try:
            if self._shutting_down:
                result = error_result(ErrorCode.RUNTIME_SHUTTING_DOWN, "Runtime is shutting down")
            elif (reg := self._tools.get(name)) is None:
                result = error_result(
                    ErrorCode.UNKNOWN_TOOL,
                    f"Unknown tool: {name}",
                    {"hint": "list the available tools with: meith tools"},
                )
            elif not isinstance(arguments, Mapping):
                result = error_result(
                    ErrorCode.VALIDATION_ERROR,
                    f'Invalid arguments for "{name}": arguments must be a JSON object',
                )
            else:
                result, decision = await self._validated_call(
                    reg, caller, cwd, request_id, arguments, timeout_ms, cancel, emit
                )
        except asyncio.CancelledError:
            # The caller itself went away (its task was cancelled): record it, then let the
            # cancellation propagate as structured concurrency expects.
            self._audit(
                caller, cwd, request_id, name, reg, decision, arguments,
                error_result(ErrorCode.CANCELLED, f'Tool "{name}" was cancelled'), started,
            )  # fmt: skip
            raise
        except Exception as exc:
            # Last line of defence: call() never raises. A bug here (in the permission
            # service, a hook...) fails this call, is logged with its traceback, and is audited.
            _log.error("call pipeline failed", toolName=name, requestId=request_id, exc_info=True)
            result = error_result(
                ErrorCode.TOOL_FAILED,
                f'Tool "{name}" failed inside the runtime: {type(exc).__name__}: {exc}'[:2000],
            )
        self._audit(caller, cwd, request_id, name, reg, decision, arguments, result, started)
        return result

    async def _validated_call(
        self,
        reg: RegisteredTool,
        caller: CallerInfo,
        cwd: str,
        request_id: str,
        arguments: Mapping[str, Any],
        timeout_ms: int | None,
        cancel: CancelToken | None,
        emit: EventSink | None,
    ) -> tuple[ToolResult, Decision | None]:
        defn = reg.definition
        if "cwd" not in arguments and "cwd" in defn.input_model.model_fields:
            # Convention: an argument named `cwd` defaults to the caller's working directory
            # (clientInfo.cwd, else the runtime's), so `meith call git_status` works in a repo.
            arguments = {**arguments, "cwd": cwd}
        try:
            args = defn.input_model.model_validate(arguments)
        except ValidationError as exc:
            details = _validation_details(exc)
            return error_result(
                ErrorCode.VALIDATION_ERROR,
                f'Invalid arguments for "{defn.name}": {_first_error(details)}',
                details,
            ), None

        # A privileged call never runs unaudited. Checked before authorising, so a refused
        # call neither uses up a one-use grant nor asks anyone at a prompt.
        problem = self.audit.preflight() if privileged_of(defn.capabilities) else None
        if problem is not None:
            decision = Decision(
                False, problem, message=f'Tool "{defn.name}" was not run: {problem}.'
            )
        else:
            decision = await self.permissions.authorize(
                caller,
                defn.name,
                defn.capabilities,
                reg.plugin_id,
                request_id=request_id,
                cwd=cwd,
                arguments_summary=lambda: summarize(dict(arguments)),
                cancel=cancel,
            )
        if not decision.allowed:
            return error_result(
                ErrorCode.PERMISSION_DENIED,
                decision.message or f'Tool "{defn.name}" was denied: {decision.reason}',
                {"reason": decision.reason, **decision.details},
            ), decision

        depth = _depth.get()
        if depth >= MAX_NESTED_CALLS:
            return error_result(
                ErrorCode.TOOL_FAILED,
                f'Tool "{defn.name}" not run: tool calls nested deeper than {MAX_NESTED_CALLS}',
            ), decision

        if timeout_ms is None:
            timeout_ms = defn.effective_timeout_ms
        elif timeout_ms == NO_TIMEOUT:
            timeout_ms = None  # as for a tool's own timeout_ms: run until cancelled
        token = CancelToken()
        unlink = token.link(cancel) if cancel is not None else (lambda: None)
        ctx = ToolContext(
            caller=caller if caller.cwd else caller.with_cwd(cwd),
            request_id=request_id,
            tool_name=defn.name,
            plugin_id=reg.plugin_id,
            cancel=token,
            emit=emit,
            home=self.home,
            settings=self.settings.snapshot,
            nested_call=self._nested_call,
            logger=lambda: structlog.get_logger("meith.tool").bind(
                requestId=request_id,
                sessionId=caller.session_id,
                toolName=defn.name,
                plugin=reg.plugin_id,
            ),
            grant_scope=decision.grant_scope,
        )
        key = id(token)
        self._active[key] = token
        reset = _depth.set(depth + 1)
        try:
            return await self._run(defn, ctx, args, token, timeout_ms), decision
        finally:
            _depth.reset(reset)
            self._active.pop(key, None)
            unlink()
            ctx._close()

    async def _nested_call(
        self,
        caller: CallerInfo,
        name: str,
        arguments: dict[str, Any],
        timeout_ms: int | None,
        token: CancelToken,
    ) -> ToolResult:
        return await self.call(caller, name, arguments, timeout_ms=timeout_ms, cancel=token)

    async def _run(
        self,
        defn: ToolDefinition,
        ctx: ToolContext,
        args: BaseModel,
        token: CancelToken,
        timeout_ms: int | None,
    ) -> ToolResult:
        if token.is_set():
            return error_result(ErrorCode.CANCELLED, f'Tool "{defn.name}" was cancelled')
        # One future settled by whichever comes first: the tool's end, a cancel (from any
        # thread), or the deadline. Cheaper than racing tasks with asyncio.wait.
        loop = asyncio.get_running_loop()
        wake: asyncio.Future[None] = loop.create_future()

        def settle(_: object = None) -> None:
            if not wake.done():
                wake.set_result(None)

        def on_cancel() -> None:
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits
                loop.call_soon_threadsafe(settle)

        # The tool's task settles the race itself as it ends (one event-loop iteration sooner
        # than a done-callback); the callback remains for a task cancelled before it ran.
        task: asyncio.Future[_Outcome]
        if defn.is_async:
            task = asyncio.ensure_future(_invoke_async(defn, ctx, args, settle))
        else:
            if self._limiter is None:
                self._limiter = anyio.CapacityLimiter(WORKER_THREADS)
            task = asyncio.ensure_future(_invoke_in_thread(defn, ctx, args, self._limiter, settle))
        self._tasks.add(task)
        task.add_done_callback(self._forget_task)
        task.add_done_callback(settle)
        unsubscribe = token.add_callback(on_cancel)
        timer = None if timeout_ms is None else loop.call_later(timeout_ms / 1000, settle)
        try:
            await wake
            if not task.done() and token.is_set():
                # Cancelled: a cooperative tool gets a moment to answer for itself.
                done, _ = await asyncio.wait({task}, timeout=CANCEL_GRACE_S)
                if task not in done:
                    task.cancel()
                    reason = f": {token.reason}" if token.reason not in ("", "cancelled") else ""
                    return error_result(
                        ErrorCode.CANCELLED, f'Tool "{defn.name}" was cancelled{reason}'
                    )
            elif not task.done():
                token.cancel("timeout")
                task.cancel()
                return error_result(
                    ErrorCode.TIMEOUT, f'Tool "{defn.name}" timed out after {timeout_ms}ms'
                )
        except asyncio.CancelledError:
            token.cancel("caller cancelled")
            task.cancel()
            raise
        finally:
            unsubscribe()
            if timer is not None:
                timer.cancel()
        if task.cancelled():
            return error_result(
                ErrorCode.TOOL_FAILED, f'Tool "{defn.name}" was cancelled from inside'
            )
        return self._normalise(defn, task.result())

    def _forget_task(self, task: asyncio.Future[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled():
            task.exception()  # mark retrieved: a late failure is dropped, not reported twice

    def _normalise(self, defn: ToolDefinition, outcome: _Outcome) -> ToolResult:
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
            result._encoded = dumps_bytes(result.to_wire())
        except ValidationError as err:
            return error_result(
                ErrorCode.TOOL_FAILED,
                f'Tool "{defn.name}" returned a result that does not match its output schema: '
                f"{_first_error(_validation_details(err))}",
            )
        except (TypeError, ValueError, RecursionError) as err:
            return error_result(
                ErrorCode.TOOL_FAILED,
                f'Tool "{defn.name}" returned a result that is not JSON: {err}',
            )
        return result

    # -- audit --------------------------------------------------------------------------

    def _audit(
        self,
        caller: CallerInfo,
        cwd: str,
        request_id: str,
        name: str,
        reg: RegisteredTool | None,
        decision: Decision | None,
        arguments: Any,
        result: ToolResult,
        started: float,
    ) -> None:
        code = result.error_code
        if decision is not None:
            reason = decision.reason
        elif code is ErrorCode.RUNTIME_SHUTTING_DOWN:
            reason = "not run: runtime shutting down"
        elif code is ErrorCode.UNKNOWN_TOOL:
            reason = "not run: unknown tool"
        elif code is ErrorCode.VALIDATION_ERROR:
            reason = "not run: invalid arguments"
        else:
            reason = "not run"
        entry: dict[str, Any] = {
            "id": new_id("audit"),
            "ts": now_ms(),
            "requestId": request_id,
            "caller": caller.caller.value,
            "sessionId": caller.session_id,
            "toolName": name[:200] if isinstance(name, str) else repr(name)[:200],
            "plugin": reg.plugin_id if reg else None,
            "capabilities": [c.value for c in reg.definition.capabilities] if reg else [],
            "decision": "deny" if code is ErrorCode.PERMISSION_DENIED else "allow",
            "reason": reason,
            "outcome": code.value if code is not None else "ok",
            "cwd": cwd,
            "spaceId": caller.space_id,
            "tabId": caller.tab_id,
            "argsSummary": summarize(arguments),
            "resultSummary": summarize(result.to_wire()),
            "durationMs": round((time.perf_counter() - started) * 1000, 3),
        }
        if caller.claimed_caller is not None:
            entry["claimedCaller"] = caller.claimed_caller
        if caller.label is not None:
            entry["label"] = caller.label
        if caller.plugin_id is not None:
            entry["pluginId"] = caller.plugin_id
        if not self.audit.write(entry):
            _log.error("audit record not written", toolName=name, error=self.audit.last_error)


async def _invoke_async(
    defn: ToolDefinition, ctx: ToolContext, args: BaseModel, done: Callable[[], None]
) -> _Outcome:
    try:
        outcome = _Outcome(value=await defn.func(ctx, args))
    except asyncio.CancelledError:
        raise
    except BaseException as exc:  # SystemExit/KeyboardInterrupt from a tool must not end the host
        outcome = _Outcome(exc=exc)
    done()
    return outcome


async def _invoke_in_thread(
    defn: ToolDefinition,
    ctx: ToolContext,
    args: BaseModel,
    limiter: anyio.CapacityLimiter,
    done: Callable[[], None],
) -> _Outcome:
    def run() -> _Outcome:
        try:
            return _Outcome(value=defn.func(ctx, args))
        except BaseException as exc:
            return _Outcome(exc=exc)

    # abandon_on_cancel: a thread cannot be interrupted; the answer must not wait for it.
    outcome = await anyio.to_thread.run_sync(run, abandon_on_cancel=True, limiter=limiter)
    done()
    return outcome
