"""Connection capacity per caller: descendants of the runtime share a pool, one process tree and
one session are bounded, and the rest is the local user's."""

from __future__ import annotations

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
