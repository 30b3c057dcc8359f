"""The per-process ring buffer of log entries, with live subscribers."""

from __future__ import annotations

from meith_plugins_process.logbuffer import LogBuffer


def test_buffer_seq_is_monotonic_and_oldest_entries_drop() -> None:
    buf = LogBuffer(max_entries=5)
    buf.append("stdout", [f"l{i}" for i in range(4)])
    buf.append("stderr", ["e0", "e1", "e2"])
    entries = buf.since(0)
    assert [e[0] for e in entries] == [2, 3, 4, 5, 6]
    assert [e[2] for e in entries] == ["l2", "l3", "e0", "e1", "e2"]
    assert buf.first_seq == 2
    assert buf.next_seq == 7
    assert [e[0] for e in buf.since(5)] == [5, 6]
    assert [e[0] for e in buf.since(0, limit=2)] == [5, 6]
    assert buf.since(7) == []


def test_buffer_is_bounded_by_size_too() -> None:
    buf = LogBuffer(max_entries=1000, max_chars=100)
    buf.append("stdout", ["x" * 40] * 10)
    assert sum(len(e[2]) for e in buf.since(0)) <= 100
    assert buf.next_seq == 10


def test_subscribers_get_each_batch_in_order_and_a_failing_one_is_dropped() -> None:
    buf = LogBuffer()
    seen: list[tuple[int, str]] = []
    calls = {"bad": 0}

    def bad(batch: list[tuple[int, str, str, int]]) -> None:
        calls["bad"] += 1
        raise RuntimeError("client went away")

    buf.subscribe(bad)
    unsubscribe = buf.subscribe(lambda batch: seen.extend((e[0], e[2]) for e in batch))
    buf.append("stdout", ["a", "b"])
    buf.append("stdout", ["c"])
    unsubscribe()
    buf.append("stdout", ["d"])
    assert seen == [(0, "a"), (1, "b"), (2, "c")]
    assert calls["bad"] == 1
