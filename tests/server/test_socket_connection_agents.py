"""Protocol extensions for agents over a real socket: hello/welcome, identity fixed by the first
claim, the approval round-trip, list_sessions, watching the tool list, descriptor flags."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest

from meith_core.client.aio import AsyncClient
from meith_core.policy.grants import new_grant
from meith_core.protocol import call_approval_desk

pytestmark = pytest.mark.anyio

WRITE_DENIED = "PERMISSION_DENIED"


def _last(served: Any, tool: str) -> dict[str, Any]:
    return [e for e in served.audit() if e["toolName"] == tool][-1]


async def test_hello_fixes_identity_and_welcome_reports_it(served) -> None:
    conn = await served.connect()
    await conn.send(
        {"type": "hello", "clientInfo": {"caller": "agent", "label": "claude\x1b[31m-code\n"}}
    )
    welcome = await conn.next()
    assert welcome == {
        "type": "welcome",
        "protocol": 1,
        "sessionId": welcome["sessionId"],
        "caller": "agent",
        "label": "claude[31m-code",  # control characters dropped
        "serverVersion": welcome["serverVersion"],
        "idleTimeoutS": 600.0,  # how often a client that waits must ping
    }
    assert re.fullmatch(r"socket:[0-9a-f-]{36}", welcome["sessionId"])
    await conn.call("w", "probe_whoami")
    who = (await conn.result("w"))["content"]
    assert (who["caller"], who["sessionId"], who["label"]) == (
        "agent",
        welcome["sessionId"],
        "claude[31m-code",
    )
    entry = _last(served, "probe_whoami")
    assert (entry["caller"], entry["label"]) == ("agent", "claude[31m-code")


async def test_a_label_is_cut_to_128_characters(served) -> None:
    conn = await served.connect()
    await conn.send({"type": "hello", "clientInfo": {"caller": "agent", "label": "x" * 1000}})
    assert (await conn.next())["label"] == "x" * 128


@pytest.mark.parametrize(
    ("first", "later", "runs_as"),
    [("agent", "cli", "agent"), ("plugin", "agent", "plugin"), ("cli", "agent", "cli")],
)
async def test_a_later_different_claim_runs_as_the_first_and_is_recorded(
    served, first, later, runs_as
) -> None:
    conn = await served.connect()
    await conn.call("a", "probe_whoami", clientInfo={"caller": first, "label": "one"})
    assert (await conn.result("a"))["content"]["claimedCaller"] is None
    await conn.call("b", "probe_whoami", clientInfo={"caller": later, "label": "two"})
    who = (await conn.result("b"))["content"]
    assert (who["caller"], who["claimedCaller"], who["label"]) == (runs_as, later, "one")
    entry = _last(served, "probe_whoami")
    assert (entry["caller"], entry["claimedCaller"]) == (runs_as, later)


async def test_an_agent_claim_gets_nothing_a_cli_grant_gives(served) -> None:
    served.runtime.permissions.standing.add(new_grant("cli", ["writes-files"]))
    agent = await served.connect()
    await agent.call("w", "probe_write", {"name": "agent"}, clientInfo={"caller": "agent"})
    assert (await agent.result("w"))["error"]["code"] == WRITE_DENIED
    cli = await served.connect()
    await cli.call("w", "probe_write", {"name": "cli"})
    assert (await cli.result("w"))["ok"] is True
    assert served.marks("agent") == []
    assert len(served.marks("cli")) == 1


async def test_the_approval_request_frame_and_an_allow_once_answer(served) -> None:
    conn = await served.connect()
    info = {"caller": "agent", "label": "bridge", "approvals": True}
    await conn.call("w1", "probe_write", {"name": "once"}, clientInfo=info)
    ask = await conn.next()
    assert ask == {
        "type": "approval_request",
        "protocol": 1,
        "approvalId": ask["approvalId"],
        "requestId": "w1",
        "toolName": "probe_write",
        "plugin": "probe",
        "capabilities": ["writes-files"],
        "cwd": served.runtime.cwd,
        "runs": f"Acts on: {served.runtime.cwd}",
        "command": None,
        "shown": "name: once",
        "arguments": {"name": "once"},
        "caller": "agent",
        "label": "bridge",
        "timeoutMs": 60000,
        "askedAt": ask["askedAt"],  # when it was asked: a console counts down from it
    }
    assert ask["approvalId"].startswith("ap_")
    assert isinstance(ask["askedAt"], int)
    await conn.send(
        {
            "type": "approval_response",
            "approvalId": ask["approvalId"],
            "decision": "allow_once",
            "answeredBy": "user at the MCP client",
        }
    )
    assert (await conn.result("w1"))["ok"] is True
    reason = _last(served, "probe_write")["reason"]
    assert reason == (
        "approved once by user at the MCP client "
        "(reported by the calling agent connection 'bridge')"
    )
    # Once means once: the next call asks again.
    await conn.call("w2", "probe_write", {"name": "once"}, clientInfo=info)
    assert (await conn.next())["type"] == "approval_request"


async def test_approval_arguments_go_through_the_audit_redactor(served) -> None:
    conn = await served.connect()
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    await conn.call(
        "w",
        "probe_write",
        {"name": secret},
        clientInfo={"caller": "agent", "approvals": True},
    )
    ask = await conn.next()
    assert secret not in str(ask["arguments"])
    await conn.send(
        {"type": "approval_response", "approvalId": ask["approvalId"], "decision": "deny"}
    )
    result = await conn.result("w")
    assert result["error"]["code"] == WRITE_DENIED


async def test_deny_and_allow_session_through_the_async_client(served) -> None:
    answers = ["deny", ("allow_session", "tester")]
    seen: list[dict[str, Any]] = []

    async def on_approval(request: dict[str, Any]) -> Any:
        seen.append(request)
        return answers.pop(0)

    async with await AsyncClient.connect(
        served.socket, caller="agent", label="bot", on_approval=on_approval
    ) as client:
        denied = await client.call("probe_write", {"name": "s"})
        assert denied.error is not None
        assert denied.error.code == WRITE_DENIED
        assert "denied by client (reported by the calling agent connection 'bot')" in str(
            denied.error.details
        )
        assert served.marks("s") == []
        assert (await client.call("probe_write", {"name": "s"})).ok
        assert (await client.call("probe_write", {"name": "s"})).ok  # no third question
        assert len(seen) == 2
        assert len(served.marks("s")) == 2
        welcome = await client.hello()
        mine = [s for s in await client.list_sessions() if s["sessionId"] == welcome["sessionId"]]
        assert mine[0]["calls"] == 3
        assert [(g["tool"], g["capabilities"], g["source"]) for g in mine[0]["grants"]] == [
            ("probe_write", ["writes-files"], "prompt")
        ]


async def test_no_answer_in_time_is_a_denial_and_a_late_answer_is_ignored(
    served, monkeypatch
) -> None:
    monkeypatch.setattr(call_approval_desk, "CALL_APPROVAL_TIMEOUT_S", 0.2)
    conn = await served.connect()
    await conn.call(
        "w", "probe_write", {"name": "late"}, clientInfo={"caller": "agent", "approvals": True}
    )
    ask = await conn.next()
    assert ask["timeoutMs"] == 200
    result = await conn.result("w")
    assert result["error"]["code"] == WRITE_DENIED
    assert "no answer within 0.2s" in _last(served, "probe_write")["reason"]
    for approval_id in (ask["approvalId"], "ap_unknown", ask["approvalId"]):
        await conn.send(
            {"type": "approval_response", "approvalId": approval_id, "decision": "allow_once"}
        )
    await conn.call("e", "probe_echo", {"value": 1})
    assert (await conn.result("e"))["content"] == 1  # ignored, and the connection goes on
    assert served.marks("late") == []


async def test_cancelling_or_disconnecting_while_asked_is_a_denial(served) -> None:
    conn = await served.connect()
    info = {"caller": "agent", "approvals": True}
    await conn.call("w", "probe_write", {"name": "c"}, clientInfo=info)
    ask = await conn.next()
    await conn.send({"type": "cancel_tool_call", "requestId": "w"})
    assert (await conn.result("w"))["error"]["code"] == WRITE_DENIED
    await conn.send(
        {"type": "approval_response", "approvalId": ask["approvalId"], "decision": "allow_once"}
    )
    await conn.call("w2", "probe_write", {"name": "c"}, clientInfo=info)
    assert (await conn.next())["type"] == "approval_request"
    await conn.close()
    for _ in range(500):
        if len([e for e in served.audit() if e["toolName"] == "probe_write"]) == 2:
            break
        await asyncio.sleep(0.01)
    entries = [e for e in served.audit() if e["toolName"] == "probe_write"]
    assert [e["decision"] for e in entries] == ["deny", "deny"]
    assert "cancelled while waiting for approval" in entries[0]["reason"]
    assert served.marks("c") == []


async def test_a_connection_that_cannot_answer_falls_back_to_the_runtime_approvers(served) -> None:
    asked: list[str] = []

    async def terminal(request: Any) -> Any:
        asked.append(request.tool_name)
        return "allow_once"

    served.runtime.approvers.append(terminal)
    conn = await served.connect()
    await conn.call("w", "probe_write", {"name": "t"}, clientInfo={"caller": "agent"})
    assert (await conn.result("w"))["ok"] is True
    assert asked == ["probe_write"]
    assert _last(served, "probe_write")["reason"] == "approved once at prompt"


async def test_list_sessions_shows_live_socket_and_in_process_sessions(served) -> None:
    a = await served.connect()
    await a.send({"type": "hello", "clientInfo": {"caller": "agent", "label": "A"}})
    sid_a = (await a.next())["sessionId"]
    await a.call("1", "probe_echo")
    await a.result("1")
    inproc = served.runtime.open_session("agent", label="embedded")
    served.runtime.grant(inproc, ["writes-files"], tool="probe_write", uses=2)
    b = await served.connect()
    await b.send({"type": "list_sessions"})
    frame = await b.next()
    assert frame["type"] == "sessions_list"
    by_id = {s["sessionId"]: s for s in frame["sessions"]}
    assert by_id[sid_a]["caller"] == "agent"
    assert by_id[sid_a]["label"] == "A"
    assert by_id[sid_a]["calls"] == 1
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", by_id[sid_a]["since"])
    grant = by_id[inproc.session_id]["grants"][0]
    assert grant == {
        "id": grant["id"],
        "capabilities": ["writes-files"],
        "tool": "probe_write",
        "cwd": None,
        "uses": 2,
        "expires": None,
        "source": "api",
    }
    assert by_id[inproc.session_id]["label"] == "embedded"
    await a.close()
    for _ in range(500):
        if sid_a not in {s["sessionId"] for s in served.runtime.list_sessions()}:
            break
        await asyncio.sleep(0.01)
    assert sid_a not in {s["sessionId"] for s in served.runtime.list_sessions()}


@pytest.mark.parametrize("server_options", [{"watch_interval_s": 0.05}])
async def test_watching_the_tool_list_reports_approval_changes(served, server_options) -> None:
    changed = asyncio.Event()
    async with await AsyncClient.connect(
        served.socket, caller="agent", on_tools_changed=changed.set
    ) as client:
        tools = {t["name"]: t for t in await client.list_tools(watch=True)}
        assert tools["probe_write"]["approved"] is True
        assert tools["probe_echo"]["approved"] is True
        assert tools["probe_echo"]["idempotent"] is False
        served.runtime.permissions.plugin_approvals.revoke("probe")
        await asyncio.wait_for(changed.wait(), 10)
        tools = {t["name"]: t for t in await client.list_tools()}
        assert tools["probe_write"]["approved"] is False
        assert tools["probe_echo"]["approved"] is True
        changed.clear()
        served.runtime.approve_plugin("probe")
        await asyncio.wait_for(changed.wait(), 10)
        tools = {t["name"]: t for t in await client.list_tools()}
        assert tools["probe_write"]["approved"] is True


async def test_ping_is_answered_with_pong(served) -> None:
    conn = await served.connect()
    await conn.send({"type": "ping"})
    assert await conn.next() == {"type": "pong", "protocol": 1}


async def test_the_sync_client_says_hello_and_lists_sessions(served) -> None:
    from meith_core.client import Client

    def run() -> tuple[dict[str, Any], list[dict[str, Any]]]:
        with Client(served.socket, caller="agent", label="script") as client:
            return client.hello(), client.list_sessions()

    welcome, sessions = await asyncio.to_thread(run)
    assert (welcome["caller"], welcome["label"]) == ("agent", "script")
    assert welcome["sessionId"] in {s["sessionId"] for s in sessions}


_CHILD = r"""
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
info = {"caller": "agent", "approvals": True}
s.sendall(json.dumps({"type": "tool_call", "requestId": "w", "toolName": "probe_write",
                      "arguments": {"name": "child"}, "clientInfo": info}).encode() + b"\n")
