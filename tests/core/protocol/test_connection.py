"""The rules of one server connection, without a socket: bytes in, actions out."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from meith_core import ApprovalAnswer, ApprovalRequest, CallerInfo, CallerKind, Capability
from meith_core.protocol import call_approval_desk
from meith_core.protocol.actions import (
    CallApprovalAnswered,
    CancelCall,
    Identity,
    IdentityFixed,
    RefusedCall,
    Send,
    SendSessions,
    SendTools,
    StartCall,
)
from meith_core.protocol.connection import Connection
from meith_core.protocol.framing import encode_frame

SID = "socket:test"
CWD = "/runtime/cwd"


def conn(**kwargs: Any) -> Connection:
    return Connection(SID, runtime_cwd=CWD, server_version="9.9", **kwargs)


def feed(c: Connection, *frames: dict[str, Any] | bytes, now: float = 0.0) -> list[Any]:
    data = b"".join(f if isinstance(f, bytes) else encode_frame(f) for f in frames)
    return c.receive_data(data, now)


def call(rid: str = "r", tool: str = "t", **extra: Any) -> dict[str, Any]:
    return {"type": "tool_call", "requestId": rid, "toolName": tool, **extra}


def sent(actions: list[Any]) -> list[dict[str, Any]]:
    return [json.loads(a.data) for a in actions if isinstance(a, Send)]


def started(actions: list[Any]) -> list[StartCall]:
    return [a for a in actions if isinstance(a, StartCall)]


def only_error(actions: list[Any]) -> dict[str, Any]:
    frames = sent(actions)
    assert len(frames) == 1
    assert frames[0]["type"] == "error"
    assert not started(actions)
    return frames[0]


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


# -- identity -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("claim", "kind", "claimed"),
    [
        ("cli", CallerKind.CLI, None),
        ("agent", CallerKind.AGENT, None),
        ("plugin", CallerKind.PLUGIN, None),
        ("renderer", CallerKind.CLI, "renderer"),
        ("internal", CallerKind.CLI, "internal"),
        ("root", CallerKind.CLI, "root"),
        ("", CallerKind.CLI, ""),
    ],
)
def test_the_first_claim_fixes_the_kind(claim: str, kind: CallerKind, claimed: str | None) -> None:
    c = conn()
    actions = feed(c, call(clientInfo={"caller": claim}))
    assert [a for a in actions if isinstance(a, IdentityFixed)] == [IdentityFixed(Identity(kind))]
    (start,) = started(actions)
    assert (start.caller.caller, start.caller.claimed_caller) == (kind, claimed)


def test_a_later_different_claim_runs_as_the_first_and_is_recorded() -> None:
    c = conn()
    feed(c, call("a", clientInfo={"caller": "agent", "label": "one", "approvals": True}))
    actions = feed(c, call("b", clientInfo={"caller": "cli", "label": "two"}))
    assert not [a for a in actions if isinstance(a, IdentityFixed)]
    (start,) = started(actions)
    assert start.caller.caller is CallerKind.AGENT
    assert start.caller.claimed_caller == "cli"
    assert start.caller.label == "one"
    assert c.identity == Identity(CallerKind.AGENT, "one", answers_call_approvals=True)
    # A frame that names no kind claims nothing new.
    (start,) = started(feed(c, call("c", clientInfo={"cwd": "/x"})))
    assert start.caller.claimed_caller is None


def test_a_repeated_downgraded_claim_is_recorded_each_time() -> None:
    c = conn()
    feed(c, call("a", clientInfo={"caller": "renderer"}))
    (start,) = started(feed(c, call("b", clientInfo={"caller": "renderer"})))
    assert (start.caller.caller, start.caller.claimed_caller) == (CallerKind.CLI, "renderer")


def test_hello_fixes_the_identity_and_is_welcomed() -> None:
    c = conn()
    actions = feed(
        c,
        {"type": "hello", "clientInfo": {"caller": "agent", "label": " bot\x00\x07 " + "x" * 200}},
    )
    ident = Identity(CallerKind.AGENT, "bot " + "x" * 124)
    assert actions[0] == IdentityFixed(ident)
    assert sent(actions) == [
        {
            "type": "welcome",
            "protocol": 1,
            "sessionId": SID,
            "caller": "agent",
            "label": ident.label,
            "serverVersion": "9.9",
        }
    ]
    assert sent(feed(c, {"type": "hello", "clientInfo": {"caller": "cli"}}))[0]["caller"] == "agent"


def test_list_tools_claims_only_when_it_carries_client_info() -> None:
    c = conn()
    assert feed(c, {"type": "list_tools"}) == [SendTools(None)]
    assert not c.watching
    actions = feed(c, {"type": "list_tools", "watch": True, "clientInfo": {"caller": "agent"}})
    assert actions == [IdentityFixed(Identity(CallerKind.AGENT)), SendTools(None)]
    assert c.watching


def test_scope_hints_pass_and_relative_cwd_is_taken_from_the_runtime() -> None:
    c = conn()
    info = {"cwd": "sub/dir", "spaceId": "s", "tabId": "t"}
    (start,) = started(feed(c, call(clientInfo=info)))
    assert (start.caller.cwd, start.caller.space_id, start.caller.tab_id) == (
        CWD + "/sub/dir",
        "s",
        "t",
    )
    err = only_error(feed(c, call("n", clientInfo={"cwd": "a\x00b"})))
    assert (err["requestId"], err["message"]) == ("n", "clientInfo.cwd contains a NUL byte")
    assert c.in_flight == 1


def test_sessions_and_ping() -> None:
    c = conn()
    assert feed(c, {"type": "list_sessions"}) == [SendSessions()]
    assert sent(feed(c, {"type": "ping"})) == [{"type": "pong", "protocol": 1}]


# -- approvals ----------------------------------------------------------------------------


def request(rid: str = "r") -> ApprovalRequest:
    return ApprovalRequest(
        request_id=rid,
        caller=CallerInfo(CallerKind.AGENT, session_id=SID),
        tool_name="write",
        plugin_id="p",
        capabilities=(Capability.WRITES_FILES,),
        privileged=(Capability.WRITES_FILES,),
        cwd="/w",
        arguments_summary='{"path":"a","token":"[REDACTED]"}',
    )


def answering(label: str | None = "bot") -> Connection:
    c = conn()
    info: dict[str, Any] = {"caller": "agent", "approvals": True}
    if label:
        info["label"] = label
    feed(c, {"type": "hello", "clientInfo": info})
    return c


def answer(aid: str, decision: str = "allow_once", by: str = "me") -> dict[str, Any]:
    return {"type": "approval_response", "approvalId": aid, "decision": decision, "answeredBy": by}


def test_only_a_connection_that_said_so_is_asked() -> None:
    assert conn().call_approvals.ask(request()) is None
    c = answering()
    c.close()
    assert c.call_approvals.ask(request()) is None


def test_the_approval_request_frame(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(call_approval_desk, "CALL_APPROVAL_TIMEOUT_S", 2.5)
    ask = answering().call_approvals.ask(request())
    assert ask is not None
    assert ask.timeout_s == 2.5
    assert ask.approval_id.startswith("ap_")
    assert json.loads(ask.data) == {
        "type": "approval_request",
        "protocol": 1,
        "approvalId": ask.approval_id,
        "requestId": "r",
        "toolName": "write",
        "plugin": "p",
        "capabilities": ["writes-files"],
        "cwd": "/w",
        "runs": "Acts on: /w",  # the sentence the person is shown
        "arguments": {"path": "a", "token": "[REDACTED]"},
        "caller": "agent",
        "label": "bot",
        "timeoutMs": 2500,
    }


def test_a_truncated_summary_is_sent_as_text() -> None:
    c = answering()
    req = dataclasses.replace(request(), arguments_summary='{"a":"x...[truncated]')
    ask = c.call_approvals.ask(req)
    assert ask is not None
    assert json.loads(ask.data)["arguments"] == '{"a":"x...[truncated]'


@pytest.mark.parametrize(
    ("decision", "expected"),
    [
        ("allow_once", ApprovalAnswer.ALLOW_ONCE),
        ("allow_session", ApprovalAnswer.ALLOW_SESSION),
        ("deny", ApprovalAnswer.DENY),
    ],
)
def test_an_answer_is_taken_once(decision: str, expected: ApprovalAnswer) -> None:
    c = answering()
    ask = c.call_approvals.ask(request())
    assert ask is not None
    (got,) = feed(c, answer(ask.approval_id, decision, "user\nvia elicitation"))
    assert isinstance(got, CallApprovalAnswered)
    assert got.approval_id == ask.approval_id
    assert got.reply.answer is expected
    assert got.reply.answered_by == (
        "uservia elicitation (reported by the calling agent connection 'bot')"
    )
    assert feed(c, answer(ask.approval_id)) == []  # a repeat is ignored
    assert c.pending_call_approvals == 0


def test_unknown_settled_and_foreign_answers_are_ignored() -> None:
    c, other = answering(), answering()
    ask = c.call_approvals.ask(request())
    theirs = other.call_approvals.ask(request())
    assert ask is not None
    assert theirs is not None
    assert feed(c, answer("ap_unknown")) == []
    assert feed(c, answer(theirs.approval_id)) == []
    c.call_approvals.settled(ask.approval_id)
    assert feed(c, answer(ask.approval_id)) == []


def test_timeouts_and_closing_are_denials_naming_the_connection() -> None:
    c = answering(label=None)
    late = c.call_approvals.unanswered(60)
    assert late.answer is ApprovalAnswer.DENY
    assert late.answered_by == "the calling agent connection: no answer within 60s"
    ask = c.call_approvals.ask(request())
    assert ask is not None
    assert c.call_approvals.pending == 1
    c.close()
    assert c.call_approvals.pending == 0  # forgotten: a late answer is ignored
    assert feed(c, answer(ask.approval_id)) == []
    assert c.call_approvals.closed_before_answer().answer is ApprovalAnswer.DENY


def test_answered_by_is_bounded() -> None:
    c = answering()
    ask = c.call_approvals.ask(request())
    assert ask is not None
    (got,) = feed(c, answer(ask.approval_id, by="y" * 4000))
    assert got.reply.answered_by.startswith("y" * 80 + " (reported by")
    assert "y" * 81 not in got.reply.answered_by


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


def test_a_peer_the_runtime_started_is_never_asked_to_approve() -> None:
    c = conn(may_answer_call_approvals=False)
    feed(c, {"type": "hello", "clientInfo": {"caller": "agent", "approvals": True}})
    assert c.identity == Identity(CallerKind.AGENT)
    assert c.call_approvals.ask(request()) is None


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
