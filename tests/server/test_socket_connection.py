"""The per-connection protocol of the socket server, with raw frames (in-process server)."""

from __future__ import annotations

import asyncio
import re
import socket
import uuid

import pytest

from tests.server.conftest import Served, until

pytestmark = pytest.mark.anyio


async def test_each_connection_gets_its_own_unguessable_session_id_and_peer_session_is_ignored(
    served,
) -> None:
    a, b = await served.connect(), await served.connect()
    await a.call("r1", "probe_whoami", clientInfo={"caller": "cli", "sessionId": "socket:victim"})
    await b.call("r1", "probe_whoami")
    sa, sb = (
        (await a.result("r1"))["content"]["sessionId"],
        (await b.result("r1"))["content"]["sessionId"],
    )
    assert sa != sb
    for sid in (sa, sb):
        assert re.fullmatch(r"socket:[0-9a-f-]{36}", sid)
        assert uuid.UUID(sid.split(":", 1)[1]).version == 4
    assert sa != "socket:victim"
    await a.call("r2", "probe_whoami")
    assert (await a.result("r2"))["content"]["sessionId"] == sa  # stable per connection


@pytest.mark.parametrize("claim", ["renderer", "internal", "root", ""])
async def test_untrusted_caller_claims_are_downgraded_to_cli_and_audited(served, claim) -> None:
    conn = await served.connect()
    await conn.call("r", "probe_whoami", clientInfo={"caller": claim})
    content = (await conn.result("r"))["content"]
    assert content["caller"] == "cli"
    assert content["claimedCaller"] == claim
    entry = [e for e in served.audit() if e["toolName"] == "probe_whoami"][-1]
    assert entry["caller"] == "cli"
    assert entry["claimedCaller"] == claim


async def test_cli_and_plugin_claims_are_kept_but_a_plugin_claim_gets_no_privilege(served) -> None:
    conn = await served.connect()
    await conn.call("p", "probe_whoami", clientInfo={"caller": "plugin"})
    assert (await conn.result("p"))["content"]["caller"] == "plugin"
    await conn.call("w", "probe_write", {"name": "w"}, clientInfo={"caller": "plugin"})
    result = await conn.result("w")
    assert result["error"]["code"] == "PERMISSION_DENIED"
    assert served.marks("w") == []


async def test_cwd_defaults_to_the_runtime_cwd_and_scope_hints_pass_through(
    served, tmp_path
) -> None:
    conn = await served.connect()
    await conn.call("a", "probe_whoami")
    assert (await conn.result("a"))["content"]["cwd"] == served.runtime.cwd
    await conn.call(
        "b",
        "probe_whoami",
        clientInfo={"cwd": str(tmp_path), "spaceId": "space_1", "tabId": "btab_1"},
    )
    content = (await conn.result("b"))["content"]
    assert (content["cwd"], content["spaceId"], content["tabId"]) == (
        str(tmp_path),
        "space_1",
        "btab_1",
    )


async def test_many_calls_in_flight_on_one_connection_are_answered_by_request_id(served) -> None:
    conn = await served.connect()
    await conn.call("slow", "probe_sleep", {"seconds": 0.3})
    for i in range(20):
        await conn.call(f"e{i}", "probe_echo", {"value": i})
    results = {}
    while len(results) < 21:
        frame = await conn.next()
        if frame["type"] == "tool_result":
            assert frame["requestId"] not in results  # exactly one result per request
            results[frame["requestId"]] = frame["result"]
    assert all(results[f"e{i}"]["content"] == i for i in range(20))
    assert results["slow"]["content"] == {"slept": 0.3}


async def test_a_request_id_already_in_flight_is_refused_and_not_run(served) -> None:
    conn = await served.connect()
    await conn.call("dup", "probe_sleep", {"seconds": 0.5})
    await conn.call("dup", "probe_record", {"name": "dup"})
    error = await conn.until(lambda f: f["type"] == "error")
    assert error["code"] == "PROTOCOL_ERROR"
    assert error["requestId"] == "dup"
    assert "already in flight" in error["message"]
    assert (await conn.result("dup"))["content"] == {"slept": 0.5}
    assert served.marks("dup") == []


