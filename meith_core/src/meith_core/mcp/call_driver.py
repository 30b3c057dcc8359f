"""One call's way from the runtime to the MCP request: its progress and log events, its
approval requests and its result.

Approval: handshake-era clients get an `elicitation/create` request while the call waits;
2026-07-28 clients get an `InputRequiredResult` whose opaque `requestState` names the parked
call, which resumes when the client retries with the person's answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from meith_core.client._core import TransportError
from meith_core.mcp import call_approval
from meith_core.mcp.content import agent_result, error_content
from meith_core.mcp.link import Answer, CallHandle
from meith_core.mcp.sessions import AgentSession, BridgeConfig, can_elicit, log
from meith_core.protocol.call_approval import DEFAULT_CALL_APPROVAL_TIMEOUT_S
from meith_core.protocol.messages import TRACEPARENT, TRACESTATE_MAX

#: A parked (2026-07-28) approval nobody answered is dropped after this long, or after the
#: runtime's own deadline when that is longer; the runtime has denied it by then.
PARKED_TTL_S = 180.0
#: The bridge gives up on an elicitation this long after the runtime's own deadline.
ELICIT_GRACE_S = 5.0
_LOG_LEVELS = {"debug": "debug", "info": "info", "warn": "warning", "error": "error"}
_LEVEL_ORDER = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]


@dataclass
class _Parked:
    session: AgentSession
    call: CallHandle
    artifacts: list[dict[str, Any]]
    answer: asyncio.Future[Answer]
    until: float


def trace_context(meta: Mapping[str, Any] | None) -> dict[str, str] | None:
    """The W3C trace context a request's `_meta` carries (`traceparent`, `tracestate`), when
    well formed: the call's span in meith's telemetry joins the client's trace."""
    parent = (meta or {}).get("traceparent")
    if not isinstance(parent, str) or not re.fullmatch(TRACEPARENT, parent):
        return None
    out = {"traceparent": parent}
    state = (meta or {}).get("tracestate")
    if isinstance(state, str) and 0 < len(state) <= TRACESTATE_MAX:
        out["tracestate"] = state
    return out


def _deadline_s(request: dict[str, Any]) -> float:
    """How long the runtime waits for this approval (its request says)."""
    timeout_ms = request.get("timeoutMs")
    return timeout_ms / 1000 if isinstance(timeout_ms, int) else DEFAULT_CALL_APPROVAL_TIMEOUT_S


