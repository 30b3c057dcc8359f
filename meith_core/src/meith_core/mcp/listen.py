"""`subscriptions/listen` (2026-07-28): the SDK's list-changed events, and the tasks
extension's `notifications/tasks` for the task IDs a stream asks for (`taskIds`).

As the SDK's own handler does: the acknowledgement is the first frame and names what will be
sent (the subset asked for: of the task IDs, only this session's), every frame carries the
subscription ID, nothing is sent that was not asked for, and a stream whose client stopped
reading is ended at `MAX_BUFFERED` frames (it re-listens and refetches). Task IDs need the
extension declared on the listen request itself (-32021 otherwise).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectSendStream
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import SUBSCRIPTION_ID_META_KEY, SubscriptionBus
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ServerEvent, event_matches, event_to_notification
from pydantic import BaseModel

from meith_core.mcp import tasks
from meith_core.mcp.tasks import Task, TaskStore

MAX_STREAMS: Final = 256
MAX_BUFFERED: Final = 1024
TASK_NOTIFICATION: Final = "notifications/tasks"


class Notice(BaseModel):
    """A notification of an extension (the SDK types only the core ones)."""

    method: str
    params: dict[str, Any]


def _task_ids(notifications: types.SubscriptionFilter) -> list[str] | None:
    raw = (notifications.model_extra or {}).get("taskIds")
    if raw is None:
        return None
    if not isinstance(raw, list) or not all(isinstance(t, str) for t in raw):
        raise MCPError(code=types.INVALID_PARAMS, message="taskIds must be a list of task IDs")
    return raw


class Listen:
    def __init__(self, bus: SubscriptionBus, store: TaskStore, owner: Callable[[Any], str]) -> None:
        self._bus = bus
        self._store = store
        self._owner = owner
        self._streams: set[MemoryObjectSendStream[Any]] = set()

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        subscription_id = ctx.request_id
        if subscription_id is None:
            raise MCPError(types.INVALID_REQUEST, "subscriptions/listen requires a request id")
        wanted = params.notifications
        task_ids = _task_ids(wanted)
        if task_ids is not None:
            tasks.require(ctx)
        if len(self._streams) >= MAX_STREAMS:
            raise MCPError(types.INTERNAL_ERROR, "Subscription limit reached")
        owned = frozenset(self._store.owned(self._owner(ctx), task_ids or []))
        honored = types.SubscriptionFilter(
            tools_list_changed=True if wanted.tools_list_changed else None,
            prompts_list_changed=True if wanted.prompts_list_changed else None,
            resources_list_changed=True if wanted.resources_list_changed else None,
            resource_subscriptions=list(wanted.resource_subscriptions or []) or None,
            **({"taskIds": sorted(owned)} if task_ids is not None else {}),
        )
        uris = frozenset(honored.resource_subscriptions or ())
        meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: subscription_id}
        send, recv = anyio.create_memory_object_stream[Any](MAX_BUFFERED)

        def put(item: Any) -> None:
            try:
                send.send_nowait(item)
            except anyio.ClosedResourceError:
                pass
            except anyio.WouldBlock:  # the client stopped reading: the stream ends
                self._streams.discard(send)
                send.close()

        def on_event(event: ServerEvent) -> None:
            if event_matches(honored, uris, event):
                put(event)

        def on_task(task: Task) -> None:
            if task.task_id in owned:
                put(Notice(method=TASK_NOTIFICATION, params={**task.wire(), "_meta": meta}))

        stops = [self._bus.subscribe(on_event), self._store.listen(on_task)]
        self._streams.add(send)
        try:
            await ctx.session.send_notification(
                types.SubscriptionsAcknowledgedNotification(
                    params=types.SubscriptionsAcknowledgedNotificationParams(
                        notifications=honored, _meta=meta
                    )
                ),
                related_request_id=subscription_id,
            )
            async for item in recv:
                notice = item if isinstance(item, Notice) else event_to_notification(item, meta)
                await ctx.session.send_notification(notice, related_request_id=subscription_id)  # type: ignore[arg-type]
        finally:
            for stop in stops:
                stop()
            self._streams.discard(send)
            send.close()
            recv.close()
        return types.SubscriptionsListenResult(_meta=meta)

    def close(self) -> None:
        """End every stream gracefully (each sends its final result)."""
        for stream in list(self._streams):
            stream.close()
