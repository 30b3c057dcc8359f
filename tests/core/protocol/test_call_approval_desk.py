"""The call approvals a connection is asked for, without a socket: who is asked, the request
frame, answers taken once, denials when nobody answers."""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any

import pytest

from meith_core import (
    ApprovalAnswer,
    ApprovalRequest,
    ApprovalView,
    CallerInfo,
    CallerKind,
    Capability,
)
from meith_core.protocol import call_approval_desk
from meith_core.protocol.actions import CallApprovalAnswered, Identity
from meith_core.protocol.connection import Connection
from tests.core.protocol.support import SID, conn, feed


def request(rid: str = "r") -> ApprovalRequest:
    return ApprovalRequest(
        request_id=rid,
        caller=CallerInfo(CallerKind.AGENT, session_id=SID),
        tool_name="write",
        plugin_id="p",
        capabilities=(Capability.WRITES_FILES,),
        privileged=(Capability.WRITES_FILES,),
        cwd="/w",
        view=ApprovalView("path: a\ntoken: [REDACTED]", None, {"path": "a", "token": "[REDACTED]"}),
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
    before = time.time_ns() // 1_000_000
    ask = answering().call_approvals.ask(request())
    assert ask is not None
    assert ask.timeout_s == 2.5
    assert ask.approval_id.startswith("ap_")
    sent = json.loads(ask.data)
    # When it was asked, on the wall clock: a page opened later counts down what is left.
    assert before <= sent.pop("askedAt") <= time.time_ns() // 1_000_000
    assert sent == {
        "type": "approval_request",
        "protocol": 1,
        "approvalId": ask.approval_id,
        "requestId": "r",
        "toolName": "write",
        "plugin": "p",
        "capabilities": ["writes-files"],
        "cwd": "/w",
        "runs": "Acts on: /w",  # the sentence the person is shown
        "command": None,
        "shown": "path: a\ntoken: [REDACTED]",  # the core's one rendering, whole
        "arguments": {"path": "a", "token": "[REDACTED]"},
        "caller": "agent",
        "label": "bot",
        "timeoutMs": 2500,
    }


def test_the_command_is_sent_as_the_core_rendered_it() -> None:
    c = answering()
    view = ApprovalView("cwd: /w", "npm test; rm -rf ~/src", {"shell": "npm test; rm -rf ~/src"})
    ask = c.call_approvals.ask(dataclasses.replace(request(), view=view))
    assert ask is not None
    frame = json.loads(ask.data)
    assert (frame["command"], frame["shown"]) == ("npm test; rm -rf ~/src", "cwd: /w")


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


def test_a_peer_the_runtime_started_is_never_asked_to_approve() -> None:
    c = conn(may_answer_call_approvals=False)
    feed(c, {"type": "hello", "clientInfo": {"caller": "agent", "approvals": True}})
    assert c.identity == Identity(CallerKind.AGENT)
    assert c.call_approvals.ask(request()) is None
