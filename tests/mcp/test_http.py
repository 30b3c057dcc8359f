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
from tests.mcp.conftest import ERAS, audit_records, json_answer

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
    assert json_answer(result)["value"] == era


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


def _origin(bridge: Any) -> str:
    return bridge.url.removesuffix("/mcp")


@pytest.mark.anyio
async def test_a_client_without_the_token_is_told_and_an_oauth_client_stops_before_authorizing(
    agent_server: Any, http_bridge: Any
) -> None:
    """Issue 22. The SDK client is told how to authenticate; the SDK's OAuth client looks for
    OAuth, finds the metadata naming no authorization server and no OAuth endpoint, and fails at
    client registration with the same words, without asking anyone to authorize anything. With
    the token, all works."""
    import anyio
    from mcp import Client
    from mcp.client.auth import OAuthClientProvider, OAuthRegistrationError
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
    from mcp.shared.exceptions import MCPError

    srv = agent_server()
    bridge = http_bridge(srv)

    def only(group: BaseException, kind: type[BaseException]) -> BaseException:
        while isinstance(group, BaseExceptionGroup) and len(group.exceptions) == 1:
            group = group.exceptions[0]
        assert isinstance(group, kind), repr(group)
        return group

    for token, words in ((None, "no bearer token"), ("not-it", "is not this server's")):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
            with pytest.raises(BaseException) as plain:  # the SDK's exception group
                async with Client(streamable_http_client(bridge.url, http_client=http)):
                    pass
        refused = only(plain.value, MCPError)
        assert isinstance(refused, MCPError)
        assert refused.error.code == -32001
        assert words in refused.error.message
        assert "does not use OAuth" in refused.error.message
        assert "meith mcp token" in refused.error.message

    class NoStorage:
        async def get_tokens(self) -> OAuthToken | None:
            return None

        async def set_tokens(self, tokens: OAuthToken) -> None:
            raise AssertionError("no token can come from here")

        async def get_client_info(self) -> OAuthClientInformationFull | None:
            return None

        async def set_client_info(self, info: OAuthClientInformationFull) -> None:
            raise AssertionError("no client can register here")

    asked: list[str] = []

    async def redirect(url: str) -> None:
        asked.append(url)

    async def callback() -> Any:
        asked.append("callback")
        await anyio.sleep_forever()  # a person never comes back: the test would time out

    oauth = OAuthClientProvider(
        bridge.url,
        OAuthClientMetadata(redirect_uris=["http://127.0.0.1:9/callback"]),
        NoStorage(),
        redirect,
        callback,
    )
    requests: list[tuple[str, str, int]] = []

    async def record(response: httpx2.Response) -> None:
        requests.append((response.request.method, response.request.url.path, response.status_code))

    with anyio.fail_after(60):
        async with httpx2.AsyncClient(
            auth=oauth, event_hooks={"response": [record]}, timeout=30
        ) as http:
            with pytest.raises(BaseException) as flow:  # the SDK's exception group
                async with Client(streamable_http_client(bridge.url, http_client=http)):
                    pass
    failed = only(flow.value, OAuthRegistrationError)
    assert str(failed).startswith("Registration failed: 404")
    assert "does not use OAuth" in str(failed)
    assert "meith mcp token" in str(failed)
    assert asked == []
    assert requests == [
        ("POST", "/mcp", 401),
        ("GET", "/.well-known/oauth-protected-resource/mcp", 200),
        ("GET", "/.well-known/oauth-protected-resource", 200),
        ("GET", "/.well-known/oauth-authorization-server", 404),
        ("POST", "/register", 404),
    ]

    async with bridge.client() as client:
        result = await client.call_tool("mcptest_echo", {"value": "with the token"})
    assert result.is_error is False


