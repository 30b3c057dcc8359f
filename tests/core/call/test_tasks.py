"""`start_task` starts tasks eagerly (3.12's `eager_start`, or the 3.11 equivalent on asyncio's
own loop) and `TaskSet` keeps them: what callers of both rely on."""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

import anyio
import pytest

from meith_core.call.tasks import TaskSet, start_task

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_the_first_step_runs_before_start_task_returns() -> None:
    steps: list[str] = []

    async def work() -> str:
        steps.append("first")
        return "done"

    task = start_task(work())
    assert steps == ["first"]
    assert task.done()
    assert task.result() == "done"


async def test_inside_the_step_the_task_is_current_and_the_caller_is_current_again_after() -> None:
    outer = asyncio.current_task()
    seen: list[Any] = []

    async def work() -> None:
        seen.append(asyncio.current_task())

    task = start_task(work())
    assert seen == [task]
    assert asyncio.current_task() is outer


async def test_a_task_that_awaits_goes_on_as_an_ordinary_task() -> None:
    gate = asyncio.Event()
    steps: list[str] = []

    async def work() -> int:
        steps.append("before")
        await gate.wait()
        steps.append("after")
        return 7

    task = start_task(work())
    assert steps == ["before"]
    assert not task.done()
    gate.set()
    assert await task == 7
    assert steps == ["before", "after"]


async def test_a_task_started_inside_an_eager_task_nests() -> None:
    order: list[str] = []

    async def inner() -> None:
        order.append(f"inner in {asyncio.current_task() is not None}")

    async def outer() -> None:
        me = asyncio.current_task()
        order.append("outer")
        start_task(inner())
        assert asyncio.current_task() is me
        order.append("outer again")

    await start_task(outer())
    assert order == ["outer", "inner in True", "outer again"]


async def test_an_exception_ends_up_in_the_task() -> None:
    async def work() -> None:
        raise ValueError("boom")

    task = start_task(work())
    assert task.done()
    with pytest.raises(ValueError, match="boom"):
        task.result()


async def test_the_step_runs_in_a_copy_of_the_callers_context() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    var.set("caller")
    seen: list[str] = []

    async def work() -> None:
        seen.append(var.get())
        var.set("task")

    start_task(work())
    assert seen == ["caller"]
    assert var.get() == "caller"


async def test_anyio_works_inside_an_eager_task() -> None:
    """anyio's cancel scopes look up the current task: it must be the new one."""

    async def work() -> str:
        with anyio.move_on_after(5):
            await anyio.sleep(0)
            return await anyio.to_thread.run_sync(lambda: "from a thread")
        return "timed out"

    assert await start_task(work()) == "from a thread"


async def test_started_from_a_plain_callback_with_no_current_task() -> None:
    """The socket's `data_received` runs outside any task."""
    loop = asyncio.get_running_loop()
    result: asyncio.Future[Any] = loop.create_future()

    async def work() -> None:
        result.set_result((asyncio.current_task() is not None, "ran"))

    def callback() -> None:
        assert asyncio.current_task() is None
        start_task(work())
        assert result.done()  # eagerly, inside the callback
        assert asyncio.current_task() is None

    loop.call_soon(callback)
    assert await result == (True, "ran")


async def test_a_task_set_holds_running_tasks_and_forgets_finished_ones() -> None:
    tasks = TaskSet("test")
    gate = asyncio.Event()

    async def wait() -> None:
        await gate.wait()

    async def quick() -> None:
        return None

    tasks.spawn(quick())
    running = tasks.spawn(wait())
    assert len(tasks) == 1
    assert list(tasks) == [running]
    gate.set()
    assert await tasks.wait(5)
    assert len(tasks) == 0
