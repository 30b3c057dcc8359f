"""`meith mcp --http`: streamable HTTP with a bearer token, loopback only by default, the SDK's
DNS-rebinding/Origin protection on, one agent session per HTTP client session."""

from __future__ import annotations

import os
import stat
import subprocess
from typing import Any

import httpx2
import mcp_types as types
import pytest

from tests.harness import MEITH
from tests.mcp.conftest import ERAS, audit_records

_INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

# Each test starts a real `meith serve` (and a bridge).
pytestmark = pytest.mark.slow


@pytest.mark.anyio
@pytest.mark.parametrize("era", ERAS)
async def test_http_list_and_call(agent_server: Any, http_bridge: Any, era: str) -> None:
    srv = agent_server()
    bridge = http_bridge(srv)
    async with bridge.client(mode=era) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        result = await client.call_tool("mcptest_echo", {"value": era})
    assert "git_status" in names
    assert names == sorted(names)
    assert result.is_error is False
    assert result.structured_content is not None
    assert result.structured_content["value"] == era


@pytest.mark.anyio
async def test_each_http_session_is_its_own_runtime_session(
    agent_server: Any, http_bridge: Any
) -> None:
    srv = agent_server()
    bridge = http_bridge(srv)
    async with bridge.client(name="one") as a, bridge.client(name="two") as b:
        await a.call_tool("mcptest_echo", {"value": "a"})
        await b.call_tool("mcptest_echo", {"value": "b"})
        await a.call_tool("mcptest_echo", {"value": "a2"})
    records = [r for r in audit_records(srv) if r.get("toolName") == "mcptest_echo"]
    assert len(records) == 3
    sessions = [r["sessionId"] for r in records]
    assert sessions[0] == sessions[2] != sessions[1]


def test_wrong_token_and_foreign_origin_are_refused(agent_server: Any, http_bridge: Any) -> None:
    srv = agent_server()
    bridge = http_bridge(srv)
    good = {**_HEADERS, "Authorization": f"Bearer {bridge.token}"}
    with httpx2.Client(timeout=30) as http:
        missing = http.post(bridge.url, json=_INIT, headers=_HEADERS)
        wrong = http.post(
            bridge.url, json=_INIT, headers={**_HEADERS, "Authorization": "Bearer not-the-token"}
        )
        foreign = http.post(
            bridge.url, json=_INIT, headers={**good, "Origin": "http://evil.example"}
        )
        rebound = http.post(bridge.url, json=_INIT, headers={**good, "Host": "evil.example"})
        # Issue 20: a page on another port of this machine is another origin.
        port = int(bridge.url.split(":")[-1].split("/")[0])
        neighbour = http.post(
            bridge.url, json=_INIT, headers={**good, "Origin": f"http://localhost:{port + 1}"}
        )
        own = http.post(
            bridge.url, json=_INIT, headers={**good, "Origin": f"http://127.0.0.1:{port}"}
        )
        accepted = http.post(bridge.url, json=_INIT, headers=good)
    assert neighbour.status_code == 403
    assert own.status_code == 200, own.text
    assert missing.status_code == 401
    assert wrong.status_code == 401
    assert foreign.status_code == 403
    assert rebound.status_code in (403, 421)
    assert accepted.status_code == 200, accepted.text
    token_file = srv.home.root / "mcp-token"
    assert stat.S_IMODE(os.stat(token_file).st_mode) == 0o600
    assert token_file.read_text().strip() == bridge.token


def test_another_origin_is_accepted_only_when_allowed(agent_server: Any, http_bridge: Any) -> None:
    srv = agent_server()
    bridge = http_bridge(srv, "--allow-origin", "http://localhost:5173")
    good = {**_HEADERS, "Authorization": f"Bearer {bridge.token}"}
    with httpx2.Client(timeout=30) as http:
        allowed = http.post(
            bridge.url, json=_INIT, headers={**good, "Origin": "http://localhost:5173"}
        )
        other = http.post(
            bridge.url, json=_INIT, headers={**good, "Origin": "http://localhost:5174"}
        )
    assert allowed.status_code == 200, allowed.text
    assert other.status_code == 403


