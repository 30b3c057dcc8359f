"""The rules of one server connection, without a socket: bytes in, actions out."""

from __future__ import annotations

from typing import Any

import pytest

from meith_core import CallerInfo, CallerKind
from meith_core.protocol.actions import CancelCall, RefusedCall
from meith_core.protocol.caller import ChildBinding
from meith_core.protocol.connection import Connection
from meith_core.protocol.framing import encode_frame
from tests.core.protocol.support import CWD, SID, call, conn, feed, only_error, started

# -- framing and validation ---------------------------------------------------------------


def test_a_tool_call_starts_with_the_connection_session_and_the_runtime_cwd() -> None:
    c = conn()
    (start,) = started(feed(c, call(clientInfo={"sessionId": "socket:victim"})))
    assert start.call.requestId == "r"
    assert start.caller == CallerInfo(CallerKind.CLI, session_id=SID, cwd=CWD)
    assert c.in_flight == 1


def test_frames_split_across_chunks_and_several_in_one_chunk() -> None:
    c = conn()
    data = encode_frame(call("a")) + encode_frame(call("b"))
    assert c.receive_data(data[:7], 0.0) == []
    actions = c.receive_data(data[7:], 0.0)
    assert [s.call.requestId for s in started(actions)] == ["a", "b"]


@pytest.mark.parametrize("proto", [2, 0, "1", True, 1.0, None])
def test_protocol_version(proto: Any) -> None:
    actions = feed(conn(), call("r", protocol=proto))
    if proto is None:
        assert started(actions)
    else:
        err = only_error(actions)
        assert err["requestId"] == "r"
        assert "Unsupported protocol version" in err["message"]


@pytest.mark.parametrize(
    "line",
    [
        b"not json\n",
        b"[1,2]\n",
        b'{"type":"tool_call","requestId":"r","requestId":"s","toolName":"t"}\n',
        b'{"type":"nope"}\n',
        b'{"type":"tool_call","requestId":"","toolName":"t"}\n',
        b'{"type":"approval_response","approvalId":"ap_1","decision":"maybe"}\n',
    ],
)
def test_a_bad_frame_gets_an_error_and_the_connection_goes_on(line: bytes) -> None:
    c = conn()
    only_error(c.receive_data(line, 0.0))
    assert started(feed(c, call()))


def test_an_unterminated_frame_at_eof_is_reported_and_never_run() -> None:
    c = conn()
    assert c.receive_data(encode_frame(call())[:-1], 0.0) == []
    (err,) = c.receive_eof()
    assert b"unterminated" in err.data
    assert c.in_flight == 0


# -- in-flight calls ----------------------------------------------------------------------


def test_a_request_id_in_flight_is_refused_until_the_call_finishes() -> None:
    c = conn()
    assert started(feed(c, call("r")))
    err = only_error(feed(c, call("r")))
    assert "already in flight" in err["message"]
    c.call_finished("r", 1.0)
    assert started(feed(c, call("r")))


def test_the_in_flight_limit() -> None:
    c = conn(max_in_flight=2)
    assert len(started(feed(c, call("a"), call("b")))) == 2
    assert "too many calls in flight" in only_error(feed(c, call("c")))["message"]
    c.call_finished("a", 0.0)
    assert started(feed(c, call("c")))


def test_cancel_reaches_only_this_connections_own_calls() -> None:
    c, other = conn(), conn()
    started(feed(c, call("r")))
    started(feed(other, call("x")))
    assert feed(c, {"type": "cancel_tool_call", "requestId": "x"}) == []  # not ours: ignored
    assert feed(c, {"type": "cancel_tool_call", "requestId": "r"}) == [
        CancelCall("r", "cancelled by the client")
    ]
    c.call_finished("r", 0.0)
    assert feed(c, {"type": "cancel_tool_call", "requestId": "r"}) == []  # finished: ignored


def test_close_cancels_the_calls_and_stops_reading() -> None:
    c = conn()
    started(feed(c, call("r")))
    assert c.close("client disconnected") == [CancelCall("r", "client disconnected")]
    assert c.closed
    assert feed(c, call("s")) == []


# -- liveness -----------------------------------------------------------------------------


