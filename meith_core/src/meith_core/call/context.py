"""`ToolContext`: what a running tool can see and do."""

from __future__ import annotations

import asyncio
import base64
import math
import os
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, cast

from meith_core.base.cancel import CancelToken
from meith_core.base.home import MeithHome
from meith_core.policy.held import GrantCheck, HeldGrant
from meith_core.protocol.caller import CallerInfo
from meith_core.protocol.errors import ErrorCode, ToolError
from meith_core.protocol.events import LOG_LEVELS, EventDict

if TYPE_CHECKING:
    import structlog.typing

    from meith_core.protocol.results import ToolResult

EventSink = Callable[[EventDict], None]


class FlowControlledSink(Protocol):
    """An event sink that knows when its reader falls behind (the socket server's is one).

    `congested` is True while the caller has more of this call's events queued than it keeps
    up with; `wait_flowing()` returns once it has caught up. A streaming tool uses these (via
    `ToolContext.events_congested` / `wait_events_flowing`) to slow its source down instead of
    queueing without bound.
    """

    @property
    def congested(self) -> bool: ...

    async def wait_flowing(self) -> None: ...

    def __call__(self, event: EventDict) -> None: ...


NestedCall = Callable[
    [CallerInfo, str, dict[str, Any], int | None, CancelToken], Awaitable["ToolResult"]
]


