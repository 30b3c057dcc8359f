"""Events reach the caller's sink in order, and none after the result."""

from __future__ import annotations

import threading
from typing import Any

import anyio
import pytest
from pydantic import TypeAdapter

from meith_core import NO_TIMEOUT, CancelToken, ErrorCode, Runtime, ToolContext
from meith_core.protocol.events import ToolEvent
from tests.core.support import NoArgs, Sink, loop_caught_up, make_tool, wait_until

_event_adapter: TypeAdapter[Any] = TypeAdapter(ToolEvent)


def _emit_all(ctx: ToolContext, n: int) -> None:
    for i in range(n):
        ctx.progress(f"step {i}", i / n)
        ctx.log("info", f"log {i}")
        ctx.partial_text(f"text {i}")
    ctx.artifact("image/png", name="shot.png", path="/tmp/shot.png")
    ctx.artifact("text/plain", data=b"hello")


def _expected(n: int) -> list[str]:
    out = []
    for i in range(n):
        out += [f"step {i}", f"log {i}", f"text {i}"]
    return [*out, "", ""]


@pytest.mark.anyio
@pytest.mark.parametrize("sync", [True, False], ids=["sync-thread", "async"])
async def test_events_arrive_in_order_and_before_the_result(runtime: Runtime, sync: bool) -> None:
    order: list[str] = []

    def chatty_sync(ctx: ToolContext, args: NoArgs) -> str:
        _emit_all(ctx, 200)
        return "done"

    async def chatty_async(ctx: ToolContext, args: NoArgs) -> str:
        _emit_all(ctx, 100)
        await anyio.sleep(0)
        _emit_all(ctx, 100)
        return "done"

    sink = Sink()

    def record(event: dict[str, Any]) -> None:
        order.append("event")
        sink(event)

    runtime.register(make_tool(chatty_sync if sync else chatty_async, name="chatty"))
    result = await runtime.call("chatty", on_event=record)
    order.append("result")
    assert result.content == "done"
    expected = _expected(200) if sync else _expected(100) * 2
    assert sink.texts() == expected
    assert order[-1] == "result"
    assert "result" not in order[:-1]
    for event in sink.events:
        _event_adapter.validate_python(event)  # every event has the wire shape


@pytest.mark.anyio
async def test_event_payloads_have_the_protocol_shape(runtime: Runtime) -> None:
    async def shapes(ctx: ToolContext, args: NoArgs) -> None:
        ctx.progress()
        ctx.progress("half", 0.5)
        ctx.progress(fraction=7)  # clamped into 0..1
        ctx.progress(fraction=float("nan"))  # dropped, not sent as NaN
        ctx.log("warning", "w")  # normalised to warn
        ctx.log("shout", "s")  # unknown level: info
        ctx.log("debug", "d")
        ctx.artifact("text/plain", name="n", data=b"\x00\xff")

    sink = Sink()
    runtime.register(make_tool(shapes))
    await runtime.call("shapes", on_event=sink)
    assert sink.events == [
        {"kind": "progress"},
        {"kind": "progress", "message": "half", "fraction": 0.5},
        {"kind": "progress", "fraction": 1.0},
        {"kind": "progress"},
        {"kind": "log", "level": "warn", "message": "w"},
        {"kind": "log", "level": "info", "message": "s"},
        {"kind": "log", "level": "debug", "message": "d"},
        {"kind": "artifact", "mimeType": "text/plain", "name": "n", "dataBase64": "AP8="},
    ]


@pytest.mark.anyio
async def test_no_event_from_a_sync_tools_thread_arrives_after_the_result(
    runtime: Runtime,
) -> None:
    emitted_first = threading.Event()
    release = threading.Event()
    done = threading.Event()

    def lingering(ctx: ToolContext, args: NoArgs) -> str:
        ctx.progress("first")
        emitted_first.set()
        release.wait(60)
        for i in range(50):
            ctx.progress(f"after {i}")  # the call was answered: these must go nowhere
        done.set()
        return "late"

    runtime.register(make_tool(lingering, timeout_ms=NO_TIMEOUT))
    sink = Sink()
    token = CancelToken()
    results: list[Any] = []
    try:
        async with anyio.create_task_group() as tg:

            async def run() -> None:
                results.append(await runtime.call("lingering", on_event=sink, cancel=token))

            tg.start_soon(run)
            await wait_until(lambda: sink.texts() == ["first"], what="the first event")
            token.cancel()
        assert results[0].error.code is ErrorCode.CANCELLED
        release.set()
        await wait_until(done.is_set, what="the thread to finish")
        await loop_caught_up()
        assert sink.texts() == ["first"]
    finally:
        release.set()


@pytest.mark.anyio
async def test_no_event_from_a_timed_out_async_tool_arrives_after_the_result(
    runtime: Runtime,
) -> None:
    release = anyio.Event()
    done = anyio.Event()

    async def stubborn(ctx: ToolContext, args: NoArgs) -> None:
        ctx.progress("first")
        while not release.is_set():
            try:
                await anyio.sleep(0.01)
            except BaseException:
                continue
        ctx.progress("after")
        ctx.partial_text("after")
        done.set()

    runtime.register(make_tool(stubborn, timeout_ms=20))
    sink = Sink()
    try:
        result = await runtime.call("stubborn", on_event=sink)
        assert result.error.code is ErrorCode.TIMEOUT
        release.set()
        await done.wait()
        await loop_caught_up()
        assert "after" not in sink.texts()
    finally:
        release.set()


@pytest.mark.anyio
async def test_a_sink_that_raises_does_not_fail_the_tool(runtime: Runtime) -> None:
    def broken_sink(event: dict[str, Any]) -> None:
        raise BrokenPipeError("peer went away")

    def sync_chatty(ctx: ToolContext, args: NoArgs) -> str:
        ctx.progress("x")
        return "sync done"

    async def async_chatty(ctx: ToolContext, args: NoArgs) -> str:
        ctx.progress("x")
        return "async done"

    runtime.register([make_tool(sync_chatty), make_tool(async_chatty)])
    assert (await runtime.call("async_chatty", on_event=broken_sink)).content == "async done"
    assert (await runtime.call("sync_chatty", on_event=broken_sink)).content == "sync done"


@pytest.mark.anyio
async def test_events_without_a_sink_are_dropped_quietly(runtime: Runtime) -> None:
    def chatty(ctx: ToolContext, args: NoArgs) -> str:
        _emit_all(ctx, 5)
        return "ok"

    runtime.register(make_tool(chatty))
    assert (await runtime.call("chatty")).content == "ok"
