"""The client side of the tasks extension, for the tests: the MCP SDK's own extension surface
(a `ClientExtension` claiming `resultType: "task"`), and `tasks/get`, `tasks/update`,
`tasks/cancel` sent through the SDK's session as an agent's client sends them."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import anyio
import mcp_types as types
from mcp import ClientSession
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from pydantic import ConfigDict, TypeAdapter

TASKS = "io.modelcontextprotocol/tasks"
TERMINAL = ("completed", "failed", "cancelled")
_ANY = TypeAdapter(dict[str, Any])


class CreatedTask(types.Result):
    """A `CreateTaskResult`: the task, flat."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"]
    task_id: str
    status: str
    status_message: str | None = None


class TaskRef(types.RequestParams):
    task_id: str


class TaskAnswers(TaskRef):
    input_responses: dict[str, Any]


class TasksGet(types.Request[TaskRef, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    name_param: ClassVar[str | None] = "taskId"


class TasksUpdate(types.Request[TaskAnswers, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    name_param: ClassVar[str | None] = "taskId"


class TasksCancel(types.Request[TaskRef, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    name_param: ClassVar[str | None] = "taskId"


async def get(session: ClientSession, task_id: str) -> dict[str, Any]:
    return await session.send_request(TasksGet(params=TaskRef(task_id=task_id)), _ANY)


async def update(session: ClientSession, task_id: str, responses: dict[str, Any]) -> dict[str, Any]:
    params = TaskAnswers(task_id=task_id, input_responses=responses)
    return await session.send_request(TasksUpdate(params=params), _ANY)


async def cancel(session: ClientSession, task_id: str) -> dict[str, Any]:
    return await session.send_request(TasksCancel(params=TaskRef(task_id=task_id)), _ANY)


async def until(
    session: ClientSession, task_id: str, done: Any, *, limit_s: float = 60
) -> dict[str, Any]:
    """Poll `tasks/get` (at the interval the task suggests) until `done(task)` holds."""
    with anyio.fail_after(limit_s):
        while True:
            task = await get(session, task_id)
            if done(task):
                return task
            await anyio.sleep(task.get("pollIntervalMs", 1000) / 1000)


class TasksExtension(ClientExtension):
    """Declares the extension; a task answered to `client.call_tool` is waited on."""

    identifier = TASKS

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self._wait)]

    async def _wait(self, created: CreatedTask, ctx: ClaimContext) -> types.CallToolResult:
        task = await until(ctx.session, created.task_id, lambda t: t["status"] in TERMINAL)
        return types.CallToolResult.model_validate(task.get("result") or {"content": []})