def test_a_frame_left_unfinished_is_overdue() -> None:
    c = conn()
    c.receive_data(b'{"type":"list_tools"', now=10.0)
    assert c.overdue(39.0, 30.0, None) == ""
    assert "frame not completed within 30s" in c.overdue(41.0, 30.0, None)
    c.receive_data(b"}\n", now=41.0)
    assert c.overdue(100.0, 30.0, None) == ""


def test_idle_means_nothing_in_flight_and_nothing_received() -> None:
    c = conn(now=0.0)
    assert "idle for 5s" in c.overdue(6.0, 30.0, 5.0)
    c.receive_data(encode_frame({"type": "ping"}), now=6.0)  # any frame resets it
    assert c.overdue(10.0, 30.0, 5.0) == ""
    feed(c, call("r"), now=10.0)
    assert c.overdue(100.0, 30.0, 5.0) == ""  # a call in flight is not idleness
    c.call_finished("r", 100.0)
    assert c.overdue(104.0, 30.0, 5.0) == ""
    assert c.overdue(106.0, 30.0, 5.0) != ""
    c.close()
    assert c.overdue(200.0, 30.0, 5.0) == ""


def test_congestion_follows_the_transport() -> None:
    c = conn()
    assert not c.congested
    c.pause_writing()
    assert c.congested
    c.resume_writing()
    assert not c.congested


# -- refused tool_call frames are audited (issue 20) -----------------------------------------


@pytest.mark.parametrize(
    ("frame", "rid", "name"),
    [
        ({"type": "tool_call", "protocol": 1, "requestId": "w", "toolName": 5}, "w", None),
        ({"type": "tool_call", "protocol": 1, "toolName": "t"}, None, "t"),
        ({"type": "tool_call", "protocol": 2, "requestId": "v", "toolName": "t"}, "v", "t"),
        (call("long", "x" * 300), "long", "x" * 200),
        (call("r", "t", arguments=[1]), "r", "t"),
    ],
    ids=["wrong types", "no requestId", "protocol 2", "long tool name", "arguments not a map"],
)
def test_a_refused_tool_call_frame_becomes_an_action_to_audit(
    frame: dict[str, Any], rid: str | None, name: str | None
) -> None:
    actions = feed(conn(), frame)
    (refused,) = [a for a in actions if isinstance(a, RefusedCall)]
    assert (refused.request_id, refused.tool_name) == (rid, name)
    assert refused.caller.session_id == SID
    assert refused.caller.cwd == CWD  # nothing the frame says
    assert only_error(actions)["code"] == "PROTOCOL_ERROR"


def test_a_duplicate_request_id_is_refused_and_audited_and_other_frames_are_not() -> None:
    c = conn()
    feed(c, call("r"))
    again = feed(c, call("r"))
    assert [a.request_id for a in again if isinstance(a, RefusedCall)] == ["r"]
    bad_listing = feed(c, {"type": "list_tools", "protocol": 2})
    assert not [a for a in bad_listing if isinstance(a, RefusedCall)]


def _rules(token_required: bool, valid: set[str]) -> Connection:
    def resolve(token: str) -> ChildBinding | None:
        return ChildBinding(CallerKind.AGENT, "sess_a", "a") if token in valid else None

    return Connection(
        "sock_1",
        runtime_cwd="/",
        server_version="0",
        now=0.0,
        resolve_token=resolve,
        token_required=token_required,
    )


def test_a_connection_that_owes_a_token_is_closed_after_the_grace() -> None:
    silent = _rules(True, {"t"})
    assert silent.overdue(2.0, 30.0, None, 3.0) == ""
    assert "no valid session token presented within 3s" in silent.overdue(3.5, 30.0, None, 3.0)

    bad = _rules(True, {"t"})
    hello = {"type": "hello", "clientInfo": {"caller": "cli", "sessionToken": "nope"}}
    bad.receive_data(encode_frame(hello), 0.1)
    assert "no valid session token" in bad.overdue(3.5, 30.0, None, 3.0)

    good = _rules(True, {"t"})
    hello["clientInfo"]["sessionToken"] = "t"  # type: ignore[index]
    good.receive_data(encode_frame(hello), 0.1)
    assert good.overdue(100.0, 30.0, None, 3.0) == ""

    # The local user's own connections owe nothing.
    user = _rules(False, set())
    assert user.overdue(100.0, 30.0, None, 3.0) == ""
