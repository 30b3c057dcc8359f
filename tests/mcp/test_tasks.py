"""Approvals and long calls as tasks (the `io.modelcontextprotocol/tasks` extension), through a
real `meith mcp` and a real `meith serve`, with the MCP SDK's own client declaring the extension:
a privileged call answers at once with a task that waits for the person, who answers in the
console (the runtime's approval API `meith ui` uses) while the agent polls; its status
notifications on `subscriptions/listen` say where it is; a long call becomes a task the agent
cancels; a client without the extension keeps the plain answer."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from meith_core.client import AsyncClient
from tests.harness import wait_until
from tests.mcp.conftest import audit_records, elicit_answer, stdio_client
from tests.mcp.tasks_client import TASKS, TasksExtension, cancel, get, until

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

MODERN = "2026-07-28"


class Console:
    """The local user's console on the runtime socket: answers when the test says so."""

    def __init__(self) -> None:
        self.asked: list[dict[str, Any]] = []
        self.answer = asyncio.Event()

    async def __call__(self, request: dict[str, Any]) -> tuple[str, str]:
        self.asked.append(request)
        await self.answer.wait()
        return ("allow_once", "the test's console")


async def _listen(
    bridge: Any, task_id: str, seen: list[dict[str, Any]], ready: anyio.Event
) -> None:
    """`subscriptions/listen` for one task on the raw HTTP wire, collecting what it says."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "http-agent", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}},
    }
    body = {
        "jsonrpc": "2.0",
        "id": "listen-1",
        "method": "subscriptions/listen",
        "params": {"notifications": {"taskIds": [task_id]}, "_meta": meta},
    }
    headers = {
        "Authorization": f"Bearer {bridge.token}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "subscriptions/listen",
    }
    async with (
        httpx2.AsyncClient(timeout=120) as http,
        http.stream("POST", bridge.url, json=body, headers=headers) as response,
    ):
        async for line in response.aiter_lines():
            if not line.startswith("data:") or not line[5:].strip():
                continue
            message = json.loads(line[5:])
            seen.append(message)
            ready.set()
            if message.get("params", {}).get("status") in ("completed", "failed"):
                return


@pytest.mark.parametrize("elicits", [True, False], ids=["eliciting", "not-eliciting"])
async def test_an_approval_becomes_a_task_the_console_answers_while_the_agent_polls(
    agent_server: Any, http_bridge: Any, marks: Path, elicits: bool
) -> None:
    srv = agent_server()
    srv.approve("mcptest")
    bridge = http_bridge(srv)
    console = Console()
    user = await AsyncClient.connect(srv.socket, caller="cli", console=True, on_approval=console)
    await user.hello()
    extra: dict[str, Any] = {"elicitation_callback": elicit_answer(None)} if elicits else {}
    try:
        async with bridge.client(mode=MODERN, extensions=[TasksExtension()], **extra) as agent:
            created = await agent.session.call_tool(
                "mcptest_write", {"name": "task-mark"}, allow_claimed=True
            )
            task_id = created.task_id  # type: ignore[union-attr]
            # Answered at once: the call waits for a person, and says so.
            assert created.result_type == "task"  # type: ignore[union-attr]
            said = created.status_message  # type: ignore[union-attr]
            if elicits:  # its own client is asked (and the console beside it)
                assert said == "waiting for approval by the user"
            else:  # the console only: where, and how long
                assert said.startswith("waiting for approval in the meith ui console: denied after")
            waiting = await get(agent.session, task_id)
            assert waiting["status"] == ("input_required" if elicits else "working")
            if elicits:  # the agent's client may answer it too: an elicitation to show
                [(key, asked)] = waiting["inputRequests"].items()
                assert key == "approval-1"
                assert asked["method"] == "elicitation/create"
                assert "mcptest_write" in asked["params"]["message"]
            seen: list[dict[str, Any]] = []
            ready = anyio.Event()
            async with anyio.create_task_group() as tg:
                tg.start_soon(_listen, bridge, task_id, seen, ready)
                await ready.wait()  # the acknowledgement: the stream is open
                assert wait_until(lambda: console.asked, timeout=30)
                assert not (marks / "task-mark").exists()
                console.answer.set()
                done = await until(agent.session, task_id, lambda t: t["status"] == "completed")
            # The transparent way: the SDK client resolves a task by polling it to its end.
            again = await agent.call_tool("mcptest_echo", {"value": "sync"})
    finally:
        await user.aclose()
    assert json.loads(done["result"]["content"][0]["text"]) == {"written": "task-mark"}
    assert done["statusMessage"] == "done"
    assert "inputRequests" not in done
    assert (marks / "task-mark").exists()
    acknowledged = seen[0]
    assert acknowledged["method"] == "notifications/subscriptions/acknowledged"
    assert acknowledged["params"]["notifications"]["taskIds"] == [task_id]
    statuses = [m["params"] for m in seen[1:] if m["method"] == "notifications/tasks"]
    assert [s["statusMessage"] for s in statuses] == ["running", "done"]
    assert all(s["taskId"] == task_id for s in statuses)
    assert statuses[-1]["result"] == done["result"]
    assert not again.is_error
    [record] = [r for r in audit_records(srv) if r["toolName"] == "mcptest_write"]
    assert "the test's console" in record["reason"]


async def test_a_long_call_becomes_a_task_the_agent_cancels(agent_server: Any, marks: Path) -> None:
    srv = agent_server()
    async with stdio_client(srv, mode=MODERN, extensions=[TasksExtension()]) as agent:
        created = await agent.session.call_tool(
            "mcptest_sleep", {"seconds": 300, "marker": "long"}, allow_claimed=True
        )
        task_id = created.task_id  # type: ignore[union-attr]
        working = await get(agent.session, task_id)
        assert (working["status"], working["statusMessage"]) == ("working", "running")
        assert (marks / "long.started").exists()
        acks = [await cancel(agent.session, task_id)]
        ended = await until(agent.session, task_id, lambda t: t["status"] == "cancelled")
        acks.append(await cancel(agent.session, task_id))  # idempotent

        with pytest.raises(MCPError) as unknown:
            await get(agent.session, "no-such-task")
    assert "result" not in ended
    for ack in acks:  # an empty acknowledgement (the SDK stamps every result with its name)
        assert ack.pop("resultType") == "complete"
        assert set(ack) <= {"_meta"}
    assert wait_until(lambda: (marks / "long.cancelled").exists(), timeout=30)
    assert unknown.value.error.code == types.INVALID_PARAMS


async def test_without_the_extension_a_call_answers_as_before(agent_server: Any) -> None:
    srv = agent_server()
    async with stdio_client(srv, mode=MODERN) as agent:
        slow = await agent.call_tool("mcptest_sleep", {"seconds": 1.5, "marker": "plain"})
        with pytest.raises(MCPError) as refused:
            await get(agent.session, "any")
    assert json.loads(slow.content[0].text) == {"slept": 1.5}  # type: ignore[union-attr]
    assert refused.value.error.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY
    assert refused.value.error.data == {"requiredCapabilities": {"extensions": {TASKS: {}}}}
