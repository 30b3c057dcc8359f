"""Issue 20 through `meith mcp`, driven by the official MCP SDK client: the bridge sends its own
directory, so before the change no trick was needed to pass a directory-confined grant off as
covering global state, an agent could not stop its own server from elsewhere, any socket caller
could write a section nobody registered, and an ownership denial came with a grant command that
could not help."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from tests.mcp.conftest import audit_records, json_answer, stdio_client

# Each test starts a real `meith serve` and `meith mcp`.
pytestmark = [pytest.mark.slow, pytest.mark.anyio]


def _text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


def _content(result: types.CallToolResult) -> Any:
    assert result.is_error is False, _text(result)
    return json_answer(result)


async def test_a_directory_grant_never_covers_global_state_through_the_bridge(
    agent_server: Any, tmp_path: Path, marks: Path
) -> None:
    srv = agent_server()
    srv.approve("mcptest")
    repo = tmp_path / "repo"
    repo.mkdir()
    srv.grant("writes-files", caller="agent", cwd=str(repo))
    async with stdio_client(srv, "--cwd", str(repo), name="confined") as client:
        settings = await client.call_tool(
            "set_app_settings", {"settings": {"git": {"activeIdentityProfileId": "forged"}}}
        )
        # Another global-state tool, of a third-party plugin.
        configure = await client.call_tool("mcptest_configure", {"value": "everyone"})
        # An undeclared privileged tool without a `cwd` argument: the bridge's directory does
        # not make it covered either.
        undeclared = await client.call_tool("mcptest_write", {"name": "w"})
    for result, tool in ((settings, "set_app_settings"), (configure, "mcptest_configure")):
        assert result.is_error is True
        text = _text(result)
        assert f"never covers {tool}: it acts on global state (settings)" in text
        assert (
            f"meith grants add --caller agent --agent confined --capability writes-files "
            f"--tool {tool} (a grant without --cwd"
        ) in text
    assert undeclared.is_error is True
    assert "it acts on something it does not declare" in _text(undeclared)
    assert not (marks / "configured").exists()
    assert not (marks / "w").exists()
    # With the grant the denial names, the same call runs.
    srv.grant("writes-files", caller="agent", tool="mcptest_configure")
    async with stdio_client(srv, "--cwd", str(repo), name="confined") as client:
        _content(await client.call_tool("mcptest_configure", {"value": "everyone"}))
    assert (marks / "configured").exists()


async def test_an_agent_stops_its_own_server_from_a_bridge_elsewhere(
    agent_server: Any, tmp_path: Path
) -> None:
    srv = agent_server()
    srv.approve("process")
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work.mkdir()
    elsewhere.mkdir()
    srv.grant("starts-process", caller="agent", cwd=str(work))
    async with stdio_client(srv, "--cwd", str(elsewhere)) as client:
        server = _content(
            await client.call_tool(
                "start_dev_server", {"cwd": str(work), "command": "sleep", "args": ["60"]}
            )
        )
        term = _content(await client.call_tool("create_terminal", {"cwd": str(work)}))
        resized = await client.call_tool(
            "resize_terminal", {"terminalId": term["id"], "cols": 100, "rows": 30}
        )
        closed = await client.call_tool("close_terminal", {"terminalId": term["id"]})
        stopped = await client.call_tool(
            "stop_dev_server", {"devServerId": server["id"], "graceMs": 100}
        )
    for result in (resized, closed, stopped):
        _content(result)
    decisions = {
        r["toolName"]: r["decision"]
        for r in audit_records(srv)
        if r["toolName"] in ("stop_dev_server", "resize_terminal", "close_terminal")
    }
    assert decisions == dict.fromkeys(decisions, "allow")
    assert len(decisions) == 3


async def test_the_bridge_cannot_write_a_section_nobody_registered(agent_server: Any) -> None:
    srv = agent_server()
    srv.grant("writes-files", caller="agent", tool="set_app_settings")
    async with stdio_client(srv) as client:
        refused = await client.call_tool(
            "set_app_settings", {"settings": {"laterplugin": {"allowEverything": True}}}
        )
    assert refused.is_error is True
    assert "section 'laterplugin' is not registered by any loaded plugin" in _text(refused)
    assert not srv.home.settings_path.exists() or "laterplugin" not in json.loads(
        srv.home.settings_path.read_text()
    )


async def test_an_ownership_denial_names_the_owner_and_no_grant_command(
    agent_server: Any,
) -> None:
    srv = agent_server()
    srv.approve("process")
    srv.grant("starts-process", caller="agent")
    async with (
        stdio_client(srv, name="owner") as owner,
        stdio_client(srv, name="stranger") as stranger,
    ):
        term = _content(await owner.call_tool("create_terminal", {}))
        write = await stranger.call_tool(
            "write_terminal", {"terminalId": term["id"], "data": "echo hi\r"}
        )
        snapshot = await stranger.call_tool("get_terminal_snapshot", {"terminalId": term["id"]})
        _content(await owner.call_tool("close_terminal", {"terminalId": term["id"]}))
    for result in (write, snapshot):
        assert result.is_error is True
        text = _text(result)
        assert f"Terminal {term['id']} belongs to agent session" in text
        assert "start a terminal of your own with create_terminal" in text
        assert "grants add" not in text
