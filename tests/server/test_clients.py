"""The Python clients against a real socket server: the blocking Client and the AsyncClient."""

from __future__ import annotations

import asyncio

import pytest

from meith_core import ToolResult
from meith_core.client import AsyncClient, Client
from tests.server.conftest import until


@pytest.mark.anyio
async def test_sync_client_calls_lists_and_returns_tool_results(served) -> None:
    def work() -> tuple[ToolResult, list[dict], list[str]]:
        with Client(served.socket) as client:
            events: list[dict] = []
            result = client.call("probe_stream", {"count": 2}, on_event=events.append)
            names = [t["name"] for t in client.list_tools()]
            return result, events, names

    result, events, names = await asyncio.to_thread(work)
    assert isinstance(result, ToolResult)
    assert result.content == "done"
    assert [e["kind"] for e in events][:3] == ["progress", "log", "partial_text"]
    assert "probe_echo" in names


@pytest.mark.anyio
async def test_async_client_runs_many_calls_at_once_on_one_connection(served) -> None:
    async with await AsyncClient.connect(served.socket) as client:
        results = await asyncio.gather(
            *(client.call("probe_echo", {"value": i}) for i in range(50))
        )
        assert [r.content for r in results] == list(range(50))
        tools = await client.list_tools()
        assert any(t["name"] == "probe_sleep" for t in tools)


@pytest.mark.anyio
async def test_async_client_streams_events_and_cancels(served) -> None:
    async with await AsyncClient.connect(served.socket) as client:
        async with client.stream("probe_stream", {"count": 2}) as events:
            kinds = [event["kind"] async for event in events]
        assert kinds == ["progress", "log", "partial_text"] * 2 + ["artifact"]
        assert events.result is not None
        assert events.result.content == "done"

        async with client.stream(
            "probe_sleep", {"seconds": 60, "marker": "async-cancel"}
        ) as events:
            first = await events.__anext__()
            assert first["kind"] == "progress"
            await events.cancel()
            rest = [e async for e in events]
        assert rest == []
        assert events.result is not None
        assert events.result.content == {"cancelled": True}
        assert served.marks("async-cancel")


@pytest.mark.anyio
async def test_cancelling_an_awaited_async_call_cancels_it_in_the_runtime(served) -> None:
    async with await AsyncClient.connect(served.socket) as client:
        task = asyncio.ensure_future(
            client.call("probe_sleep", {"seconds": 60, "marker": "awaited"})
        )
        for _ in range(200):
            if served.runtime.pipeline.in_flight:
                break
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        for _ in range(200):
            if served.marks("awaited"):
                break
            await asyncio.sleep(0.02)
        assert served.marks("awaited")


@pytest.mark.anyio
async def test_async_client_raises_when_the_runtime_goes_away(served) -> None:
    client = await AsyncClient.connect(served.socket)
    call = asyncio.ensure_future(client.call("probe_sleep", {"seconds": 60}))
    await until(lambda: served.runtime.pipeline.in_flight == 1, "the call to run")
    for conn in list(served.server.connections):
        conn.abort()
    with pytest.raises(Exception, match="Connection closed by runtime"):
        await call
    await client.aclose()