class ToolContext:
    """Passed to every tool call.

    Event methods (`progress`, `log`, `partial_text`, `artifact`) may be called from the event
    loop or from the worker thread of a sync tool; events reach the caller in order, and none
    after the call has been answered.
    """

    def __init__(
        self,
        *,
        caller: CallerInfo,
        request_id: str,
        tool_name: str,
        plugin_id: str,
        cancel: CancelToken,
        emit: EventSink | None,
        home: MeithHome,
        settings: Callable[[], Mapping[str, Any]],
        nested_call: NestedCall,
        logger: Callable[[], structlog.typing.FilteringBoundLogger],
        grant_scope: str | None = None,
        grant_net: tuple[str, ...] = (),
        grant_sockets: tuple[str, ...] = (),
        refusals: Callable[[str, str, str], None] | None = None,
        grant_check: GrantCheck | None = None,
        child_env: Callable[[], dict[str, str]] | None = None,
    ) -> None:
        self.caller = caller
        self.request_id = request_id
        self.tool_name = tool_name
        self.plugin_id = plugin_id
        self.home = home
        #: When the grant that allowed this call is confined to a directory, that directory:
        #: tools must keep writes inside it (see `meith_core.base.paths`).
        self.grant_scope = grant_scope
        #: The network destinations the grant that allowed this call names (`--net`): what a
        #: process it starts confined may reach (`meith_core.NetworkGate`); empty: none.
        self.grant_net = grant_net
        #: The Unix sockets that grant names (`--socket`): what such a process may reach.
        self.grant_sockets = grant_sockets
        self._refusals = refusals
        self._grant_check = grant_check
        self._child_env = child_env
        self._cancel = cancel
        self._emit = emit
        # Duck-typed (cheaper than a runtime-checkable Protocol on every call).
        self._flow = cast(FlowControlledSink, emit) if hasattr(emit, "wait_flowing") else None
        self._settings = settings
        self._settings_snapshot: Mapping[str, Any] | None = None
        self._nested_call = nested_call
        self._logger_factory = logger
        self._logger: structlog.typing.FilteringBoundLogger | None = None
        self._closed = False
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()

    # -- identity and environment -------------------------------------------------------

    @property
    def cwd(self) -> str:
        """The caller's working directory (the runtime's when the caller gave none)."""
        return self.caller.cwd or os.getcwd()

    @property
    def workspace(self) -> str | None:
        """The directory the caller's session was opened for (`meith mcp --cwd`, the first
        frame of a socket session, `Runtime.open_session`), fixed by the host for the whole
        session: where an agent's reads reach. Unlike `cwd` no frame can change it. None: the
        session was opened for no directory (only its grants' directories are readable)."""
        return self.caller.workspace

    def caller_holds(self, *capabilities: str, cwd: str) -> bool:
        """Whether the caller already holds `capabilities` for this tool in directory `cwd`.

        For a tool about to do more than it declares (a git commit running repository hooks
        needs `starts-process`): uses no grant, asks nobody. False when the host gave no check.
        """
        return self.held_grant(*capabilities, cwd=cwd) is not None

    def held_grant(self, *capabilities: str, cwd: str) -> HeldGrant | None:
        """`caller_holds`, with the directory the holding grant is confined to: what the tool
        then starts must run confined there as a process started under that grant would
        (`Confinement.beneath(held.scope, ...)` when `held.scope` is not None)."""
        if self._grant_check is None:
            return None
        return self._grant_check(tuple(capabilities), cwd)

    def refusal_recorder(self, outcome: str = "NETWORK_REFUSED") -> Callable[[str, str], None]:
        """`record(subject, reason)`: write a refusal made on behalf of what this call started
        (a confined process's connection to a destination its grant does not name) to the
        audit trail, as this call's caller and tool, coalesced against floods. Usable after
        the call was answered; a no-op without an audit trail."""
        sink = self._refusals
        if sink is None:
            return lambda subject, reason: None
        return lambda subject, reason: sink(subject, reason, outcome)

    def child_environment(self) -> dict[str, str]:
        """The variables to give a process this call starts so that it can call tools back as
        this caller: for the local user `MEITH_HOME`, `MEITH_SOCKET` and the user's
        `MEITH_SESSION_TOKEN` (the runtime refuses a process it started that brings no token);
        for an agent session
        `MEITH_SOCKET` and `MEITH_SESSION_TOKEN` (the child's calls are that session's, with its
        grants, never approving anything, refused once it ends); nothing for other callers or
        without a socket. Give none of them to a process that cannot reach the socket."""
        return self._child_env() if self._child_env is not None else {}

    @property
    def settings(self) -> Mapping[str, Any]:
        """Read-only view of `$MEITH_HOME/settings.json` as of this call's first look at it
        (one consistent snapshot for the whole call)."""
        if self._settings_snapshot is None:
            self._settings_snapshot = self._settings()
        return self._settings_snapshot

    @property
    def logger(self) -> structlog.typing.FilteringBoundLogger:
        """A structlog logger bound with requestId, sessionId and toolName."""
        if self._logger is None:
            self._logger = self._logger_factory()
        return self._logger

    # -- cancellation -------------------------------------------------------------------

    @property
    def cancel_token(self) -> CancelToken:
        return self._cancel

    @property
    def cancelled(self) -> bool:
        """True once the call was cancelled, timed out, or the runtime is shutting down."""
        return self._cancel.is_set()

    async def wait_cancelled(self) -> None:
        """Return when the call is cancelled (for streaming tools that run until then)."""
        await self._cancel.wait()

    def raise_if_cancelled(self) -> None:
        """For sync tools polling between steps."""
        if self._cancel.is_set():
            raise ToolError(ErrorCode.CANCELLED, f'Tool "{self.tool_name}" was cancelled')

    # -- events -------------------------------------------------------------------------

    def progress(self, message: str | None = None, fraction: float | None = None) -> None:
        event: EventDict = {"kind": "progress"}
        if message is not None:
            event["message"] = str(message)
        if fraction is not None and not math.isnan(fraction):
            event["fraction"] = min(1.0, max(0.0, float(fraction)))
        self._send(event)

    def log(self, level: str, message: str) -> None:
        if level not in LOG_LEVELS:
            level = "warn" if level == "warning" else "info"
        self._send({"kind": "log", "level": level, "message": str(message)})

    def partial_text(self, text: str) -> None:
        self._send({"kind": "partial_text", "text": str(text)})

    def artifact(
        self,
        mime_type: str,
        name: str | None = None,
        path: str | os.PathLike[str] | None = None,
        data: bytes | None = None,
    ) -> None:
        event: EventDict = {"kind": "artifact", "mimeType": mime_type}
        if name is not None:
            event["name"] = name
        if path is not None:
            event["path"] = os.fspath(path)
        if data is not None:
            event["dataBase64"] = base64.b64encode(data).decode("ascii")
        self._send(event)

    @property
    def events_congested(self) -> bool:
        """True while the caller is not keeping up with this call's events (a socket client
        reading slower than the tool emits). Always False in-process."""
        return self._flow is not None and self._flow.congested

    async def wait_events_flowing(self) -> None:
        """Return once the caller has caught up with this call's events (at once if it has)."""
        if self._flow is not None and self._flow.congested:
            await self._flow.wait_flowing()

    def _send(self, event: EventDict) -> None:
        if self._closed or self._emit is None:
            return
        if threading.get_ident() == self._loop_thread:
            self._deliver(event)
        else:
            try:
                self._loop.call_soon_threadsafe(self._deliver, event)
            except RuntimeError:
                pass  # loop closed: the call was answered long ago

    def _deliver(self, event: EventDict) -> None:
        if not self._closed and self._emit is not None:
            try:
                self._emit(event)
            except Exception as exc:
                # The sink is the caller's (e.g. a socket that went away): its failure must
                # not fail the tool. Later events of this call are dropped.
                self._emit = None
                self.logger.warning("event sink failed; dropping further events", error=repr(exc))

    def _close(self) -> None:
        """Called by the pipeline once the call is answered: later events are dropped."""
        self._closed = True

    # -- calling other tools ------------------------------------------------------------

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, *, timeout_ms: int | None = None
    ) -> ToolResult:
        """Call another tool as caller `plugin` with this tool's plugin id.

        The nested call is cancelled with this one and goes through the full pipeline
        (validation, both permission gates, audit).
        """
        caller = CallerInfo.for_plugin(
            self.plugin_id, cwd=self.caller.cwd, workspace=self.caller.workspace
        )
        token = CancelToken()
        unlink = token.link(self._cancel)
        try:
            return await self._nested_call(caller, name, dict(arguments or {}), timeout_ms, token)
        finally:
            unlink()

    def call_tool_blocking(
        self, name: str, arguments: dict[str, Any] | None = None, *, timeout_ms: int | None = None
    ) -> ToolResult:
        """`call_tool` for sync tools running in a worker thread."""
        if threading.get_ident() == self._loop_thread:
            raise RuntimeError("call_tool_blocking is for sync tools; await call_tool instead")
        future = asyncio.run_coroutine_threadsafe(
            self.call_tool(name, arguments, timeout_ms=timeout_ms), self._loop
        )
        return future.result()
