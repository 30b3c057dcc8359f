"""A session is its client's, not its socket's: a resumable session outlives its connection for
the resume window, comes back on another connection with the secret only its client holds, and
ends at once when its client says it is done (`end_session`)."""

from __future__ import annotations

from typing import Any

import pytest

from meith_core import CallerInfo, CallerKind
from meith_core.client.aio import AsyncClient
from tests.server.conftest import until

pytestmark = pytest.mark.anyio


async def _hello(served: Any, **fields: Any) -> tuple[Any, dict[str, Any]]:
    conn = await served.connect()
    info = {"caller": "agent", "label": "bot", "approvals": True}
    await conn.send({"type": "hello", "clientInfo": info, **fields})
    return conn, await conn.next()


async def test_a_resumable_session_survives_its_connection_and_is_resumed(served) -> None:
    runtime = served.runtime
    first, welcome = await _hello(served, resumable=True)
    session_id, token = welcome["sessionId"], welcome["resumeToken"]
    assert token.startswith("mrt_")
    runtime.grant(CallerInfo(CallerKind.AGENT, session_id=session_id), ["writes-files"])
    await first.close()
    await until(lambda: (s := runtime.sessions.get(session_id)) is not None and s.detached)
    listed = {s["sessionId"]: s for s in runtime.list_sessions()}
    assert listed[session_id]["state"] == "detached"

    second, welcome = await _hello(served, resumeToken=token)
    assert (welcome["sessionId"], welcome["resumed"]) == (session_id, True)
    assert welcome["resumeToken"] not in (None, token)  # a new secret at each resume
    assert [g.capabilities for g in runtime.permissions.session_grants(session_id)]
    # Its calls are the session's, with its grants and its approver again.
    await second.call("w", "probe_write", {"name": "x"})
    result = await second.result("w")
    assert result["ok"] is True, result
    assert runtime.sessions.get(session_id).approver is not None  # type: ignore[union-attr]
    # The connection's own fresh session was dropped, not listed beside it.
    assert [s for s in runtime.list_sessions() if s["caller"] == "agent"] == [
        s for s in runtime.list_sessions() if s["sessionId"] == session_id
    ]

    # The old secret resumes nothing, and an attached session cannot be taken over.
    for secret in (token, welcome["resumeToken"]):
        third, refused = await _hello(served, resumeToken=secret)
        assert refused["type"] == "error"
        assert "resumeToken is not valid" in refused["message"]
        await third.close()
    await second.close()


async def test_end_session_ends_it_with_the_connection(served) -> None:
    runtime = served.runtime
    conn, welcome = await _hello(served, resumable=True)
    session_id = welcome["sessionId"]
    await conn.send({"type": "end_session"})
    await conn.close()
    await until(lambda: session_id not in runtime.sessions)
    again, refused = await _hello(served, resumeToken=welcome["resumeToken"])
    assert refused["type"] == "error"
    await again.close()


async def test_a_session_that_did_not_ask_to_be_resumable_ends_with_its_connection(
    served,
) -> None:
    conn, welcome = await _hello(served)
    assert "resumeToken" not in welcome
    await conn.close()
    await until(lambda: welcome["sessionId"] not in served.runtime.sessions)


@pytest.mark.parametrize("server_options", [{"resume_window_s": 0.05, "watch_interval_s": 0.02}])
async def test_a_detached_session_ends_when_nobody_resumes_it_in_time(served) -> None:
    runtime = served.runtime
    conn, welcome = await _hello(served, resumable=True)
    session_id = welcome["sessionId"]
    runtime.grant(CallerInfo(CallerKind.AGENT, session_id=session_id), ["writes-files"])
    await conn.close()
    await until(lambda: session_id not in runtime.sessions)
    assert runtime.permissions.is_revoked(session_id)


async def test_only_a_first_hello_resumes(served) -> None:
    conn, welcome = await _hello(served, resumable=True)
    await conn.send({"type": "hello", "resumeToken": welcome["resumeToken"]})
    refused = await conn.next()
    assert refused["type"] == "error"
    assert "first frame" in refused["message"]
    await conn.close()


@pytest.mark.slow
@pytest.mark.parametrize("server_options", [{"idle_timeout_s": 0.3}])
async def test_a_client_pings_often_enough_for_the_idle_timeout_it_was_told(served) -> None:
    client = await AsyncClient.connect(served.socket, caller="agent", label="waits")
    try:
        welcome = await client.hello(resumable=True)
        assert welcome["idleTimeoutS"] == 0.3
        # Well past the idle timeout with nothing in flight: three silent connections, opened
        # one after another since the client last spoke, were each closed for idleness.
        for _ in range(3):
            silent = await served.connect()
            assert await silent.closed_by_server(timeout=30)
        assert not client.closed
        result = await client.call("probe_echo", {})
        assert result.ok
        assert welcome["sessionId"] in served.runtime.sessions
        assert not served.runtime.sessions.get(welcome["sessionId"]).detached  # type: ignore[union-attr]
    finally:
        await client.aclose()


async def test_the_bridge_link_resumes_its_session_when_the_runtime_closed_its_connection(
    served,
) -> None:
    from meith_core.mcp.link import RuntimeLink

    runtime = served.runtime
    link = await RuntimeLink.connect(
        served.socket, label="bridge", cwd="/", answers_call_approvals=True
    )
    session_id = link.session_id
    for conn in list(served.server.connections):  # as the idle timeout would
        conn.close("closed under the bridge")
    await until(lambda: not link.usable)
    await until(lambda: (s := runtime.sessions.get(session_id)) is not None and s.detached)

    again = await RuntimeLink.connect(
        served.socket, label="bridge", cwd="/", answers_call_approvals=True, resume=link
    )
    assert (again.resumed, again.session_id) == (True, session_id)
    assert runtime.sessions.get(session_id).approver is not None  # type: ignore[union-attr]
    await again.aclose()  # a deliberate close ends the session
    await until(lambda: session_id not in runtime.sessions)

    # A session that has ended cannot be resumed: the next link is a new session.
    fresh = await RuntimeLink.connect(
        served.socket, label="bridge", cwd="/", answers_call_approvals=True, resume=again
    )
    assert fresh.resumed is False
    assert fresh.session_id not in (None, session_id)
    await fresh.aclose()


@pytest.mark.parametrize("server_options", [{"idle_timeout_s": 0.1, "watch_interval_s": 0.02}])
async def test_a_connection_the_runtime_closes_ends_its_session_too(served) -> None:
    """Closed for idleness (or for not reading), a connection's session ends like any other:
    it is not left listed, holding its grants."""
    conn, welcome = await _hello(served)
    assert await conn.closed_by_server()
    await until(lambda: welcome["sessionId"] not in served.runtime.sessions)
