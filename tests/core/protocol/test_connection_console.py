"""The console in the sans-IO connection rules: who may be one, what it is told, what it may do."""

from __future__ import annotations

import json
from typing import Any

import pytest

from meith_core import ApprovalRequest, ApprovalView, Capability
from meith_core.protocol.actions import IdentityFixed, RevokeSession, SendSessions
from meith_core.protocol.caller import CallerInfo, CallerKind, ChildBinding
from meith_core.protocol.connection import Connection
from meith_core.protocol.framing import encode_frame

SID = "socket:console"


def conn(**kwargs: Any) -> Connection:
    return Connection(SID, runtime_cwd="/cwd", server_version="9.9", **kwargs)


def hello(c: Connection, **info: Any) -> list[Any]:
    return c.receive_data(encode_frame({"type": "hello", "clientInfo": info}), 0.0)


def request() -> ApprovalRequest:
    return ApprovalRequest(
        request_id="r",
        caller=CallerInfo(CallerKind.AGENT, session_id="socket:agent", label="bot"),
        tool_name="write",
        plugin_id="p",
        capabilities=(Capability.WRITES_FILES,),
        privileged=(Capability.WRITES_FILES,),
        cwd="/w",
        view=ApprovalView("path: a", None, {"path": "a"}),
    )


def test_a_local_cli_connection_may_be_the_console() -> None:
    c = conn()
    fixed = [a for a in hello(c, caller="cli", console=True) if isinstance(a, IdentityFixed)]
    assert fixed[0].identity.console is True
    ask = c.call_approvals.ask(request())
    assert ask is not None
    frame = json.loads(ask.data)
    # Asked about another session's call: it is told whose.
    assert (frame["caller"], frame["label"], frame["sessionId"]) == ("agent", "bot", "socket:agent")
    revoke = c.receive_data(
        encode_frame({"type": "revoke_session", "sessionId": "socket:agent"}), 0.0
    )
    assert [type(a) for a in revoke[1:]] == [SendSessions]
    assert revoke[1].viewer.caller is CallerKind.CLI
    assert isinstance(revoke[0], RevokeSession)
    assert revoke[0].session_id == "socket:agent"
    # The audit record of the revocation names the console, as the connection identified it.
    assert (revoke[0].by.caller, revoke[0].by.session_id) == (CallerKind.CLI, c.session_id)


@pytest.mark.parametrize(
    ("kwargs", "info"),
    [
        ({}, {"caller": "agent", "console": True}),
        ({}, {"caller": "renderer", "console": True}),
        ({"may_answer_call_approvals": False}, {"caller": "cli", "console": True}),
        (
            {"resolve_token": lambda _t: ChildBinding(CallerKind.CLI, "", None)},
            {"caller": "cli", "console": True, "sessionToken": "t"},
        ),
    ],
    ids=["agent", "downgraded", "started-by-the-runtime", "child-token"],
)
def test_nothing_else_is_a_console(kwargs: dict[str, Any], info: dict[str, Any]) -> None:
    c = conn(**kwargs)
    hello(c, **info)
    assert c.identity.console is False
    assert c.call_approvals.ask(request()) is None
    (refused,) = c.receive_data(encode_frame({"type": "revoke_session", "sessionId": "s"}), 0.0)
    assert b"only the local user's console" in refused.data
