"""Connection capacity per caller (`serve.capacity`) and the token grace of the sans-IO rules."""

from __future__ import annotations

from meith_core.protocol.caller import CallerKind, ChildBinding
from meith_core.protocol.connection import Connection
from meith_core.protocol.framing import encode_frame
from meith_core.serve.capacity import Capacity, Limits, Slot


def test_descendants_share_a_pool_and_the_rest_is_the_users() -> None:
    cap = Capacity(Limits(total=10, per_peer=10, descendants=4, per_tree=3, per_session=2))
    trees = [cap.admit(100 + i, tree=1) for i in range(4)]
    assert [isinstance(s, Slot) for s in trees] == [True, True, True, False]
    assert "process tree" in str(trees[3])
    other_tree = [cap.admit(200 + i, tree=2 + i) for i in range(2)]
    assert isinstance(other_tree[0], Slot)
    assert "processes started by this runtime" in str(other_tree[1])
    # The local user still has the other six.
    users = [cap.admit(1, tree=None) for _ in range(7)]
    assert [isinstance(s, Slot) for s in users] == [True] * 6 + [False]
    # Released slots are given back, to the tree and the pool.
    first = trees[0]
    assert isinstance(first, Slot)
    cap.release(first)
    assert isinstance(cap.admit(300, tree=1), Slot)


def test_one_session_is_bounded_whatever_processes_hold_it() -> None:
    cap = Capacity(Limits(per_session=2))
    slots = [cap.admit(10 + i, tree=5 + i) for i in range(3)]
    assert all(isinstance(s, Slot) for s in slots)
    assert cap.bind_session(slots[0], "s1") is None  # type: ignore[arg-type]
    assert cap.bind_session(slots[1], "s1") is None  # type: ignore[arg-type]
    refused = cap.bind_session(slots[2], "s1")  # type: ignore[arg-type]
    assert refused is not None
    assert "this session holds too many connections" in refused
    cap.release(slots[0])  # type: ignore[arg-type]
    assert cap.bind_session(slots[2], "s1") is None  # type: ignore[arg-type]


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