def test_the_discovery_paths_answer_anyone_with_no_oauth_and_nothing_else(
    agent_server: Any, http_bridge: Any
) -> None:
    import re

    srv = agent_server()
    bridge = http_bridge(srv)
    origin = _origin(bridge)
    port = origin.rsplit(":", 1)[1]
    good = {"Authorization": f"Bearer {bridge.token}"}
    with httpx2.Client(timeout=30) as http:
        metadata = [
            http.get(origin + path, headers=headers)
            for path in (
                "/.well-known/oauth-protected-resource/mcp",
                "/.well-known/oauth-protected-resource",
            )
            for headers in ({}, good)
        ]
        named = http.get(
            origin + "/.well-known/oauth-protected-resource/mcp",
            headers={"Host": f"localhost:{port}"},
        )
        rebound = http.get(
            origin + "/.well-known/oauth-protected-resource", headers={"Host": "evil.example"}
        )
        posted = http.post(origin + "/.well-known/oauth-protected-resource", json={})
        elsewhere = [
            http.request(method, origin + path, headers=headers)
            for method, path in (
                ("GET", "/.well-known/oauth-authorization-server"),
                ("GET", "/.well-known/oauth-authorization-server/mcp"),
                ("GET", "/.well-known/openid-configuration"),
                ("POST", "/register"),
                ("GET", "/authorize"),
                ("POST", "/token"),
                ("GET", "/"),
                ("GET", "/mcp/../etc/passwd"),
                ("DELETE", "/nothing/here"),
            )
            for headers in ({}, good)
        ]
        challenge = http.post(bridge.url, json=_INIT, headers=_HEADERS)
    for answer in metadata:
        assert answer.status_code == 200, answer.text
        assert answer.headers["content-type"] == "application/json"
        assert answer.json() == {
            "resource": bridge.url,
            "resource_name": "meith MCP bridge",
            "bearer_methods_supported": ["header"],
            "meith_authentication": "a static bearer token, not OAuth: send Authorization: "
            "Bearer <token> with every request; meith mcp token prints the token",
        }
    assert named.json()["resource"] == f"http://localhost:{port}/mcp"
    assert rebound.status_code == 421
    assert posted.status_code == 405
    assert posted.headers["allow"] == "GET"
    for answer in elsewhere:
        assert answer.status_code == 404, (answer.request.url, answer.text)
        assert answer.json()["error"] == "not_found"
        assert "does not use OAuth" in answer.json()["error_description"]
    for answer in [*metadata, named, rebound, posted, *elsewhere, challenge]:
        assert bridge.token not in answer.text
        assert "mcp-session-id" not in answer.headers

    assert challenge.status_code == 401
    fields = dict(re.findall(r'(\w+)="([^"]*)"', challenge.headers["www-authenticate"]))
    assert challenge.headers["www-authenticate"].startswith("Bearer ")
    assert fields["realm"] == "meith"
    assert fields["error"] == "invalid_token"
    assert re.fullmatch(r"[\x20\x21\x23-\x5b\x5d-\x7e]+", fields["error_description"])  # RFC 6750
    assert "resource_metadata" not in fields
    body = challenge.json()
    assert body["jsonrpc"] == "2.0"
    assert body["id"] is None
    assert body["error"]["message"] == "Unauthorized: " + fields["error_description"]


