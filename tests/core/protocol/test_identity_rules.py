"""A child's session token: the connection is its parent session, or nothing at all.

The connection rules are exercised without a socket (bytes in, actions out); the token table
and `Runtime.child_environment` in-process. The real round trip (a dev server running
`meith call`) is in tests/process/test_supervisor_child_token.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from meith_core.base.callback_env import TOKEN_ENV
from meith_core.policy.child_tokens import LOCAL_USER, ChildTokens
from meith_core.protocol.caller import CallerInfo, CallerKind, ChildBinding
from meith_core.protocol.connection import Connection
from tests.core.protocol.test_connection import call, conn, feed, only_error, sent, started

pytestmark = pytest.mark.anyio

PARENT = ChildBinding(CallerKind.AGENT, "agent:parent", "claude")


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


def test_one_token_per_session_and_they_differ_between_sessions() -> None:
    tokens = ChildTokens()
    a = tokens.mint(PARENT)
    assert tokens.mint(PARENT) == a
    b = tokens.mint(ChildBinding(CallerKind.AGENT, "agent:other"))
    assert a != b
    assert tokens.resolve(a) == PARENT
    assert tokens.resolve(a + "x") is None


async def test_child_environment_by_caller(runtime) -> None:
    runtime.socket_path = "/tmp/meith-test.sock"
    agent = runtime.open_session("agent", label="claude")
    env = runtime.child_environment(agent)
    assert set(env) == {"MEITH_SOCKET", TOKEN_ENV}
    assert "MEITH_HOME" not in env  # never the way to the trust root
    # The child calls as its session, and reads within the workspace that session opened for.
    assert runtime.child_tokens.resolve(env[TOKEN_ENV]) == ChildBinding(
        CallerKind.AGENT, agent.session_id, "claude", workspace=agent.workspace
    )
    assert agent.workspace == runtime.cwd
    cli = runtime.open_session("cli")
    user_env = runtime.child_environment(cli)
    assert user_env == {
        "MEITH_HOME": str(runtime.home.root),
        "MEITH_SOCKET": "/tmp/meith-test.sock",
        TOKEN_ENV: user_env[TOKEN_ENV],
    }
    # The local user's children carry the user's token: one per runtime, outliving sessions.
    assert runtime.child_tokens.resolve(user_env[TOKEN_ENV]) == LOCAL_USER
    await runtime.close_session(cli)
    assert runtime.child_tokens.resolve(user_env[TOKEN_ENV]) == LOCAL_USER
    assert runtime.child_environment(CallerInfo.for_plugin("x")) == {}
    await runtime.close_session(agent)
    assert runtime.child_tokens.resolve(env[TOKEN_ENV]) is None
    assert runtime.child_environment(agent) == {}  # an ended session mints nothing
    runtime.socket_path = None
    assert runtime.child_environment(cli) == {}


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


def test_a_client_sends_its_token_only_to_the_runtime_that_gave_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from meith_core.client._core import client_info

    monkeypatch.setenv(TOKEN_ENV, "mst_x")
    monkeypatch.setenv("MEITH_SOCKET", "/run/a.sock")
    assert client_info("cli", "/", socket_path="/run/a.sock")["sessionToken"] == "mst_x"
    # Another runtime (`meith --instance B` in a terminal of runtime A) never issued it.
    assert "sessionToken" not in client_info("cli", "/", socket_path="/run/b.sock")
    monkeypatch.delenv("MEITH_SOCKET")  # which runtime gave it is unknown: kept to itself
    assert "sessionToken" not in client_info("cli", "/", socket_path="/run/a.sock")
