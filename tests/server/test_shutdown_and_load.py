"""Graceful shutdown and many concurrent connections, against a real `meith serve`."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess

import pytest

from meith_core.base.instances import is_pid_alive
from tests.harness import MEITH, wait_until
from tests.server.conftest import RawConnection


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_answers_in_flight_calls_runs_plugin_shutdown_and_exits_0(
    probe_server, probe_dir, sig
) -> None:
    srv = probe_server()
    call = subprocess.Popen(
        [MEITH, "call", "probe_sleep", "--seconds", "60", "--marker", "stopped", "--json"],
        env=srv.cli_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert wait_until(
        lambda: (
            json.loads(srv.cli("call", "app_health", "--json").stdout)["content"]["checks"][0][
                "details"
            ]["inFlight"]
            >= 2
        )
    )
    srv.send_signal(sig)
    out, _err = call.communicate(timeout=30)
    envelope = json.loads(out)
    # The in-flight call was cancelled and answered (a cooperative tool answers for itself).
    assert envelope["ok"] is True
    assert envelope["content"] == {"cancelled": True}
    assert srv.proc.wait(timeout=30) == 0
    assert (probe_dir / "shutdown").exists()
    assert (probe_dir / "stopped").exists()
    assert not os.path.exists(srv.socket)
    assert not is_pid_alive(srv.pid)


@pytest.mark.anyio
async def test_calls_after_shutdown_began_are_answered_runtime_shutting_down(served) -> None:
    conn = await served.connect()
    served.runtime.pipeline.begin_shutdown()
    await conn.call("late", "probe_record", {"name": "late"})
    result = await conn.result("late")
    assert result["error"]["code"] == "RUNTIME_SHUTTING_DOWN"
    assert served.marks("late") == []


@pytest.mark.anyio
async def test_shutdown_cancels_an_open_stream_and_answers_it(served) -> None:
    conn = await served.connect()
    await conn.call("spew", "probe_spew", {"size": 16, "marker": "spew"})
    await conn.until(lambda f: f["type"] == "tool_event")
    shutdown = asyncio.ensure_future(served.server.shutdown())
    result = await conn.result("spew", timeout=30)
    await shutdown
    assert result["ok"] is True  # the stream ended and answered for itself
    assert served.marks("spew")


def test_64_connections_times_200_calls_each_get_exactly_their_results_and_one_audit_line_each(
    probe_server,
) -> None:
    srv = probe_server()
    connections, per_connection = 64, 200
    audit_before = (
        len(srv.home.audit_path.read_text().splitlines()) if srv.home.audit_path.exists() else 0
    )

    async def one(index: int) -> dict[str, dict]:
        conn = await RawConnection.open(srv.socket)
        results: dict[str, dict] = {}
        sent = [f"c{index}-{i}" for i in range(per_connection)]
        for rid in sent:
            await conn.call(rid, "probe_echo", {"value": rid})
        while len(results) < per_connection:
            frame = await conn.next(timeout=120)
            if frame["type"] == "tool_result":
                assert frame["requestId"] not in results, "a second result for one request"
                results[frame["requestId"]] = frame["result"]
            else:
                assert frame["type"] == "tool_event"
        assert set(results) == set(sent)  # nothing from another connection
        await conn.close()
        return results

    async def everything() -> list[dict[str, dict]]:
        return await asyncio.gather(*(one(i) for i in range(connections)))

    all_results = asyncio.run(everything())
    for per in all_results:
        for rid, result in per.items():
            assert result == {"ok": True, "content": rid}
    lines = srv.home.audit_path.read_text().splitlines()[audit_before:]
    records = [json.loads(line) for line in lines]  # every line parses
    echo = [r for r in records if r["toolName"] == "probe_echo"]
    assert len(echo) == connections * per_connection
    assert len({r["requestId"] + r["sessionId"] for r in echo}) == connections * per_connection