def test_non_loopback_bind_needs_allow_remote(agent_server: Any) -> None:
    srv = agent_server()
    proc = subprocess.run(
        [MEITH, "mcp", "--no-start", "--http", "0.0.0.0:0"],
        env=srv.cli_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "--allow-remote" in proc.stderr
    assert proc.stdout == ""


@pytest.mark.anyio
@pytest.mark.parametrize("era", ERAS)
async def test_http_elicitation_approves_a_privileged_call(
    agent_server: Any, http_bridge: Any, marks: Any, era: str
) -> None:
    srv = agent_server()
    srv.approve("mcptest")
    bridge = http_bridge(srv)

    async def allow(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"decision": "allow_once"})

    async with bridge.client(mode=era, elicitation_callback=allow) as client:
        result = await client.call_tool("mcptest_write", {"name": "via-http"})
    assert result.is_error is False
    assert (marks / "via-http").exists()


@pytest.mark.anyio
@pytest.mark.parametrize("era", ERAS)
async def test_http_cancellation_stops_the_tool(
    agent_server: Any, http_bridge: Any, marks: Any, era: str
) -> None:
    import anyio

    from tests.harness import wait_until

    srv = agent_server()
    bridge = http_bridge(srv)
    async with bridge.client(mode=era) as client:
        async with anyio.create_task_group() as tg:

            async def long_call() -> None:
                await client.call_tool("mcptest_sleep", {"seconds": 300, "marker": "hnap"})

            tg.start_soon(long_call)
            await anyio.to_thread.run_sync(
                lambda: wait_until(lambda: (marks / "hnap.started").exists(), timeout=60)
            )
            tg.cancel_scope.cancel()
        assert await anyio.to_thread.run_sync(
            lambda: wait_until(lambda: (marks / "hnap.cancelled").exists(), timeout=60)
        )
        after = await client.call_tool("mcptest_echo", {"value": "next"})
    assert after.is_error is False


@pytest.mark.anyio
async def test_closing_an_http_session_ends_its_runtime_session(
    agent_server: Any, http_bridge: Any
) -> None:
    import json

    from tests.harness import wait_until

    srv = agent_server()
    bridge = http_bridge(srv)

    def labels() -> list[str]:
        proc = srv.cli("sessions", "--json")
        return [s.get("label") for s in json.loads(proc.stdout)]

    async with bridge.client(name="short-lived") as client:
        await client.call_tool("mcptest_echo", {"value": 1})
        assert "short-lived" in labels()
    assert wait_until(lambda: "short-lived" not in labels(), timeout=60)


@pytest.mark.anyio
async def test_2026_http_requests_get_one_session_per_client_name(
    agent_server: Any, http_bridge: Any
) -> None:
    """2026-07-28 requests carry no session: those naming the same client share its agent
    session, another name is another session, and a handshake-era session of that same name
    is a session of its own."""
    srv = agent_server()
    bridge = http_bridge(srv)
    modern = "2026-07-28"
    async with (
        bridge.client(mode=modern, name="twin") as a,
        bridge.client(mode=modern, name="twin") as b,
    ):
        await a.call_tool("mcptest_echo", {"value": "a"})
        await b.call_tool("mcptest_echo", {"value": "b"})
    async with bridge.client(mode=modern, name="other") as c:
        await c.call_tool("mcptest_echo", {"value": "c"})
    async with bridge.client(name="twin") as d:
        await d.call_tool("mcptest_echo", {"value": "d"})
    a, b, c, d = [r for r in audit_records(srv) if r.get("toolName") == "mcptest_echo"]
    assert [r["label"] for r in (a, b, c, d)] == ["twin", "twin", "other", "twin"]
    assert a["sessionId"] == b["sessionId"]
    assert len({a["sessionId"], c["sessionId"], d["sessionId"]}) == 3