buf = b""
while b"\n" not in buf:
    buf += s.recv(65536)
print(buf.split(b"\n")[0].decode())
"""


async def test_a_process_the_runtime_started_cannot_approve_its_own_calls(served) -> None:
    """The in-process runtime is this test process: a grandchild of it (through a shell, as a
    tool's process would be) asks for a privileged call and offers to approve it itself."""
    import shlex
    import sys

    cmd = f"{shlex.quote(sys.executable)} -c {shlex.quote(_CHILD)} {shlex.quote(served.socket)}"
    proc = await asyncio.create_subprocess_shell(cmd, stdout=asyncio.subprocess.PIPE)
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    first = json.loads(out)
    # No approval_request came first: without its session's token it is nobody at all.
    assert first["type"] == "error"
    assert "MEITH_SESSION_TOKEN" in first["message"]
    assert served.marks("child") == []


async def test_an_agents_session_list_shows_its_own_session_unless_granted(served) -> None:
    """Issue 32, case 8: an agent saw every session with its grants in `list_sessions`."""
    from meith_core.policy.grants import StandingGrants, standing_grant

    a = await AsyncClient.connect(served.socket, caller="agent", label="A")
    b = await AsyncClient.connect(served.socket, caller="agent", label="B")
    user = await AsyncClient.connect(served.socket)
    async with a, b, user:
        mine = (await a.hello())["sessionId"]
        await b.hello()
        await user.hello()
        assert [s["sessionId"] for s in await a.list_sessions()] == [mine]
        assert len(await user.list_sessions()) >= 3
        StandingGrants(served.runtime.home.grants_path).add(
            standing_grant("agent", ["read-only"], tool="get_audit_log", agent="A")
        )
        assert len(await a.list_sessions()) >= 3
        assert len(await b.list_sessions()) == 1
