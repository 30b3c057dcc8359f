"""The Python clients: finding the runtime, the blocking Client and the AsyncClient."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from meith_core import MeithHome, ToolResult
from meith_core.base.instances import resolve_target
from meith_core.client import AsyncClient, Client, ConnectError


def test_target_resolution_prefers_socket_then_instance_then_env_then_newest_then_config(
    tmp_path, monkeypatch
) -> None:
    home = MeithHome(tmp_path / "home").ensure()
    monkeypatch.delenv("MEITH_SOCKET", raising=False)
    assert resolve_target(home).source == "default"
    home.config_path.write_text(json.dumps({"socketPath": "/from/config.sock"}))
    assert resolve_target(home).socket_path == "/from/config.sock"
    # Live instances: the pid must exist and the socket path must be a socket.
    import socket as socketlib

    sockets = []
    for name, started in (("old", 1), ("new", 2)):
        path = str(tmp_path / f"{name}.sock")
        s = socketlib.socket(socketlib.AF_UNIX)
        s.bind(path)
        sockets.append(s)
        home.instances_dir.mkdir(exist_ok=True)
        pid = os.getpid() if name == "new" else os.getppid()
        (home.instances_dir / f"{pid}.json").write_text(
            json.dumps({"pid": pid, "socketPath": path, "startedAt": started, "label": name})
        )
    assert resolve_target(home).socket_path == str(tmp_path / "new.sock")
    assert resolve_target(home, instance="old").socket_path == str(tmp_path / "old.sock")
    assert resolve_target(home, instance=str(os.getpid())).socket_path == str(tmp_path / "new.sock")
    monkeypatch.setenv("MEITH_SOCKET", "/from/env.sock")
    assert resolve_target(home).socket_path == "/from/env.sock"
    assert resolve_target(home, socket_path="/explicit.sock").socket_path == "/explicit.sock"
    with pytest.raises(Exception, match='No live instance matches "ghost"'):
        resolve_target(home, instance="ghost")
    for s in sockets:
        s.close()


def test_client_without_a_runtime_says_where_it_looked_and_what_to_do(tmp_path) -> None:
    path = str(tmp_path / "none.sock")
    with pytest.raises(ConnectError) as err:
        Client(path)
    assert str(err.value) == f"No meith runtime is listening at {path}. Start one with: meith serve"


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
    await asyncio.sleep(0.2)
    for conn in list(served.server.connections):
        conn.abort()
    with pytest.raises(Exception, match="Connection closed by runtime"):
        await call
    await client.aclose()