@pytest.mark.anyio
async def test_a_2026_http_client_that_cannot_elicit_is_not_asked_through_one_that_can(
    agent_server: Any, http_bridge: Any, marks: Any
) -> None:
    """Whether the runtime may ask a session's connection is fixed when it connects, so a
    client of the same name that cannot elicit gets a session that is never asked (here: the
    runtime's plain denial with its hint) while the one that can is asked."""
    srv = agent_server()
    srv.approve("mcptest")
    bridge = http_bridge(srv)
    modern = "2026-07-28"

    async def allow(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"decision": "allow_once"})

    async with bridge.client(mode=modern, name="same", elicitation_callback=allow) as asks:
        asked = await asks.call_tool("mcptest_write", {"name": "asked"})
    async with bridge.client(mode=modern, name="same") as mute:
        plain = await mute.call_tool("mcptest_write", {"name": "plain"})
    assert asked.is_error is False
    assert plain.is_error is True
    text = "\n".join(b.text for b in plain.content if isinstance(b, types.TextContent))
    assert text.startswith("PERMISSION_DENIED")
    assert "meith grants add --caller agent --agent same" in text
    assert (marks / "asked").exists()
    assert not (marks / "plain").exists()


@pytest.mark.anyio
async def test_2026_http_sessions_are_bounded_and_the_least_recently_used_ends(
    agent_server: Any, http_bridge: Any
) -> None:
    """Names are the client's to choose: one name too many ends the session not used for the
    longest (its runtime session ends too), and that name comes back as a new session."""
    import json

    from meith_core.mcp.sessions import MAX_NAMED_SESSIONS

    srv = agent_server()
    bridge = http_bridge(srv)
    names = [f"n{i}" for i in range(MAX_NAMED_SESSIONS + 1)]
    for name in names:
        async with bridge.client(mode="2026-07-28", name=name) as client:
            await client.call_tool("mcptest_echo", {"value": name})
            if name == "n1":
                # n0 is now the least recently used, n1 is used once more below.
                async with bridge.client(mode="2026-07-28", name="n0") as again:
                    await again.call_tool("mcptest_echo", {"value": "n0 again"})
    live = {s.get("label") for s in json.loads(srv.cli("sessions", "--json").stdout)}
    assert "n1" not in live
    assert {"n0", names[-1]} <= live
    assert len(live & set(names)) == MAX_NAMED_SESSIONS
    async with bridge.client(mode="2026-07-28", name="n1") as client:
        back = await client.call_tool("mcptest_echo", {"value": "n1 back"})
    assert back.is_error is False
    n1 = [r["sessionId"] for r in audit_records(srv) if r.get("label") == "n1"]
    assert len(n1) == 2
    assert n1[0] != n1[1]


@pytest.mark.anyio
async def test_an_unused_2026_http_session_ends_and_the_name_comes_back_new(
    agent_server: Any, http_bridge: Any
) -> None:
    """Without a protocol session nobody closes a 2026-07-28 session: it ends once unused for
    the idle time (here 1 s), its runtime session with it, and the next request under that name
    is a new session."""
    import json

    from tests.harness import wait_until

    srv = agent_server()
    srv.cli_env["MEITH_MCP_SESSION_IDLE_S"] = "1"
    bridge = http_bridge(srv)

    def live() -> set[Any]:
        return {s.get("label") for s in json.loads(srv.cli("sessions", "--json").stdout)}

    async with bridge.client(mode="2026-07-28", name="sleepy") as client:
        first = await client.call_tool("mcptest_echo", {"value": "one"})
    assert first.is_error is False
    assert wait_until(lambda: "sleepy" not in live(), timeout=30)
    async with bridge.client(mode="2026-07-28", name="sleepy") as client:
        again = await client.call_tool("mcptest_echo", {"value": "two"})
    assert again.is_error is False
    ids = [r["sessionId"] for r in audit_records(srv) if r.get("label") == "sleepy"]
    assert len(ids) == 2
    assert ids[0] != ids[1]
