"""The tasks extension (`io.modelcontextprotocol/tasks`, 2026-07-28): a call that waits for a
person, or runs longer than `TASK_AFTER_S`, answers at once with a task the agent polls
(`tasks/get`), answers (`tasks/update`), cancels (`tasks/cancel`) or listens to
(`subscriptions/listen` with `taskIds`: `notifications/tasks`).

Only for a request whose client capabilities name the extension; any other client gets the
call's result as before. A task's approval can be answered by the agent's client (its
`inputRequests` carry the elicitation), in `meith ui` or at the `meith serve` prompt, whichever
comes first. Its status says where it is: "waiting for approval by the user" (its client is
asked) or where else a person is asked and how long it waits, "running", "done". Tasks live in the bridge's memory, bound to the agent session that started them; a task
ID is unguessable and another session is told it does not exist.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_NAME_HEADER, decode_header_value
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field

from meith_core.base.envknobs import seconds_from_env
from meith_core.mcp import call_approval
from meith_core.mcp.link import Answer, CallHandle
from meith_core.protocol.call_approval import APPROVED, WAITING_FOR_APPROVAL, awaits_approval

TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
#: A call still running after this long becomes a task (`MEITH_MCP_TASK_AFTER_S`).
TASK_AFTER_S = seconds_from_env(os.environ, "MEITH_MCP_TASK_AFTER_S", 1.0, 3600.0)
#: How long a task is kept from its creation (its result too); then it is forgotten.
TASK_TTL_MS: Final = 3_600_000
#: The polling interval suggested to clients.
POLL_INTERVAL_MS: Final = 1000
#: Tasks kept at once per bridge; past this, the oldest finished ones go first.
MAX_TASKS: Final = 1000
RUNNING = "running"
DONE = "done"
TERMINAL = frozenset({"completed", "failed", "cancelled"})


def negotiated(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether this request's client declared the tasks extension (2026-07-28 only: a
    handshake-era wire has no result shape for a task)."""
    caps = ctx.session.client_capabilities
    return (
        ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        and caps is not None
        and TASKS_EXTENSION in (caps.extensions or {})
    )


def require(ctx: ServerRequestContext[Any, Any], task_id: str | None = None) -> None:
    """The extension's methods answer only a client that declares it (-32021 otherwise); over
    HTTP, `Mcp-Name` names the task (-32020 otherwise), as the SDK checks a tool's name."""
    if not negotiated(ctx):
        raise MCPError(
            code=types.MISSING_REQUIRED_CLIENT_CAPABILITY,
            message=f"Missing required client capability: extensions.{TASKS_EXTENSION}",
            data={"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
        )
    headers = getattr(ctx.request, "headers", None)
    named = decode_header_value(headers.get(MCP_NAME_HEADER)) if headers is not None else task_id
    if task_id is not None and named != task_id:
        raise MCPError(
            code=types.HEADER_MISMATCH,
            message=f"{MCP_NAME_HEADER} header does not match the request body's taskId",
        )


class TaskParams(types.RequestParams):
    task_id: str = Field(max_length=200)


class TaskUpdateParams(TaskParams):
    input_responses: dict[str, Any] = Field(default_factory=dict)


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z")


@dataclass
class Task:
    task_id: str
    owner: str
    created: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)
    status: str = "working"
    message: str | None = RUNNING
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    #: Outstanding input requests (an approval's elicitation), by key, and their answers.
    inputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    answers: dict[str, asyncio.Future[Answer]] = field(default_factory=dict)
    asked: int = 0
    cancel_requested: bool = False
    #: Stops the runtime call (set by the runner once it drives one).
    cancel_call: Callable[[], None] | None = None

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def wire(self) -> dict[str, Any]:
        """The task as `tasks/get` and `notifications/tasks` give it (a DetailedTask)."""
        out: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": _iso(self.created),
            "lastUpdatedAt": _iso(self.updated),
            "ttlMs": TASK_TTL_MS,
            "pollIntervalMs": POLL_INTERVAL_MS,
        }
        if self.message:
            out["statusMessage"] = self.message
        if self.status == "input_required":
            out["inputRequests"] = dict(self.inputs)
        elif self.status == "completed" and self.result is not None:
            out["result"] = self.result
        elif self.status == "failed" and self.error is not None:
            out["error"] = self.error
        return out

    def created_result(self) -> dict[str, Any]:
        """The `CreateTaskResult` a `tools/call` answers with: the task itself, flat."""
        head = self.wire()
        for key in ("inputRequests", "result", "error"):
            head.pop(key, None)
        return {"resultType": "task", **head}


