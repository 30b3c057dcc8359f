"""Connection limits per peer process and the idle timeout, over a real socket."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("server_options", [{"max_connections_per_peer": 3}])
async def test_one_process_cannot_take_more_than_its_share_of_connections(
    served, server_options
) -> None:
    kept = [await served.connect() for _ in range(3)]
    refused = await served.connect()
    frame = await refused.next()
    assert frame["type"] == "error"
    assert "this process holds too many connections (limit 3)" in frame["message"]
    assert await refused.closed_by_server()
    for i, conn in enumerate(kept):  # the admitted ones still work
        await conn.call(f"e{i}", "probe_echo", {"value": i})
        assert (await conn.result(f"e{i}"))["content"] == i
    await kept[0].close()
    for _ in range(200):  # the slot is given back once the server saw the close
        again = await served.connect()
        await again.send({"type": "ping"})
        try:
            if (await again.next(timeout=5))["type"] == "pong":
                break
        except EOFError:
            continue
    else:
        pytest.fail("a closed connection's slot was never given back")


@pytest.mark.slow  # a call that outlasts the idle timeout several times
@pytest.mark.parametrize("server_options", [{"idle_timeout_s": 0.3}])
async def test_an_idle_connection_is_closed_but_not_while_a_call_runs(
    served, server_options
) -> None:
    idle = await served.connect()
    frame = await idle.next(timeout=30)
    assert frame["type"] == "error"
    assert "idle for 0.3s" in frame["message"]
    assert await idle.closed_by_server()

    busy = await served.connect()
    await busy.call("s", "probe_sleep", {"seconds": 1.5})
    result = await busy.result("s", timeout=30)  # not cut off while in flight
    assert result["ok"] is True
    frame = await busy.next(timeout=30)
    assert "idle" in frame["message"]


@pytest.mark.slow
@pytest.mark.parametrize("server_options", [{"idle_timeout_s": 0.5}])
async def test_the_async_client_keepalive_outlives_the_idle_timeout(served, server_options) -> None:
    from meith_core.client.aio import AsyncClient

    async with await AsyncClient.connect(served.socket, keepalive_s=0.05) as client:
        control = await served.connect()  # opened at the same time, sends nothing
        assert "idle" in (await control.next(timeout=30))["message"]
        assert await control.closed_by_server()
        # As long as the silent one was idle, and the keepalive one is still served.
        assert (await client.call("probe_echo", {"value": 7})).content == 7
