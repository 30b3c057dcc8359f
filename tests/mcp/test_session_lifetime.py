"""An agent's session lasts as long as the agent, not as long as a socket, and ends tidily:
through `meith mcp` with the MCP SDK's own client, over stdio and HTTP, in both protocol eras.

- A pause longer than the runtime's idle timeout (shortened here with `MEITH_IDLE_TIMEOUT`)
  leaves the session and the dev server it started as they were.
- When the client goes, what its session started is stopped after the grace, except what it
  started with `detach: true`, which is the local user's from then on.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from tests.harness import MeithServer, wait_until
from tests.mcp.conftest import ERAS, audit_records, json_answer, stdio_client
from tests.process.support import gone
from tests.server.conftest import RawConnection

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

#: A dev server that runs until it is stopped.
SLEEPER = "import time\nwhile True:\n    time.sleep(0.5)\n"
IDLE_TIMEOUT_S = 1.0


def _process_server(agent_server: Any) -> MeithServer:
    srv: MeithServer = agent_server(env={"MEITH_IDLE_TIMEOUT": str(IDLE_TIMEOUT_S)})
    srv.approve("process")
    srv.grant("starts-process", caller="agent")
    srv.grant("starts-process", tool="stop_dev_server")  # the local user, tidying up
    return srv


@asynccontextmanager
async def _client(
    srv: MeithServer, http_bridge: Any, transport: str, era: str, name: str
) -> AsyncIterator[Client]:
    if transport == "stdio":
        async with stdio_client(srv, mode=era, name=name) as client:
            yield client
    else:
        async with http_bridge(srv).client(mode=era, name=name) as client:
            yield client


def _agent_sessions(srv: MeithServer, label: str) -> list[dict[str, Any]]:
    proc = srv.cli("sessions", "--json")
    assert proc.returncode == 0, proc.stderr
    return [s for s in json.loads(proc.stdout) if s.get("label") == label]


def _dev_servers(srv: MeithServer) -> dict[str, dict[str, Any]]:
    """Every dev server, as the local user sees them."""
    return {s["id"]: s for s in srv.content("list_dev_servers")}


async def _start(client: Client, cwd: Path, **extra: Any) -> dict[str, Any]:
    result = await client.call_tool(
        "start_dev_server",
        {"cwd": str(cwd), "command": sys.executable, "args": ["-c", SLEEPER], **extra},
    )
    assert result.is_error is False, result.content
    started: dict[str, Any] = json_answer(result)
    return started


def _alive(pid: int) -> bool:
    return not gone(pid)


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_pause_longer_than_the_idle_timeout_keeps_the_session_and_its_dev_server(
    agent_server: Any, http_bridge: Any, tmp_path: Path, transport: str, era: str
) -> None:
    srv = _process_server(agent_server)
    name = f"pausing-{transport}"
    async with _client(srv, http_bridge, transport, era, name) as client:
        started = await _start(client, tmp_path)
        (before,) = _agent_sessions(srv, name)
        # Three idle timeouts with nothing in flight (the agent waits for its human): three
        # silent connections, opened one after another since, were each closed for idleness.
        for _ in range(3):
            silent = await RawConnection.open(srv.socket)
            assert await silent.closed_by_server(timeout=30)
        listed = await client.call_tool("list_dev_servers", {})
        assert listed.is_error is False, listed.content
        mine = {s["id"]: s for s in json_answer(listed)["result"]}
        assert mine[started["id"]]["status"] == "running"
        (after,) = _agent_sessions(srv, name)
        assert after["sessionId"] == before["sessionId"]
        assert after["state"] == "attached"
        assert [o["id"] for o in after["owns"]] == [started["id"]]
        stopped = await client.call_tool("stop_dev_server", {"devServerId": started["id"]})
        assert stopped.is_error is False, stopped.content
    calls = [r for r in audit_records(srv) if r["toolName"].endswith("dev_server")]
    calls += [r for r in audit_records(srv) if r["toolName"] == "list_dev_servers"]
    assert {r["sessionId"] for r in calls if r["caller"] == "agent"} == {before["sessionId"]}


@pytest.mark.parametrize(
    ("transport", "era"), [("stdio", ERAS[0]), ("stdio", ERAS[1]), ("http", ERAS[0])]
)
async def test_when_the_client_goes_what_it_started_stops_unless_detached(
    agent_server: Any, http_bridge: Any, tmp_path: Path, transport: str, era: str
) -> None:
    srv = _process_server(agent_server)
    name = f"leaving-{transport}"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    async with _client(srv, http_bridge, transport, era, name) as client:
        own = await _start(client, tmp_path / "a")
        kept = await _start(client, tmp_path / "b", detach=True)
        assert (own["detached"], kept["detached"]) == (False, True)
        (session,) = _agent_sessions(srv, name)
        owns = {o["id"]: o["detached"] for o in session["owns"]}
        assert owns == {own["id"]: False, kept["id"]: True}
        terminal = await client.call_tool("create_terminal", {"cwd": str(tmp_path)})
        assert terminal.is_error is False, terminal.content
        shell_pid = json_answer(terminal)["pid"]

    def stopped() -> bool:
        servers = _dev_servers(srv)
        return servers[own["id"]]["status"] == "stopped" and not _alive(own["pid"])

    assert await anyio.to_thread.run_sync(lambda: wait_until(stopped, timeout=60))
    assert await anyio.to_thread.run_sync(
        lambda: wait_until(lambda: not _alive(shell_pid), timeout=60)
    )
    servers = _dev_servers(srv)
    assert servers[kept["id"]]["status"] == "running"
    assert _alive(kept["pid"])
    assert _agent_sessions(srv, name) == []
    # The result and the audit trail say it was handed over.
    (record,) = [
        r
        for r in audit_records(srv)
        if r["toolName"] == "start_dev_server" and '"detach":true' in r["argsSummary"]
    ]
    assert "detached" in record["resultSummary"]
    assert srv.content("stop_dev_server", {"devServerId": kept["id"]})["stopped"] is True


async def test_the_result_of_a_detached_start_says_so(agent_server: Any, tmp_path: Path) -> None:
    srv = _process_server(agent_server)
    async with stdio_client(srv, name="detacher") as client:
        result = await client.call_tool(
            "start_dev_server",
            {
                "cwd": str(tmp_path),
                "command": sys.executable,
                "args": ["-c", SLEEPER],
                "detach": True,
            },
        )
    text = "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))
    meta = json.dumps(result.meta or {})
    assert "handed to the local user" in text + meta
    srv.content("stop_dev_server", {"devServerId": json_answer(result)["id"]})