class TaskStore:
    """The bridge's tasks; every change is told to the listeners (`notifications/tasks`)."""

    def __init__(self) -> None:
        self._tasks: dict[str, Task] = {}
        self._listeners: dict[object, Callable[[Task], None]] = {}

    def create(self, owner: str) -> Task:
        self._expire()
        task = Task(secrets.token_urlsafe(24), owner)
        self._tasks[task.task_id] = task
        return task

    def get(self, task_id: str, owner: str) -> Task:
        """The caller's task, or -32602 (unknown, expired, or another session's)."""
        self._expire()
        task = self._tasks.get(task_id)
        if task is None or task.owner != owner:
            raise MCPError(
                code=types.INVALID_PARAMS, message="Failed to retrieve task: Task not found"
            )
        return task

    def owned(self, owner: str, task_ids: list[str]) -> list[str]:
        return [t for t in task_ids if (task := self._tasks.get(t)) and task.owner == owner]

    def listen(self, listener: Callable[[Task], None]) -> Callable[[], None]:
        token = object()
        self._listeners[token] = listener

        def stop() -> None:
            self._listeners.pop(token, None)

        return stop

    def update(self, task: Task, status: str, message: str | None, **payload: Any) -> None:
        """A new status (told to the listeners); the same status again is no change."""
        if task.terminal or (status, message) == (task.status, task.message):
            return
        task.status, task.message, task.updated = status, message, time.time()
        task.result = payload.get("result")
        task.error = payload.get("error")
        for listener in list(self._listeners.values()):
            listener(task)

    def ask(self, task: Task, request: dict[str, Any], answer: asyncio.Future[Answer]) -> None:
        """The call waits for an approval the agent's client may give: an input request."""
        task.asked += 1
        key = f"approval-{task.asked}"  # never reused within a task
        task.inputs[key] = call_approval.elicit_request(request).model_dump(
            by_alias=True, mode="json", exclude_none=True
        )
        task.answers[key] = answer
        answer.add_done_callback(lambda _: self._settled(task, key))
        self.update(task, "input_required", WAITING_FOR_APPROVAL)

    def _settled(self, task: Task, key: str) -> None:
        """Answered (here, or elsewhere and withdrawn): the call goes on."""
        task.inputs.pop(key, None)
        task.answers.pop(key, None)
        if not task.inputs and task.status == "input_required":
            self.update(task, "working", RUNNING)

    def respond(self, task: Task, responses: dict[str, Any]) -> None:
        """`tasks/update`: answers to outstanding keys; any other key is ignored."""
        for key, raw in responses.items():
            answer = task.answers.get(key)
            if answer is None or answer.done():
                continue
            try:
                elicited: types.ElicitResult | None = types.ElicitResult.model_validate(raw)
            except ValueError:
                elicited = None
            answer.set_result(
                (call_approval.decision_of(elicited), call_approval.answered_by(elicited))
            )

    def cancel(self, task: Task) -> None:
        """`tasks/cancel`: cooperative; the call is stopped and the task ends `cancelled`."""
        if task.terminal:
            return
        task.cancel_requested = True
        for answer in list(task.answers.values()):
            if not answer.done():
                answer.set_result((call_approval.DENY, "the agent, which cancelled the task"))
        if task.cancel_call is not None:
            task.cancel_call()

    def __iter__(self) -> Iterator[Task]:
        return iter(list(self._tasks.values()))

    def _expire(self) -> None:
        now = time.time()
        for task_id, task in list(self._tasks.items()):
            if task.terminal and now - task.created > TASK_TTL_MS / 1000:
                del self._tasks[task_id]
        finished = [t for t in self._tasks.values() if t.terminal]
        for task in sorted(finished, key=lambda t: t.updated)[
            : max(0, len(self._tasks) - MAX_TASKS)
        ]:
            del self._tasks[task.task_id]


def waits_for_a_person(item: tuple[str, Any]) -> bool:
    """Whether a call's queued item says it now waits for a person (an approval request to
    answer, or the runtime saying it asks the user elsewhere): it becomes a task at once."""
    kind, payload = item
    return kind == "approval" or (kind == "event" and awaits_approval(payload))


def _said(event: Any) -> str | None:
    if not isinstance(event, dict) or event.get("kind") != "progress":
        return None
    message = event.get("message")
    return message if isinstance(message, str) else None


def apply(
    store: TaskStore,
    task: Task,
    item: tuple[str, Any],
    finish: Callable[[dict[str, Any], list[dict[str, Any]]], types.CallToolResult],
    artifacts: list[dict[str, Any]],
) -> bool:
    """One queued item of the call into the task's status; True once the task has ended.
    Progress and log events go nowhere: a task tells only its status."""
    kind, payload = item
    if kind == "approval":
        request, answer = payload
        store.ask(task, request, answer)
    elif kind == "event":
        said = _said(payload)
        if payload.get("kind") == "artifact":
            artifacts.append(payload)
        elif said is not None and awaits_approval(payload) and not task.inputs:
            store.update(task, "working", said)  # where a person is asked, how long it waits
        elif said == APPROVED and not task.inputs:
            store.update(task, "working", RUNNING)
    elif kind == "result":
        if task.cancel_requested:
            store.update(task, "cancelled", "cancelled by the agent")
        else:
            result = finish(payload.to_wire(), artifacts)
            dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
            store.update(task, "completed", DONE, result=dumped)
        return True
    else:
        message = str(getattr(payload, "message", payload))
        store.update(
            task, "failed", message, error={"code": types.INTERNAL_ERROR, "message": message}
        )
        return True
    return False


async def run(
    store: TaskStore,
    task: Task,
    call: CallHandle,
    finish: Callable[[dict[str, Any], list[dict[str, Any]]], types.CallToolResult],
    artifacts: list[dict[str, Any]],
) -> None:
    """Drive a call that became a task to its end."""
    while not apply(store, task, await call.queue.get(), finish, artifacts):
        pass
