"""Issue 19, attack 6: a caller's regular expression cannot stall the runtime.

`wait_for_dev_server {logPattern: "^(a+)+$"}` against a log line of 27 `a`s and a `!` used to
run Python's backtracking `re` on the event loop (seconds, doubling per `a`): every other
caller waited. Every caller pattern now goes through `meith_core.compile_pattern` (RE2, linear
time). The test asserts on order, not on time: another caller's call, sent after the pattern
call started, is answered while the pattern call is still waiting.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tests.process.support import PY
from tests.server.conftest import RawConnection

EVIL_LINE = "a" * 27 + "!"


def _envelope(srv: Any, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    envelope = srv.call(tool, args)
    assert envelope["ok"], envelope
    return envelope["content"]  # type: ignore[no-any-return]


@pytest.mark.anyio
@pytest.mark.slow  # the pattern call waits out its own (short) timeout
async def test_a_catastrophic_pattern_does_not_stall_other_callers(meith_server: Any) -> None:
    srv = meith_server(plugins="process")
    srv.approve("process")
    srv.grant("starts-process")
    script = f"import sys, time; print({EVIL_LINE!r}, flush=True); time.sleep(600)"
    server = await asyncio.to_thread(
        _envelope, srv, "start_dev_server", {"command": PY, "args": ["-c", script]}
    )
    # The line is in the log before the pattern is asked for.
    for _ in range(400):
        logs = await asyncio.to_thread(
            _envelope, srv, "get_process_logs", {"processId": server["id"]}
        )
        if any(e["text"] == EVIL_LINE for e in logs["logs"]):
            break
        await asyncio.sleep(0.05)
    else:
        pytest.fail("the dev server's line never reached its log")

    waiter = await RawConnection.open(srv.socket)
    other = await RawConnection.open(srv.socket)
    try:
        # Its own timeout is shorter than the stall the pattern caused before (8 s for 27
        # characters, doubling per character): then its answer came first, the other's after.
        await waiter.call(
            "w",
            "wait_for_dev_server",
            {"devServerId": server["id"], "logPattern": "^(a+)+$", "timeoutMs": 5000},
        )
        # The waiter's call has started (its first progress event) before the other is sent.
        await waiter.until(lambda f: f.get("type") == "tool_event", timeout=30)
        await other.call("h", "app_health", {})
        order: list[str] = []

        async def answered(conn: RawConnection, rid: str) -> dict[str, Any]:
            result = await conn.result(rid, timeout=60)
            order.append(rid)
            return result

        health, waited = await asyncio.gather(answered(other, "h"), answered(waiter, "w"))
        assert order == ["h", "w"], "another caller waited for the pattern call"
        assert health["ok"] is True
        # The pattern call itself ends bounded: it never matched, and says what it waited for.
        assert waited["ok"] is False
        assert waited["error"]["code"] == "TIMEOUT", json.dumps(waited)
        assert "^(a+)+$" in waited["error"]["message"]
    finally:
        await waiter.close()
        await other.close()
        await asyncio.to_thread(srv.call, "stop_dev_server", {"devServerId": server["id"]})


def test_a_pattern_the_engine_refuses_is_a_validation_error_naming_why(meith_server: Any) -> None:
    srv = meith_server(plugins="process")
    srv.approve("process")
    envelope = srv.call(
        "wait_for_dev_server", {"devServerId": "dev_x", "logPattern": "(?=ready)ready"}
    )
    assert envelope["ok"] is False
    assert envelope["error"]["code"] == "VALIDATION_ERROR"
    assert "lookahead is not supported" in json.dumps(envelope["error"])