@pytest.mark.slow
async def test_cancel_affects_only_the_connections_own_requests_and_ignores_unknown_ids(
    served,
) -> None:
    a, b = await served.connect(), await served.connect()
    await a.call("same", "probe_sleep", {"seconds": 1.0, "marker": "cancelled"})
    await b.send({"type": "cancel_tool_call", "requestId": "same"})  # another connection's id
    await b.send({"type": "cancel_tool_call", "requestId": "never-sent"})
    result = await a.result("same")
    assert result["content"] == {"slept": 1.0}
    await a.call("mine", "probe_sleep", {"seconds": 30, "marker": "cancelled"})
    await a.until(lambda f: f["type"] == "tool_event" and f["requestId"] == "mine")
    await a.send({"type": "cancel_tool_call", "requestId": "mine"})
    # A cooperative tool answers for itself within the grace period.
    assert (await a.result("mine"))["content"] == {"cancelled": True}
    assert served.marks("cancelled") == ["mine"]


async def test_closing_the_connection_cancels_its_in_flight_calls(served) -> None:
    conn = await served.connect()
    await conn.call("c1", "probe_sleep", {"seconds": 30, "marker": "gone"})
    await conn.call("c2", "probe_sleep", {"seconds": 30, "marker": "gone"})
    await conn.until(lambda f: f["type"] == "tool_event" and f["requestId"] == "c2")
    await conn.close()
    for _ in range(200):
        if len(served.marks("gone")) == 2:
            break
        await asyncio.sleep(0.02)
    assert sorted(served.marks("gone")) == ["c1", "c2"]
    assert served.runtime.pipeline.in_flight == 0


@pytest.mark.parametrize("version", [2, 0, 99, "1", True])
async def test_other_protocol_versions_are_refused_with_the_request_id_and_not_run(
    served, version
) -> None:
    conn = await served.connect()
    await conn.send(
        {
            "type": "tool_call",
            "protocol": version,
            "requestId": "req_proto_mismatch",
            "toolName": "probe_record",
            "arguments": {"name": "proto"},
        }
    )
    frame = await conn.next()
    assert frame["type"] == "error"
    assert frame["code"] == "PROTOCOL_ERROR"
    assert frame["requestId"] == "req_proto_mismatch"
    assert "server requires 1" in frame["message"]
    assert served.marks("proto") == []


@pytest.mark.parametrize(
    "raw",
    [
        b"{not json}\n",
        b"[1,2,3]\n",
        b'{"type":"tool_call","requestId":"x"}\n',
        b'{"type":"nope"}\n',
        b'{"type":"tool_call","requestId":"x","toolName":"probe_echo","arguments":[]}\n',
        b'{"a":1,"a":2}\n',
        b"\xff\xfe\n",
        b'{"x": NaN}\n',
        b"[" * 5000 + b"]" * 5000 + b"\n",
    ],
)
async def test_malformed_or_invalid_frames_get_an_error_without_request_id_and_the_connection_survives(
    served, raw
) -> None:
    conn = await served.connect()
    await conn.send(raw)
    frame = await conn.next()
    assert frame["type"] == "error"
    assert frame["code"] == "PROTOCOL_ERROR"
    assert "requestId" not in frame
    await conn.send({"type": "list_tools"})
    assert (await conn.next())["type"] == "tools_list"


async def test_an_oversized_frame_in_two_writes_is_dropped_and_its_tail_never_runs(served) -> None:
    conn = await served.connect()
    await conn.send(
        b'{"type":"tool_call","requestId":"big","toolName":"probe_echo","arguments":{"value":"'
        + b"a" * (9 * 1024 * 1024)
    )
    error = await conn.next(timeout=30)
    assert error["type"] == "error"
    assert "MAX_FRAME_BYTES" in error["message"]
    await until(lambda: conn.unread() == 0, "the server to read the whole first write")
    # The tail arrives later and looks like a complete call: it must be discarded with the rest
    # of the oversized line, not executed.
    await conn.send(
        b'{"type":"tool_call","requestId":"evil","toolName":"probe_record","arguments":{"name":"evil"}}\n'
    )
    await conn.call("after", "probe_record", {"name": "after"})
    assert (await conn.result("after"))["ok"] is True
    assert served.marks("evil") == []
    assert len(served.marks("after")) == 1


async def test_list_tools_returns_descriptors_without_a_request_id(served) -> None:
    conn = await served.connect()
    await conn.send({"type": "list_tools"})
    frame = await conn.next()
    assert frame["type"] == "tools_list"
    assert frame["protocol"] == 1
    assert "requestId" not in frame
    names = {t["name"] for t in frame["tools"]}
    assert {"probe_echo", "app_health"} - {"app_health"} <= names
    echo = next(t for t in frame["tools"] if t["name"] == "probe_echo")
    assert echo["capabilities"] == ["read-only"]
    assert "$ref" not in str(echo["inputSchema"])


