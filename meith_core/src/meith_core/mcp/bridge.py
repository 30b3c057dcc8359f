"""The MCP server side of the bridge: tools/list and tools/call onto the session's runtime link
(each call's way back is `call_driver`), the tasks extension's methods and
`subscriptions/listen`."""

from __future__ import annotations

import contextlib
import warnings
from typing import Any, cast

import anyio
import anyio.abc
import mcp_types as types
from mcp.server.caching import CacheHint
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import InMemorySubscriptionBus, ToolsListChanged
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from meith_core._version import __version__
from meith_core.base.suggest import close_names
from meith_core.client._core import TransportError
from meith_core.mcp import tasks
from meith_core.mcp.agent_events import EVENTS_EXTENSION, AgentEvents, ListParams, SubscribeParams
from meith_core.mcp.call_driver import CallDriver, trace_context
from meith_core.mcp.content import error_content
from meith_core.mcp.link import CallHandle
from meith_core.mcp.listen import Listen
from meith_core.mcp.profiles import instructions
from meith_core.mcp.sessions import AgentSession, BridgeConfig, BridgeSessions
from meith_core.mcp.tasks import TaskParams, TaskStore, TaskUpdateParams
from meith_core.mcp.tools import offered, to_mcp_tool, why_hidden

#: How long a client may keep `tools/list` and `server/discover` results (2026-07-28 caching
#: hints). Private: they depend on this bridge's selection and workspace. A change before then
#: (a plugin approved, reloaded) is announced as `notifications/tools/list_changed`.
LIST_TTL_MS = 60_000


class _MeithServer(Server[Any]):
    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        # The HTTP transport builds these itself: tools/list_changed must be announced there too.
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True),
            experimental_capabilities,
            extensions,
        )


