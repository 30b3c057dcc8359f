"""Background tasks in meith_core: one helper, and where asyncio or anyio is used.

The decision, in one place:

- The runtime runs on asyncio. Playwright needs the asyncio loop, and the socket transport sits
  on asyncio's `Protocol` for speed (no stream objects per connection).
- anyio is used where it gives something asyncio lacks: worker threads with a capacity limit
  and abandon-on-cancel (`anyio.to_thread.run_sync`), and locks/cancel scopes inside plugins.
- Tasks that outlive the code that started them (a tool still running after its caller got a
  TIMEOUT, the calls of a connection, a connection's session clean-up) are held in a `TaskSet`,
  never in an ad-hoc `set` with a `discard` done-callback: the set keeps them referenced (asyncio
  keeps only weak references), logs a failure nobody awaited, and can be cancelled or drained
  at shutdown.
- `start_task` starts a task eagerly: its first step runs at once, so a call whose tool
  finishes without awaiting is answered in the event-loop iteration that read it (each
  iteration saved is a `select` and a pass over the ready queue, a large part of a trivial
  call's cost). Python 3.12+ does this itself (`eager_start`). On 3.11, asyncio's own event
  loop gets the same effect: the task is created (which queues its first step), the step is
  taken back off the ready queue and run now, under the same "current task" bookkeeping
  3.12 uses. Any other loop (uvloop...) gets an ordinary task.
"""

from __future__ import annotations

import asyncio
import collections
import sys
from asyncio import tasks as _asyncio_tasks
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

#: Python 3.12 added `eager_start` to the Task constructor.
EAGER_TASKS = sys.version_info >= (3, 12)


def start_task(coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
    """A task for `coro`, eagerly started where supported. Call from a running loop."""
    loop = asyncio.get_running_loop()
    if EAGER_TASKS:
        return asyncio.Task(coro, loop=loop, eager_start=True)  # type: ignore[call-arg,unused-ignore]
    return _start_eagerly_311(loop, coro)


def _start_eagerly_311(
    loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T]
) -> asyncio.Task[T]:
    """Python 3.11 on asyncio's own loop: the task's first step, run now (see the module
    docstring). Anything unexpected leaves the task as an ordinary, already scheduled one."""
    ready = getattr(loop, "_ready", None)
    if type(ready) is not collections.deque:
        return loop.create_task(coro)
    queued = len(ready)
    task = loop.create_task(coro)
    if len(ready) != queued + 1:  # a task factory that does something else: leave it be
        return task
    step: asyncio.Handle = ready.pop()
    # The step enters the task as the loop's current task, which fails while another task is
    # current (we may be inside one): step out of it for the duration, as 3.12 does.
    outer = _asyncio_tasks.current_task(loop)
    if outer is not None:
        _asyncio_tasks._leave_task(loop, outer)
    try:
        step._run()  # runs in the task's context; exceptions end up in the task, as usual
    finally:
        if outer is not None:
            _asyncio_tasks._enter_task(loop, outer)
    return task


class TaskSet:
    """Tasks kept referenced until they end; failures nobody awaited are logged, not lost."""

    __slots__ = ("_name", "_tasks")

    def __init__(self, name: str) -> None:
        self._name = name
        self._tasks: set[asyncio.Future[Any]] = set()

    def spawn(self, coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        task = start_task(coro)
        self.add(task)
        return task

    def add(self, task: asyncio.Future[T]) -> asyncio.Future[T]:
        """Hold an existing task or future until it is done."""
        if not task.done():
            self._tasks.add(task)
            task.add_done_callback(self._done)
        else:
            self._done(task)
        return task

    def _done(self, task: asyncio.Future[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()  # also marks it retrieved: asyncio does not report it again
        if exc is not None:
            import structlog  # only on failure: the client imports this module and stays light

            structlog.get_logger("meith.tasks").error(
                "background task failed",
                tasks=self._name,
                error=repr(exc),
                exc_info=(type(exc), exc, exc.__traceback__),
            )

    def __len__(self) -> int:
        return len(self._tasks)

    def __iter__(self) -> Iterator[asyncio.Future[Any]]:
        return iter(list(self._tasks))

    def cancel(self, msg: str | None = None) -> int:
        """Cancel every task still running; returns how many."""
        pending = [t for t in self._tasks if not t.done()]
        for task in pending:
            task.cancel(msg)
        return len(pending)

    async def wait(self, timeout_s: float | None) -> bool:
        """Wait (bounded) for the tasks to end; True when none is left running."""
        pending = [t for t in self._tasks if not t.done()]
        if not pending:
            return True
        _done, still = await asyncio.wait(pending, timeout=timeout_s)
        return not still