@pytest.mark.anyio
async def test_hostile_requests_get_clear_errors_and_the_bridge_keeps_serving(
    agent_server: Any, http_bridge: Any
) -> None:
    import socket

    srv = agent_server()
    bridge = http_bridge(srv)
    origin = _origin(bridge)
    port = int(origin.rsplit(":", 1)[1])
    token = bridge.token
    refused = [
        f"Basic {token}",
        f"Bearer {token}x",
        f"Bearer {token[:-1]}",
        "Bearer",
        f"Bearer {token} {token}",
        "",
        f"Bearer {'x' * 8000}",
        b"Bearer \xe9\xe8",
    ]
    with httpx2.Client(timeout=30) as http:
        answers = [
            http.post(bridge.url, json=_INIT, headers={**_HEADERS, "Authorization": value})
            for value in refused
        ]
        # Scheme names are case-insensitive, and the token's surrounding blanks are not its.
        lower = http.post(
            bridge.url, json=_INIT, headers={**_HEADERS, "Authorization": f"bearer  {token}"}
        )
    assert [a.status_code for a in answers] == [401] * len(refused)
    assert all("is not this server's" in a.json()["error"]["message"] for a in answers)
    assert lower.status_code == 200, lower.text

    def raw(request: bytes) -> bytes:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
            try:
                conn.sendall(request)
                return conn.recv(65536)
            except ConnectionResetError:
                return b""

    huge = raw(
        f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {'a' * 1_000_000}"
        "\r\n\r\n".encode()
    )
    garbage = raw(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 not http at all\r\n\r\n")
    assert huge == b"" or huge.startswith(b"HTTP/1.1 400 "), huge[:200]
    assert garbage == b"" or garbage.startswith(b"HTTP/1.1 400 "), garbage[:200]
    async with bridge.client() as client:
        after = await client.call_tool("mcptest_echo", {"value": "still here"})
    assert after.is_error is False


def _sse(lines: Any, until: Any) -> list[dict[str, str]]:
    """SSE events, field by field, as read off the wire, up to the first one `until` accepts."""
    events: list[dict[str, str]] = []
    event: dict[str, str] = {}
    for line in lines:
        if line:
            name, _, value = line.partition(":")
            event[name] = value.removeprefix(" ")
            continue
        if event:
            events.append(event)
            if until(event):
                break
        event = {}
    return events


def test_an_sse_stream_starts_primed_and_a_dropped_one_resumes_with_what_it_missed(
    agent_server: Any, http_bridge: Any
) -> None:
    """Issue 22: each POST's SSE stream starts with an event ID, empty data and `retry:`; a
    client that dropped it reconnects with `Last-Event-ID` and gets what it missed, and only
    its own, though both sessions numbered their requests alike."""
    import json

    from meith_core.mcp.events import RETRY_MS
    from tests.harness import wait_until

    srv = agent_server()
    bridge = http_bridge(srv)
    auth = {**_HEADERS, "Authorization": f"Bearer {bridge.token}"}

    def on(session: str) -> dict[str, str]:
        return {**auth, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}

    def messages(events: list[dict[str, str]]) -> list[dict[str, Any]]:
        return [json.loads(e["data"]) for e in events if e.get("data")]

    with httpx2.Client(timeout=60) as http:

        def initialize(version: str = "2025-11-25") -> tuple[str, list[str]]:
            init = {**_INIT, "params": {**_INIT["params"], "protocolVersion": version}}
            with http.stream("POST", bridge.url, json=init, headers=auth) as answer:
                lines = list(answer.iter_lines())
            session = answer.headers["mcp-session-id"]
            done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert http.post(bridge.url, json=done, headers=on(session)).status_code == 202
            return session, lines

        a, opened = initialize()
        b, _ = initialize()
        assert opened[0].startswith("id: ")
        assert opened[1:4] == ["data: ", f"retry: {RETRY_MS}", ""]
        assert opened[4].startswith("id: ")
        assert json.loads(opened[6].removeprefix("data: "))["id"] == 1
        # The SDK primes only for 2025-11-25 and later: older clients cannot parse the event.
        _, older = initialize("2025-06-18")
        assert "data: " not in older
        assert not any(line.startswith("retry:") for line in older)

        primes: dict[str, dict[str, str]] = {}
        for session, seconds in ((a, 1.0), (b, 1.5)):
            call = {
                "jsonrpc": "2.0",
                "id": 2,  # the same in both sessions
                "method": "tools/call",
                "params": {
                    "name": "mcptest_sleep",
                    "arguments": {"seconds": seconds, "marker": session},
                    "_meta": {"progressToken": session},
                },
            }
            with http.stream("POST", bridge.url, json=call, headers=on(session)) as answer:
                assert answer.headers["content-type"].startswith("text/event-stream")
                primes[session] = _sse(answer.iter_lines(), lambda e: True)[0]
            # ...and dropped after the first event.
            assert primes[session]["id"]
            assert primes[session]["data"] == ""
            assert primes[session]["retry"] == str(RETRY_MS)

        def finished() -> int:
            return sum(r.get("toolName") == "mcptest_sleep" for r in audit_records(srv))

        assert wait_until(lambda: finished() == 2, timeout=60)

        resumed: dict[str, list[dict[str, str]]] = {}
        for session in (a, b):
            resume = {**on(session), "Last-Event-ID": primes[session]["id"]}
            with http.stream("GET", bridge.url, headers=resume) as answer:
                assert answer.status_code == 200
                resumed[session] = _sse(
                    answer.iter_lines(), lambda e: '"id":2' in e.get("data", "")
                )
        foreign = http.get(bridge.url, headers={**on(b), "Last-Event-ID": primes[a]["id"]})
        unknown = http.get(bridge.url, headers={**on(a), "Last-Event-ID": "no-such-event"})

    for session, seconds in ((a, 1.0), (b, 1.5)):
        got = messages(resumed[session])
        assert all(e.get("id") for e in resumed[session])
        assert got[0]["method"] == "notifications/progress"
        assert got[0]["params"]["progressToken"] == session
        assert got[-1]["id"] == 2
        assert json.loads(got[-1]["result"]["content"][0]["text"]) == {"slept": seconds}
        assert len(got) == 2
    for answer in (foreign, unknown):
        assert answer.status_code == 400
        assert "Last-Event-ID names no event this session can resume" in answer.text