class CallDriver:
    """Relays calls for one bridge; keeps the 2026-07-28 approvals parked for their retry."""

    def __init__(self, config: BridgeConfig) -> None:
        self.config = config
        self._parked: dict[str, _Parked] = {}

    async def resume(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        parked = self._parked.pop(params.request_state or "", None)
        if parked is None or parked.call.tool != params.name:
            return error_content(
                "PERMISSION_DENIED",
                "This approval is no longer pending (it was answered or expired); call the tool again.",
            )
        raw = (params.input_responses or {}).get("approval")
        answer = raw if isinstance(raw, types.ElicitResult) else None
        if not parked.answer.done():
            parked.answer.set_result(
                (call_approval.decision_of(answer), call_approval.answered_by(answer))
            )
        return await self.drive(ctx, parked.session, parked.call, parked.artifacts)

    def expire_parked(self) -> None:
        now = time.monotonic()
        for token, parked in list(self._parked.items()):
            if now > parked.until:
                del self._parked[token]
                if not parked.answer.done():
                    parked.answer.set_result(("deny", "nobody: the elicitation was not answered"))

    async def drive(
        self,
        ctx: ServerRequestContext[Any, Any],
        session: AgentSession,
        call: CallHandle,
        artifacts: list[dict[str, Any]],
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Relay one call's events until its result (or, on 2026-07-28, an approval to ask)."""
        steps = 0
        try:
            while True:
                kind, payload = await call.queue.get()
                if kind == "event":
                    steps += 1
                    await self.event(ctx, session, call, payload, artifacts, steps)
                elif kind == "approval":
                    request, answer = payload
                    asked = await self._ask_call_approval(
                        ctx, session, call, request, answer, artifacts
                    )
                    if asked is not None:
                        return asked
                elif kind == "result":
                    return self.finish(session, call, payload.to_wire(), artifacts)
                else:
                    error: TransportError = payload
                    return error_content(error.code, error.message)
        except anyio.get_cancelled_exc_class():
            # MCP cancellation (or a dropped HTTP stream): the runtime stops the tool too.
            with anyio.CancelScope(shield=True):
                await session.link.cancel(call)
            raise

    async def event(
        self,
        ctx: ServerRequestContext[Any, Any],
        session: AgentSession,
        call: CallHandle,
        event: dict[str, Any],
        artifacts: list[dict[str, Any]],
        step: int,
    ) -> None:
        kind = event.get("kind")
        if kind == "artifact":
            artifacts.append(event)
        elif kind == "progress":
            fraction = event.get("fraction")
            message = event.get("message") if isinstance(event.get("message"), str) else None
            if isinstance(fraction, int | float):
                await ctx.session.report_progress(float(fraction), 1.0, message)
            else:
                await ctx.session.report_progress(float(step), None, message)
        elif kind == "log":
            level = _LOG_LEVELS.get(str(event.get("level")), "info")
            if _LEVEL_ORDER.index(level) < _LEVEL_ORDER.index(session.log_level):
                return
            with contextlib.suppress(Exception):
                await ctx.session.send_log_message(
                    level,  # type: ignore[arg-type]
                    str(event.get("message") or ""),
                    logger=call.tool,
                    related_request_id=ctx.request_id,
                )

    async def _ask_call_approval(
        self,
        ctx: ServerRequestContext[Any, Any],
        session: AgentSession,
        call: CallHandle,
        request: dict[str, Any],
        answer: asyncio.Future[Answer],
        artifacts: list[dict[str, Any]],
    ) -> types.InputRequiredResult | None:
        if not can_elicit(ctx):
            # Sessions are keyed so this does not happen; never send a request it cannot answer.
            if not answer.done():
                answer.set_result((call_approval.DENY, "nobody: the MCP client cannot elicit"))
            return None
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            token = secrets.token_urlsafe(24)
            until = time.monotonic() + max(PARKED_TTL_S, _deadline_s(request) + ELICIT_GRACE_S)
            self._parked[token] = _Parked(session, call, artifacts, answer, until)
            return types.InputRequiredResult(
                input_requests={"approval": call_approval.elicit_request(request)},
                request_state=token,
            )
        decision = call_approval.DENY
        elicited = await self._elicit(ctx, call, request)
        if isinstance(elicited, str):
            answered_by = elicited
        else:
            answered_by = call_approval.answered_by(elicited)
            decision = call_approval.decision_of(elicited)
        if not answer.done():
            answer.set_result((decision, answered_by))
        return None

    async def _elicit(
        self, ctx: ServerRequestContext[Any, Any], call: CallHandle, request: dict[str, Any]
    ) -> types.ElicitResult | str:
        """The person's answer, or why there is none. When the runtime stops waiting first (its
        deadline passed: the call is answered with its denial) the elicitation is withdrawn.
        The runtime's deadline is the one that counts; this side waits a little longer only so
        a runtime that never answers cannot hang the call."""
        timeout_s = _deadline_s(request)
        answers: list[types.ElicitResult] = []
        why = "nobody: no answer in time"
        with anyio.move_on_after(timeout_s + ELICIT_GRACE_S):
            async with anyio.create_task_group() as tg:

                async def ask() -> None:
                    try:
                        answers.append(
                            await ctx.session.elicit_form(
                                call_approval.elicitation_message(request),
                                call_approval.elicitation_schema(),
                                related_request_id=ctx.request_id,
                            )
                        )
                    except Exception as exc:
                        nonlocal why
                        why = f"nobody: the elicitation failed ({type(exc).__name__})"
                        log(f"elicitation failed: {type(exc).__name__}: {exc}")
                    tg.cancel_scope.cancel()

                async def runtime_settled() -> None:
                    await call.finished.wait()
                    tg.cancel_scope.cancel()

                tg.start_soon(ask)
                tg.start_soon(runtime_settled)
        return answers[0] if answers else why

    def finish(
        self,
        session: AgentSession,
        call: CallHandle,
        result: dict[str, Any],
        artifacts: list[dict[str, Any]],
    ) -> types.CallToolResult:
        descriptor = next((d for d in session.tools or [] if d.get("name") == call.tool), {})
        return agent_result(
            result,
            artifacts,
            self.config.artifacts_dir,
            structured=self.config.structured,
            tool=call.tool,
            plugin=descriptor.get("plugin"),
            label=session.label,
        )