async def test_events_stream_before_the_single_result_and_in_order(served) -> None:
    conn = await served.connect()
    await conn.call("s", "probe_stream", {"count": 3})
    frames = []
    while True:
        frame = await conn.next()
        frames.append(frame)
        if frame["type"] == "tool_result":
            break
    kinds = [f["event"]["kind"] for f in frames[:-1]]
    assert kinds == ["progress", "log", "partial_text"] * 3 + ["artifact"]
    assert [f["event"]["text"] for f in frames[:-1] if f["event"]["kind"] == "partial_text"] == [
        "part0;",
        "part1;",
        "part2;",
    ]
    assert frames[-1]["result"] == {"ok": True, "content": "done"}
    assert all(f["requestId"] == "s" for f in frames)


async def test_200_idle_connections_do_not_stop_a_working_one(served) -> None:
    idle = [await served.connect() for _ in range(200)]
    worker = await served.connect()
    for i in range(50):
        await worker.call(f"w{i}", "probe_echo", {"value": i})
        assert (await worker.result(f"w{i}"))["content"] == i
    assert len(served.server.connections) == 201
    for conn in idle:
        await conn.close()


@pytest.mark.parametrize("server_options", [{"partial_frame_timeout_s": 0.5}])
async def test_a_partial_frame_that_never_completes_closes_the_connection(
    served, server_options
) -> None:
    conn = await served.connect()
    await conn.send(b'{"type":"list_tools"')  # never finished
    frame = await conn.next(timeout=10)
    assert frame["type"] == "error"
    assert "not completed" in frame["message"]
    assert await conn.closed_by_server()
    other = await served.connect()  # the server itself is fine
    await other.send({"type": "list_tools"})
    assert (await other.next())["type"] == "tools_list"


@pytest.mark.parametrize("server_options", [{"max_outbound_bytes": 1024 * 1024}])
async def test_a_client_that_stops_reading_is_disconnected_and_its_stream_cancelled(
    served, server_options
) -> None:
    conn = await served.connect()
    await conn.call("flood", "probe_spew", {"size": 65536, "marker": "spew-ended"})
    # Never read. The runtime must cut the connection instead of buffering without bound.
    for _ in range(500):
        if served.marks("spew-ended"):
            break
        await asyncio.sleep(0.02)
    assert served.marks("spew-ended"), "the stream should have been cancelled"
    assert not any(c.rules and c.rules.in_flight for c in served.server.connections)
    transport_sizes = [
        c.transport.get_write_buffer_size() for c in served.server.connections if c.transport
    ]
    assert all(size <= server_options["max_outbound_bytes"] for size in transport_sizes)
    other = await served.connect()
    await other.call("ok", "probe_echo", {"value": 1})
    assert (await other.result("ok"))["content"] == 1


async def test_a_result_larger_than_a_frame_becomes_a_clear_tool_failure(served) -> None:
    conn = await served.connect()
    await conn.call("huge", "probe_echo", {"value": "z" * (5 * 1024 * 1024)})
    # The request itself fits (5 MiB); echoing it twice over does not fit a frame.
    result = await conn.result("huge", timeout=30)
    assert result["ok"] is True  # 5 MiB result fits in 8 MiB
    await conn.call("huge2", "probe_echo", {"value": "y" * (3 * 1024 * 1024), "repeat": 3})
    result = await conn.result("huge2", timeout=30)
    assert result["error"]["code"] == "TOOL_FAILED"
    assert "more than a frame may carry" in result["error"]["message"]


async def test_unknown_tool_and_validation_failures_are_results_not_transport_errors(
    served,
) -> None:
    conn = await served.connect()
    await conn.call("u", "does_not_exist")
    assert (await conn.result("u"))["error"]["code"] == "UNKNOWN_TOOL"
    await conn.call("v", "probe_sleep", {"seconds": "soon"})
    assert (await conn.result("v"))["error"]["code"] == "VALIDATION_ERROR"


@pytest.mark.anyio
async def test_a_peer_that_is_the_runtime_itself_is_refused(served: Served) -> None:
    """A connection whose peer is the runtime's own process is one the runtime was tricked
    into making for someone else (a port forwarder led to its socket): never the user."""
    from meith_core.serve.admission import Admitted, Refusal

    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with mine, theirs:
        served.server.admit_own_process = False
        refused = served.server.admit(mine)
        assert isinstance(refused, Refusal)
        assert "this runtime itself" in refused.reason
        served.server.admit_own_process = True  # what the embedding test harness asks for
        admitted = served.server.admit(mine)
        assert isinstance(admitted, Admitted)
        if admitted.slot is not None:
            served.server.capacity.release(admitted.slot)
