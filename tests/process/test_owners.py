"""Processes and terminals belong to the session that started them and to the local user:
another agent session may neither act on them nor read their output, nor see them listed."""

from __future__ import annotations

from typing import Any

import pytest

from meith_core import CallerInfo
from tests.process.conftest import Proc
from tests.process.support import eventually, gone, ok

pytestmark = pytest.mark.anyio


def agent(proc: Proc) -> CallerInfo:
    session = proc.rt.open_session("agent")
    proc.rt.grant(session, ["starts-process", "accesses-network"])
    return session


def denied(result: Any) -> str:
    assert not result.ok, result.to_wire()
    assert result.error.code == "PERMISSION_DENIED", result.to_wire()
    return str(result.error.message)


async def test_another_agent_cannot_type_into_read_or_end_a_terminal(proc: Proc, tmp_path) -> None:
    a, b = agent(proc), agent(proc)
    term = ok(await proc.rt.call("create_terminal", {"cwd": str(tmp_path)}, caller=a))
    tid = term["id"]
    ok(
        await proc.rt.call(
            "write_terminal", {"terminalId": tid, "data": "export PW=s3cr3t\r"}, caller=a
        )
    )
    ok(
        await proc.rt.call(
            "write_terminal", {"terminalId": tid, "data": "echo mark-$PW\r"}, caller=a
        )
    )

    async def buffer(caller: CallerInfo) -> str:
        snap = ok(await proc.rt.call("get_terminal_snapshot", {"terminalId": tid}, caller=caller))
        return str(snap["buffer"])

    await eventually(lambda: _contains(buffer(a), "mark-s3cr3t"), "the owner's output")

    pwned = tmp_path / "pwned"
    message = denied(
        await proc.rt.call(
            "write_terminal", {"terminalId": tid, "data": f"touch {pwned}\r"}, caller=b
        )
    )
    assert f"belongs to agent session {a.session_id}" in message
    assert "create_terminal" in message
    assert "grants add" not in message
    denied(await proc.rt.call("get_terminal_snapshot", {"terminalId": tid}, caller=b))
    denied(await proc.rt.call("get_process_logs", {"processId": tid}, caller=b))
    denied(
        await proc.rt.call("resize_terminal", {"terminalId": tid, "cols": 20, "rows": 5}, caller=b)
    )
    denied(await proc.rt.call("kill_terminal", {"terminalId": tid, "signal": "SIGKILL"}, caller=b))
    denied(await proc.rt.call("close_terminal", {"terminalId": tid}, caller=b))
    assert ok(await proc.rt.call("list_terminals", {}, caller=b)) == []
    assert ok(await proc.rt.call("get_process_tree", {}, caller=b)) == {"processes": []}

    # The owner and the local user still see and use it; B's keystrokes never arrived.
    assert [t["id"] for t in ok(await proc.rt.call("list_terminals", {}, caller=a))] == [tid]
    user = proc.rt.open_session("cli")
    assert "mark-s3cr3t" in await buffer(user)
    ok(
        await proc.rt.call(
            "write_terminal", {"terminalId": tid, "data": "echo done-$((6*7))\r"}, caller=a
        )
    )
    await eventually(lambda: _contains(buffer(a), "done-42"), "the terminal still answers")
    assert not pwned.exists()
    assert ok(await proc.rt.call("close_terminal", {"terminalId": tid}, caller=a))["closed"]


async def _contains(text: Any, needle: str) -> bool:
    return needle in await text


async def test_another_agent_cannot_stop_wait_for_or_attach_to_a_dev_server(
    proc: Proc, tmp_path
) -> None:
    a, b = agent(proc), agent(proc)
    args = {"cwd": str(tmp_path), "command": "echo token-abc; sleep 300"}
    dev = ok(await proc.rt.call("start_dev_server", args, caller=a))
    server = proc.plugin.dev_servers.by_id[dev["id"]]
    await eventually(lambda: "token-abc" in list(server.logs.texts()), "the server's output")

    denied(
        await proc.rt.call(
            "stop_dev_server", {"devServerId": dev["id"], "signal": "SIGKILL"}, caller=b
        )
    )
    assert server.active
    assert not gone(server.pid)
    denied(await proc.rt.call("get_process_logs", {"processId": dev["id"]}, caller=b))
    denied(
        await proc.rt.call(
            "wait_for_dev_server", {"devServerId": dev["id"], "logPattern": "x"}, caller=b
        )
    )
    denied(await proc.rt.call("attach_process_logs", {"devServerId": dev["id"]}, caller=b))
    # Attaching by directory finds only what B may see.
    res = await proc.rt.call("attach_process_logs", {"cwd": str(tmp_path)}, caller=b)
    assert res.error.code == "TOOL_FAILED"
    assert "No dev server" in res.error.message
    assert ok(await proc.rt.call("list_dev_servers", {}, caller=b)) == []
    # The same command started by B is B's own server, not a handle on A's.
    own = ok(await proc.rt.call("start_dev_server", args, caller=b))
    assert own["id"] != dev["id"]
    assert [s["id"] for s in ok(await proc.rt.call("list_dev_servers", {}, caller=b))] == [
        own["id"]
    ]
    seen = {s["id"] for s in ok(await proc.rt.call("list_dev_servers", {}, caller=a))}
    assert seen == {dev["id"]}
    # The local user sees both and may stop either.
    user = proc.rt.open_session("cli")
    proc.rt.grant(user, ["starts-process"])
    assert {s["id"] for s in ok(await proc.rt.call("list_dev_servers", {}, caller=user))} == {
        dev["id"],
        own["id"],
    }
    ok(await proc.rt.call("stop_dev_server", {"devServerId": own["id"]}, caller=user))
    ok(await proc.rt.call("stop_dev_server", {"devServerId": dev["id"]}, caller=a))
    assert gone(server.pid)
