"""An MCP client that cannot elicit (as Codex declines elicitation) is answered from the
console: the official MCP SDK client over a real `meith mcp`, the console's own HTTP API."""

from __future__ import annotations

import http.client
import json
from typing import Any

import anyio
import mcp_types as types
import pytest

from tests.mcp.conftest import stdio_client
from tests.ui.conftest import Console
from tests.ui.test_guard import login, request

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def next_approval(c: Console, cookie: str) -> dict[str, Any]:
    """Read the console's event stream until an approval request shows."""
    host, port = c.host.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    conn.request("GET", "/api/events", headers={"Host": c.host, "Cookie": cookie})
    resp = conn.getresponse()
    assert resp.status == 200
    try:
        while True:
            line = resp.readline()
            if not line.startswith(b"data: "):
                continue
            event = json.loads(line[6:])
            if event["type"] == "snapshot" and event["approvals"]:
                return dict(event["approvals"][0])
            if event["type"] == "approval":
                return dict(event["request"])
    finally:
        conn.close()


async def test_an_mcp_client_without_elicitation_is_answered_from_the_console(
    console: Console,
) -> None:
    cookie, csrf = login(console)
    results: list[types.CallToolResult] = []
    async with (
        stdio_client(console.server, name="no-elicit-agent") as client,
        anyio.create_task_group() as tg,
    ):

        async def call() -> None:
            results.append(await client.call_tool("probe_write", {"name": "via-mcp"}))

        tg.start_soon(call)
        ask = await anyio.to_thread.run_sync(next_approval, console, cookie)
        assert (ask["toolName"], ask["caller"], ask["label"]) == (
            "probe_write",
            "agent",
            "no-elicit-agent",
        )
        headers = {"Cookie": cookie, "Origin": console.base, "X-Meith-CSRF": csrf}
        status, _, body = request(
            console,
            "POST",
            f"/api/approvals/{ask['approvalId']}",
            headers=headers,
            body={"decision": "allow_once"},
        )
        assert status == 200, body
    (result,) = results
    assert result.is_error is False
    records = console.server.audit_records()
    (write,) = [r for r in records if r.get("toolName") == "probe_write"]
    assert write["label"] == "no-elicit-agent"
    assert "by the local user's console (meith ui)" in write["reason"]
