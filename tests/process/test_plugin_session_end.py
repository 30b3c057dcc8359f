"""What an agent session started ends with it, except what it detached to the local user;
what the local user started never does. In-process, with real processes (the MCP round trip
is in tests/mcp/test_session_lifetime.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from meith_core import CallerInfo
from tests.process.conftest import Proc
from tests.process.support import eventually, gone, ok

pytestmark = pytest.mark.anyio

SLEEPER = ["-c", "import time\nwhile True:\n    time.sleep(0.5)\n"]


def agent(proc: Proc) -> CallerInfo:
    session = proc.rt.open_session("agent")
    proc.rt.grant(session, ["starts-process", "accesses-network"])
    return session


async def _start(proc: Proc, caller: CallerInfo, cwd: Path, **extra: object) -> dict[str, object]:
    args = {"cwd": str(cwd), "command": sys.executable, "args": SLEEPER, **extra}
    return dict(ok(await proc.rt.call("start_dev_server", args, caller=caller)))


@pytest.mark.slow
async def test_an_ended_session_leaves_only_what_it_detached(proc: Proc, tmp_path: Path) -> None:
    a = agent(proc)
    for name in ("own", "kept", "user"):
        (tmp_path / name).mkdir()
    own = await _start(proc, a, tmp_path / "own")
    kept = await _start(proc, a, tmp_path / "kept", detach=True)
    user = proc.rt.open_session("cli")
    proc.rt.grant(user, ["starts-process", "accesses-network"])
    users = await _start(proc, user, tmp_path / "user")
    term = ok(await proc.rt.call("create_terminal", {"cwd": str(tmp_path)}, caller=a))
    sessions = {s["sessionId"]: s for s in proc.rt.list_sessions()}
    owns = {o["id"]: o["detached"] for o in sessions[a.session_id]["owns"]}
    assert owns == {own["id"]: False, kept["id"]: True, term["id"]: False}
    # What the local user starts is the user's: it outlives the session that started it.
    assert [o["detached"] for o in sessions[user.session_id]["owns"]] == [True]

    await proc.rt.close_session(a)
    await eventually(lambda: gone(own["pid"]) and gone(term["pid"]), "the session's processes")
    servers = {s["id"]: s for s in ok(await proc.rt.call("list_dev_servers", {}))}
    assert servers[own["id"]]["status"] == "stopped"
    assert servers[kept["id"]]["status"] == "running"
    assert servers[kept["id"]]["detached"] is True
    assert servers[users["id"]]["status"] == "running"
    assert not gone(kept["pid"])
    assert not gone(users["pid"])
    # The local user's sessions end every `meith call`: what the user starts outlives them.
    await proc.rt.close_session(user)
    assert not gone(users["pid"])
    for server in (kept, users):
        ok(await proc.rt.call("stop_dev_server", {"devServerId": server["id"]}))


async def test_the_result_says_what_outlives_the_session(proc: Proc, tmp_path: Path) -> None:
    a = agent(proc)
    (tmp_path / "d").mkdir()
    args = {"cwd": str(tmp_path), "command": sys.executable, "args": SLEEPER}
    plain = await proc.rt.call("start_dev_server", args, caller=a)
    detached = await proc.rt.call(
        "start_dev_server", {**args, "cwd": str(tmp_path / "d"), "detach": True}, caller=a
    )
    messages = [
        " ".join(d["message"] for d in r.to_wire().get("diagnostics") or [])
        for r in (plain, detached)
    ]
    assert "stopped when this session ends" in messages[0]
    assert "handed to the local user" in messages[1]
    await proc.rt.close_session(a)
    ok(await proc.rt.call("stop_dev_server", {"devServerId": detached.content["id"]}))
