"""The events extension (`io.modelcontextprotocol/events`) on a real `meith mcp --http` and a real
`meith serve`: what an agent would poll for (a dev server ready or gone, a command finished, an
approval decided, planted git metadata made inert) announced to the agent that subscribes, on
the raw wire (`events/list`, `events/poll`, `events/stream`), while the agent works through the
MCP SDK's own client under the same client name."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from meith_core import landlock_status
from meith_core.client import AsyncClient
from tests.mcp.test_tasks import Console

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

MODERN = "2026-07-28"
EVENTS = "io.modelcontextprotocol/events"
NAME = "http-agent"  # the SDK client's name in `HttpBridge.client`: the same agent


def _meta(extensions: bool = True) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": NAME, "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": (
            {"extensions": {EVENTS: {}}} if extensions else {}
        ),
    }


def _headers(bridge: Any, method: str) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {bridge.token}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": method,
    }


def _body(method: str, params: dict[str, Any], extensions: bool = True) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 9,
        "method": method,
        "params": {**params, "_meta": _meta(extensions)},
    }


def _answer(response: httpx2.Response) -> dict[str, Any]:
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        datas = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
        return next(m for m in map(json.loads, filter(str.strip, datas)) if m.get("id") == 9)
    return dict(response.json())


async def _rpc(bridge: Any, method: str, extensions: bool = True, **params: Any) -> Any:
    async with httpx2.AsyncClient(timeout=60) as http:
        body = _body(method, params, extensions)
        return _answer(await http.post(bridge.url, json=body, headers=_headers(bridge, method)))


async def _poll_until(bridge: Any, name: str, cursor: str, **arguments: Any) -> dict[str, Any]:
    """`events/poll` from `cursor` until an occurrence comes (bounded)."""
    with anyio.fail_after(60):
        while True:
            answer = await _rpc(
                bridge, "events/poll", name=name, arguments=arguments, cursor=cursor
            )
            found = answer["result"]["events"]
            if found:
                return dict(found[0])
            cursor = answer["result"]["cursor"]
            await anyio.sleep(0.2)


async def test_an_agent_hears_of_its_commands_approvals_and_dev_servers(
    agent_server: Any, http_bridge: Any, tmp_path: Path
) -> None:
    ws = (tmp_path / "ws").resolve()
    ws.mkdir()
    srv = agent_server()
    srv.approve("process")
    srv.approve("mcptest")
    srv.grant("starts-process", caller="agent", cwd=str(ws))
    bridge = http_bridge(srv, "--cwd", str(ws), "--tools", "all")

    listed = await _rpc(bridge, "events/list")
    types_ = {e["name"]: e for e in listed["result"]["events"]}
    assert set(types_) == {
        "dev_server.ready",
        "dev_server.exited",
        "command.finished",
        "approval.decided",
        "planted_git.neutralised",
    }
    assert types_["dev_server.ready"]["inputSchema"]["required"] == ["devServerId"]
    refused = await _rpc(bridge, "events/list", extensions=False)
    assert refused["error"]["code"] == -32021
    # Without a cursor: nothing yet, and where "now" is.
    start = (await _rpc(bridge, "events/poll", name="command.finished", arguments={}))["result"]
    assert start["events"] == []

    console = Console()
    console.answer.set()
    user = await AsyncClient.connect(srv.socket, caller="cli", console=True, on_approval=console)
    await user.hello()
    try:
        async with bridge.client(mode=MODERN, name=NAME) as agent:
            ran = await agent.call_tool("run_command", {"command": ["true"]})
            approved = await agent.call_tool("mcptest_write", {"name": "evented"})
            server = [sys.executable, "-m", "http.server", "0", "--bind", "127.0.0.1"]
            dev = json.loads(
                (await agent.call_tool("start_dev_server", {"cwd": str(ws), "command": server}))
                .content[0]
                .text  # type: ignore[union-attr]
            )
            ready = await _poll_until(
                bridge, "dev_server.ready", start["cursor"], devServerId=dev["id"]
            )
            await _rpc(bridge, "events/poll", name="dev_server.exited", arguments={})
            await agent.call_tool("stop_dev_server", {"devServerId": dev["id"]})
            gone = await _poll_until(bridge, "dev_server.exited", start["cursor"])
    finally:
        await user.aclose()
    assert not ran.is_error
    assert not approved.is_error
    finished = await _poll_until(bridge, "command.finished", start["cursor"])
    assert finished["data"]["ok"] is True
    assert finished["data"]["summary"].startswith("exit 0")
    assert finished["eventId"]
    assert finished["timestamp"].endswith("Z")
    decided = await _poll_until(bridge, "approval.decided", start["cursor"])
    assert decided["data"] == {
        "tool": "mcptest_write",
        "requestId": decided["data"]["requestId"],
        "decision": "allowed",
    }
    assert ready["data"]["devServerId"] == dev["id"]
    assert isinstance(ready["data"]["port"], int)
    assert gone["data"]["devServerId"] == dev["id"]


async def test_a_push_stream_says_active_then_each_event(
    agent_server: Any, http_bridge: Any, tmp_path: Path
) -> None:
    srv = agent_server()
    srv.approve("process")
    srv.grant("starts-process", caller="agent", cwd=str(tmp_path))
    bridge = http_bridge(srv, "--cwd", str(tmp_path), "--tools", "all")
    seen: list[dict[str, Any]] = []
    open_ = anyio.Event()

    async def stream() -> None:
        body = _body("events/stream", {"name": "command.finished", "arguments": {}})
        async with (
            httpx2.AsyncClient(timeout=120) as http,
            http.stream(
                "POST", bridge.url, json=body, headers=_headers(bridge, "events/stream")
            ) as response,
        ):
            async for line in response.aiter_lines():
                if line.startswith("data:") and line[5:].strip():
                    seen.append(json.loads(line[5:]))
                    open_.set()
                    if seen[-1]["method"] == "notifications/events/event":
                        return

    async with anyio.create_task_group() as tg:
        tg.start_soon(stream)
        await open_.wait()
        async with bridge.client(mode=MODERN, name=NAME) as agent:
            await agent.call_tool("run_command", {"command": "exit 3"})
    active, event = seen[0], seen[-1]
    assert active["method"] == "notifications/events/active"
    assert active["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 9
    assert event["params"]["name"] == "command.finished"
    assert event["params"]["data"]["summary"].startswith("exit 3")
    assert event["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 9
    assert [m["method"] for m in seen[1:-1]] == []


@pytest.mark.skipif(not landlock_status().available, reason="needs Landlock confinement")
async def test_planted_git_made_inert_is_announced(
    agent_server: Any, http_bridge: Any, tmp_path: Path
) -> None:
    ws = (tmp_path / "ws").resolve()
    ws.mkdir()
    srv = agent_server()
    srv.approve("process")
    srv.grant("starts-process", caller="agent", cwd=str(ws))
    bridge = http_bridge(srv, "--cwd", str(ws), "--tools", "all")
    start = await _rpc(bridge, "events/poll", name="planted_git.neutralised", arguments={})
    plant = 'git init -q sub && git -C sub config core.fsmonitor "touch /tmp/never"'
    async with bridge.client(mode=MODERN, name=NAME) as agent:
        planted = await agent.call_tool("run_command", {"command": plant})
    assert not planted.is_error
    found = await _poll_until(bridge, "planted_git.neutralised", start["result"]["cursor"])
    assert found["data"]["outcome"] == "neutralised"
    assert "neutralised planted git metadata" in found["data"]["reason"]
