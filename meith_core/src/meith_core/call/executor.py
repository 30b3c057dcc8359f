"""The executor: runs one tool under its deadline and its caller's cancellation.

The tool runs in a task of its own (an async tool) or in a worker thread (a sync tool), raced
against the deadline and the cancel token, so a tool that swallows cancellation or blocks its
thread cannot hold the answer back: the executor answers TIMEOUT or CANCELLED and drops the
tool's late result. Abandoned tasks are kept (`drain` waits for them at shutdown).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import anyio
import anyio.to_thread
from pydantic import BaseModel

from meith_core.base.cancel import CancelToken
from meith_core.call.context import ToolContext
from meith_core.call.tasks import TaskSet, start_task
from meith_core.call.tooldef import ToolDefinition
from meith_core.protocol.errors import ErrorCode
from meith_core.protocol.results import ToolResult, error_result

#: After a cancel, how long a cooperative tool may take to return its own result
#: (a log stream answering `{attached: true}`) before the executor answers CANCELLED.
CANCEL_GRACE_S: Final = 0.25
WORKER_THREADS: Final = 64


@dataclass(slots=True)
class Outcome:
    """What the tool itself did: returned `value` or raised `exc`."""

    value: Any = None
    exc: BaseException | None = None


class Executor:
    def __init__(self, *, cancel_grace_s: float = CANCEL_GRACE_S) -> None:
        self.cancel_grace_s = cancel_grace_s
        self._tasks = TaskSet("tool")
        self._active: dict[int, CancelToken] = {}
        self._limiter: anyio.CapacityLimiter | None = None

    @property
    def in_flight(self) -> int:
        return len(self._active)

    def cancel_all(self, reason: str) -> int:
        tokens = list(self._active.values())
        for token in tokens:
            token.cancel(reason)
        return len(tokens)

    async def drain(self, timeout_s: float) -> bool:
        """Wait (bounded) for abandoned tool tasks to finish their cleanup."""
        return await self._tasks.wait(timeout_s)

    async def run(
        self,
        defn: ToolDefinition,
        ctx: ToolContext,
        args: BaseModel,
        token: CancelToken,
        timeout_ms: int | None,
    ) -> Outcome | ToolResult:
        """The tool's Outcome, or the executor's own answer (TIMEOUT, CANCELLED)."""
        if token.is_set():
            return error_result(ErrorCode.CANCELLED, f'Tool "{defn.name}" was cancelled')
        key = id(token)
        self._active[key] = token
        try:
            return await self._race(defn, ctx, args, token, timeout_ms)
        finally:
            del self._active[key]

    async def _race(
        self,
        defn: ToolDefinition,
        ctx: ToolContext,
        args: BaseModel,
        token: CancelToken,
        timeout_ms: int | None,
    ) -> Outcome | ToolResult:
        # One future settled by whichever comes first: the tool's end, a cancel (from any
        # thread), or the deadline. Cheaper than racing tasks with asyncio.wait.
        loop = asyncio.get_running_loop()
        wake: asyncio.Future[None] = loop.create_future()

        def settle(_: object = None) -> None:
            if not wake.done():
                wake.set_result(None)

        # The tool's task settles the race itself as it ends, however it ends (one event-loop
        # iteration sooner than a done-callback, and no callback to schedule). While the race
        # runs, this frame holds the task; only a task abandoned at the deadline or on a cancel
        # joins the task set, which keeps it until it ends.
        if defn.is_async:
            task = start_task(_invoke_async(defn, ctx, args, settle))
        else:
            if self._limiter is None:
                self._limiter = anyio.CapacityLimiter(WORKER_THREADS)
            task = start_task(_invoke_in_thread(defn, ctx, args, self._limiter, settle))
        if task.done():
            # Finished in its first step (an eager task whose tool never awaited): no race.
            return _outcome_of(defn, task)

        def on_cancel() -> None:
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits
                loop.call_soon_threadsafe(settle)

        unsubscribe = token.add_callback(on_cancel)
        timer = None if timeout_ms is None else loop.call_later(timeout_ms / 1000, settle)
        try:
            await wake
            if not task.done() and token.is_set():
                # Cancelled: a cooperative tool gets a moment to answer for itself.
                done, _ = await asyncio.wait({task}, timeout=self.cancel_grace_s)
                if task not in done:
                    task.cancel()
                    self._tasks.add(task)
                    reason = f": {token.reason}" if token.reason not in ("", "cancelled") else ""
                    return error_result(
                        ErrorCode.CANCELLED, f'Tool "{defn.name}" was cancelled{reason}'
                    )
            elif not task.done():
                token.cancel("timeout")
                task.cancel()
                self._tasks.add(task)
                return error_result(
                    ErrorCode.TIMEOUT, f'Tool "{defn.name}" timed out after {timeout_ms}ms'
                )
        except asyncio.CancelledError:
            token.cancel("caller cancelled")
            task.cancel()
            self._tasks.add(task)
            raise
        finally:
            unsubscribe()
            if timer is not None:
                timer.cancel()
        return _outcome_of(defn, task)


def _outcome_of(defn: ToolDefinition, task: asyncio.Task[Outcome]) -> Outcome | ToolResult:
    if task.cancelled():
        return error_result(ErrorCode.TOOL_FAILED, f'Tool "{defn.name}" was cancelled from inside')
    return task.result()


async def _invoke_async(
    defn: ToolDefinition, ctx: ToolContext, args: BaseModel, done: Callable[[], None]
) -> Outcome:
    try:
        return Outcome(value=await defn.func(ctx, args))
    except asyncio.CancelledError:
        raise
    except BaseException as exc:  # SystemExit/KeyboardInterrupt from a tool must not end the host
        return Outcome(exc=exc)
    finally:
        done()


async def _invoke_in_thread(
    defn: ToolDefinition,
    ctx: ToolContext,
    args: BaseModel,
    limiter: anyio.CapacityLimiter,
    done: Callable[[], None],
) -> Outcome:
    def run() -> Outcome:
        try:
            return Outcome(value=defn.func(ctx, args))
        except BaseException as exc:
            return Outcome(exc=exc)

    try:
        # abandon_on_cancel: a thread cannot be interrupted; the answer must not wait for it.
        return await anyio.to_thread.run_sync(run, abandon_on_cancel=True, limiter=limiter)
    finally:
        done()
