"""Who a connection is, without a socket (bytes in, actions out): the first claim fixes its
identity and is audited when it changes, hello is welcomed; and a child's session token makes
the connection its parent session, or nothing at all. (The real round trip, a dev server running
`meith call`, is in tests/process/test_supervisor_child_token.py.)"""

from __future__ import annotations

from typing import Any

import pytest

from meith_core.policy.child_tokens import LOCAL_USER, ChildTokens
from meith_core.protocol.actions import Identity, IdentityFixed, SendSessions, SendTools
from meith_core.protocol.caller import CallerInfo, CallerKind
from meith_core.protocol.connection import Connection
from tests.core.protocol.support import (
    CWD,
    PARENT,
    SID,
    call,
    conn,
    feed,
    only_error,
    sent,
    started,
)


def _with_token(tokens: ChildTokens) -> Any:
    return conn(resolve_token=tokens.resolve)


def test_a_token_makes_the_connection_its_parent_session_whatever_it_claims() -> None:
    tokens = ChildTokens()
    token = tokens.mint(PARENT)
    c = _with_token(tokens)
    info = {"caller": "cli", "approvals": True, "label": "me", "sessionToken": token}
    (start,) = started(feed(c, call(clientInfo=info)))
    caller: CallerInfo = start.caller
    assert (caller.caller, caller.session_id, caller.label) == (
        CallerKind.AGENT,
        "agent:parent",
        "claude",
    )
    assert caller.claimed_caller == "cli"  # the claim is recorded, not honoured
    assert c.identity.answers_call_approvals is False  # a child never approves its own calls


def test_hello_with_a_token_names_the_parent_session() -> None:
    tokens = ChildTokens()
    c = _with_token(tokens)
    hello = {"type": "hello", "clientInfo": {"sessionToken": tokens.mint(PARENT)}}
    (welcome,) = sent(feed(c, hello))
    assert (welcome["type"], welcome["sessionId"], welcome["caller"]) == (
        "welcome",
        "agent:parent",
        "agent",
    )


@pytest.mark.parametrize("claim", ["cli", "agent", "plugin"])
def test_an_unknown_token_is_refused_never_downgraded(claim: str) -> None:
    c = _with_token(ChildTokens())
    info = {"caller": claim, "sessionToken": "mst_guessed"}
    err = only_error(feed(c, call(clientInfo=info)))
    assert "sessionToken is not valid" in err["message"]
    # Later frames without the token do not change the identity either.
    only_error(feed(c, call("r2", clientInfo={"caller": "cli"})))


def test_the_token_dies_with_its_session_mid_connection() -> None:
    tokens = ChildTokens()
    c = _with_token(tokens)
    info = {"sessionToken": tokens.mint(PARENT)}
    assert started(feed(c, call("r1", clientInfo=info)))
    c.call_finished("r1", 0.0)
    tokens.end_session("agent:parent")
    assert (
        "sessionToken is not valid" in only_error(feed(c, call("r2", clientInfo=info)))["message"]
    )


@pytest.mark.parametrize("claim", ["cli", "agent", "plugin"])
def test_on_the_childrens_socket_a_peer_without_a_token_is_refused(claim: str) -> None:
    """The children's socket is what a confined child can reach: without its token a peer
    there is nobody, not the local user."""
    c = conn(resolve_token=ChildTokens().resolve, token_required=True)
    err = only_error(feed(c, call(clientInfo={"caller": claim})))
    assert "MEITH_SESSION_TOKEN" in err["message"]


def test_on_the_childrens_socket_a_peer_with_its_token_is_its_session() -> None:
    tokens = ChildTokens()
    c = conn(resolve_token=tokens.resolve, token_required=True)
    (start,) = started(feed(c, call(clientInfo={"sessionToken": tokens.mint(PARENT)})))
    assert start.caller.session_id == "agent:parent"


def test_the_local_users_token_claims_as_the_user_does_in_a_session_of_its_own() -> None:
    tokens = ChildTokens()
    token = tokens.mint(LOCAL_USER)
    sessions = set()
    for sid, claim in (("socket:one", "cli"), ("socket:two", "agent")):
        c = Connection(
            sid,
            runtime_cwd="/",
            server_version="9.9",
            resolve_token=tokens.resolve,
            token_required=True,
        )
        info = {"caller": claim, "label": "bridge", "approvals": True, "sessionToken": token}
        (start,) = started(feed(c, call(clientInfo=info)))
        assert start.caller.caller.value == claim
        assert (
            c.identity.answers_call_approvals is False
        )  # a process the runtime started never approves
        sessions.add(start.caller.session_id)
    assert sessions == {"socket:one", "socket:two"}


def test_a_peer_that_owes_a_token_sees_no_sessions() -> None:
    c = conn(resolve_token=ChildTokens().resolve, token_required=True)
    err = only_error(feed(c, {"type": "list_sessions"}))
    assert "MEITH_SESSION_TOKEN" in err["message"]


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
    [asked] = feed(c, {"type": "list_sessions"})
    assert isinstance(asked, SendSessions)
    assert asked.viewer.session_id == c.session_id  # whom the list is for
    assert sent(feed(c, {"type": "ping"})) == [{"type": "pong", "protocol": 1}]