class Bridge:
    def __init__(self, config: BridgeConfig) -> None:
        self.config = config
        self.sessions = BridgeSessions(config, self._tools_changed, self._on_link)
        self.events = AgentEvents(self.sessions, config.audit_path, lambda: self.task_group)
        self.calls = CallDriver(config)
        self.task_group: anyio.abc.TaskGroup | None = None
        self.bus = InMemorySubscriptionBus()
        self.tasks = TaskStore()
        self.listen = Listen(self.bus, self.tasks, self.sessions.owner)
        warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
        self.server = _MeithServer(
            "meith",
            version=__version__,
            instructions=instructions(config.selection, config.cwd if config.cwd_fixed else None),
            on_list_tools=self._list_tools,
            # A task (a plain dict result) is a shape the SDK's signature does not name.
            on_call_tool=cast(Any, self._call_tool),
            on_subscriptions_listen=self.listen,
            on_set_logging_level=self._set_level,
            cache_hints={
                "tools/list": CacheHint(LIST_TTL_MS, "private"),
                "server/discover": CacheHint(LIST_TTL_MS, "private"),
            },
        )
        # The SDK's default OpenTelemetry middleware costs a span per message; meith has its
        # own audit trail and structured logs for every call.
        self.server.middleware = []
        self.server.extensions = {tasks.TASKS_EXTENSION: {}, EVENTS_EXTENSION: {}}
        self.server.add_request_handler("tasks/get", TaskParams, self._task_get)
        self.server.add_request_handler("tasks/update", TaskUpdateParams, self._task_update)
        self.server.add_request_handler("tasks/cancel", TaskParams, self._task_cancel)
        self.server.add_request_handler("events/list", ListParams, self.events.list_types)
        self.server.add_request_handler("events/poll", SubscribeParams, self._events_poll)
        self.server.add_request_handler("events/stream", SubscribeParams, self._events_stream)

    def init_options(self) -> InitializationOptions:
        return self.server.create_initialization_options()

    async def aclose(self) -> None:
        self.listen.close()
        await self.sessions.aclose()

    def _tools_changed(self, key: str) -> None:
        if self.task_group is not None:
            self.task_group.start_soon(self._announce, key)

    async def _announce(self, key: str) -> None:
        with contextlib.suppress(Exception):
            connection = self.sessions.connection(key)
            if connection is not None:
                await connection.send_tool_list_changed()
            else:
                await self.bus.publish(ToolsListChanged())

    # -- handlers -----------------------------------------------------------------------

    async def _set_level(
        self, ctx: ServerRequestContext[Any, Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        session = await self.sessions.get(ctx)
        session.log_level = params.level
        return types.EmptyResult()

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        session = await self.sessions.get(ctx)
        tools = offered(await session.all_tools(), self.config.selection)
        structured = self.config.structured
        return types.ListToolsResult(
            tools=[to_mcp_tool(d, structured=structured) for d in tools.values()]
        )

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult | dict[str, Any]:
        self.calls.expire_parked()
        if params.request_state is not None:
            return await self.calls.resume(ctx, params)
        session = await self.sessions.get(ctx)
        descriptors = await session.all_tools()
        known = {str(d.get("name")): d for d in descriptors}
        descriptor = known.get(params.name)
        if descriptor is None:
            raise MCPError(code=types.INVALID_PARAMS, message=self._unknown(params.name, known))
        hidden = why_hidden(descriptor, self.config.selection, calling=True)
        if hidden is not None:
            return error_content("PERMISSION_DENIED", f"{hidden}.")
        try:
            call = await self._start(session, params)
        except TransportError:
            # The connection broke before the call was sent: once more on a link that
            # resumes the session.
            session = await self.sessions.get(ctx)
            try:
                call = await self._start(session, params)
            except TransportError as exc:
                return error_content(exc.code, exc.message)
        if tasks.negotiated(ctx) and self.task_group is not None:
            return await self._call_or_task(ctx, session, call)
        return await self.calls.drive(ctx, session, call, [])

    def _on_link(self, session: AgentSession) -> None:
        owner = session.owner

        def observe(call: CallHandle, item: tuple[str, Any]) -> None:
            self.events.observe(owner, call, item)

        session.link.observer = observe

    async def _events_poll(
        self, ctx: ServerRequestContext[Any, Any], params: SubscribeParams
    ) -> dict[str, Any]:
        return await self.events.poll(ctx, params, self.sessions.owner(ctx))

    async def _events_stream(
        self, ctx: ServerRequestContext[Any, Any], params: SubscribeParams
    ) -> dict[str, Any]:
        return await self.events.stream(ctx, params, self.sessions.owner(ctx))

    # -- tasks --------------------------------------------------------------------------

    async def _call_or_task(
        self, ctx: ServerRequestContext[Any, Any], session: AgentSession, call: CallHandle
    ) -> types.CallToolResult | dict[str, Any]:
        """The call's result when it comes within `TASK_AFTER_S` without waiting for a person;
        else a task, answered at once, that the call goes on in."""
        artifacts: list[dict[str, Any]] = []
        first: tuple[str, Any] | None = None
        steps = 0
        try:
            with anyio.move_on_after(tasks.TASK_AFTER_S):
                while True:
                    item = await call.queue.get()
                    kind, payload = item
                    if tasks.waits_for_a_person(item):
                        first = item
                        break
                    if kind == "event":
                        steps += 1
                        await self.calls.event(ctx, session, call, payload, artifacts, steps)
                    elif kind == "result":
                        return self.calls.finish(session, call, payload.to_wire(), artifacts)
                    else:
                        return error_content(payload.code, payload.message)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await session.link.cancel(call)
            raise
        task = self.tasks.create(self.sessions.owner(ctx))
        assert self.task_group is not None
        group = self.task_group

        def cancel_call() -> None:
            group.start_soon(session.link.cancel, call)

        task.cancel_call = cancel_call

        def finish(result: dict[str, Any], found: list[dict[str, Any]]) -> types.CallToolResult:
            return self.calls.finish(session, call, result, found)

        if first is not None:  # said before the answer: the task is born waiting
            tasks.apply(self.tasks, task, first, finish, artifacts)
        group.start_soon(tasks.run, self.tasks, task, call, finish, artifacts)
        return task.created_result()

    async def _task_get(
        self, ctx: ServerRequestContext[Any, Any], params: TaskParams
    ) -> dict[str, Any]:
        tasks.require(ctx, params.task_id)
        return self.tasks.get(params.task_id, self.sessions.owner(ctx)).wire()

    async def _task_update(
        self, ctx: ServerRequestContext[Any, Any], params: TaskUpdateParams
    ) -> dict[str, Any]:
        tasks.require(ctx, params.task_id)
        task = self.tasks.get(params.task_id, self.sessions.owner(ctx))
        self.tasks.respond(task, params.input_responses)
        return {}

    async def _task_cancel(
        self, ctx: ServerRequestContext[Any, Any], params: TaskParams
    ) -> dict[str, Any]:
        tasks.require(ctx, params.task_id)
        self.tasks.cancel(self.tasks.get(params.task_id, self.sessions.owner(ctx)))
        return {}

    def _unknown(self, name: str, known: dict[str, dict[str, Any]]) -> str:
        """`Unknown tool: x.` with the close names, and how to offer one this bridge hides."""
        close = close_names(name, known)
        if not close:
            return f"Unknown tool: {name}. tools/list lists the tools this bridge offers."
        hidden = why_hidden(known[close[0]], self.config.selection)
        return f"Unknown tool: {name}. Did you mean {' or '.join(close)}?" + (
            f" {hidden[0].upper()}{hidden[1:]}." if hidden else ""
        )

    async def _start(
        self, session: AgentSession, params: types.CallToolRequestParams
    ) -> CallHandle:
        # Without --structured the model's text is all that is sent on: the runtime need not
        # encode, send and the bridge decode the content beside it.
        return await session.link.start_call(
            params.name,
            params.arguments or {},
            text_only=not self.config.structured,
            trace=trace_context(params.meta),
        )
