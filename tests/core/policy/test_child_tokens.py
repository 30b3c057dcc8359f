"""The index of the tokens a session's processes call back with."""

from __future__ import annotations

from meith_core.policy.child_tokens import ChildTokens
from meith_core.protocol.caller import CallerKind, ChildBinding
from tests.core.protocol.support import PARENT


def test_one_token_per_session_and_they_differ_between_sessions() -> None:
    tokens = ChildTokens()
    a = tokens.mint(PARENT)
    assert tokens.mint(PARENT) == a
    b = tokens.mint(ChildBinding(CallerKind.AGENT, "agent:other"))
    assert a != b
    assert tokens.resolve(a) == PARENT
    assert tokens.resolve(a + "x") is None
