"""LineSplitter, LogBuffer and port sniffing: the pieces on the log hot path."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meith_plugins_process.lines import LineSplitter
from meith_plugins_process.logbuffer import LogBuffer
from meith_plugins_process.ports import port_in_chunk, port_in_lines


def feed_all(chunks: list[bytes], max_line: int = 16_384) -> list[str]:
    splitter = LineSplitter(max_line)
    out: list[str] = []
    for chunk in chunks:
        out.extend(splitter.feed(chunk))
    out.extend(splitter.flush())
    return out


def test_lines_split_across_chunks_and_partial_line_flushed_at_end() -> None:
    assert feed_all([b"one\ntw", b"o\nthr", b"ee"]) == ["one", "two", "three"]


def test_crlf_is_normalised_even_when_split_between_reads() -> None:
    assert feed_all([b"a\r", b"\nb\r\n", b"c\r"]) == ["a", "b", "c"]


def test_utf8_sequence_split_between_reads_survives() -> None:
    data = "héllo ✓\n".encode()
    cut = data.index(b"\xe2") + 1  # in the middle of the check mark
    assert feed_all([data[:cut], data[cut:]]) == ["héllo ✓"]


def test_invalid_utf8_is_replaced_not_fatal() -> None:
    assert feed_all([b"bad \xff byte\n"]) == ["bad \ufffd byte"]


def test_a_line_that_never_ends_is_cut_into_bounded_pieces() -> None:
    lines = feed_all([b"x" * 25, b"y" * 10], max_line=10)
    assert all(len(line) <= 10 for line in lines)
    assert "".join(lines) == "x" * 25 + "y" * 10


def test_empty_lines_are_kept() -> None:
    assert feed_all([b"a\n\n\nb\n"]) == ["a", "", "", "b"]


@pytest.mark.slow
@given(
    st.lists(
        st.text(
            alphabet=st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)),
            max_size=20,
        ),
        max_size=30,
    ),
    st.data(),
)
def test_any_chunking_gives_the_same_lines(lines: list[str], data: st.DataObject) -> None:
    blob = "".join(line + "\n" for line in lines).encode()
    cuts = sorted(data.draw(st.lists(st.integers(0, len(blob)), max_size=8)))
    chunks = [blob[a:b] for a, b in zip([0, *cuts], [*cuts, len(blob)], strict=True)]
    assert feed_all(chunks) == lines


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


def test_port_patterns_of_the_original() -> None:
    assert port_in_lines(["  ➜  Local:   http://localhost:5173/"]) == 5173
    assert port_in_lines(["Serving HTTP on 0.0.0.0 port 8000 (http://0.0.0.0:8000/) ..."]) == 8000
    assert port_in_lines(["ready - started server on 0.0.0.0:3000, url: x"]) == 3000
    assert port_in_lines(["Listening on port 4000"]) == 4000
    assert port_in_lines(["http://[::1]:9999"]) == 9999
    assert port_in_lines(["compiled 42 modules in 1200ms", "no port here"]) is None
    assert port_in_lines(["port 99999"]) is None
    assert port_in_chunk(["nothing", "PORT: 8080"]) == 8080
    assert port_in_chunk([]) is None


def test_long_complete_lines_are_cut_too() -> None:
    lines = feed_all([b"a" * 25 + b"\nshort\n"], max_line=10)
    assert lines == ["a" * 10, "a" * 10, "a" * 5, "short"]


@settings(max_examples=40)
@given(
    st.lists(st.text(max_size=200), min_size=1, max_size=30),
    st.sampled_from(["stdout", "stderr", "system"]),
)
def test_emit_lines_sends_every_line_in_order_in_bounded_events(
    lines: list[str], stream: str
) -> None:
    from meith_plugins_process.attach import EVENT_TEXT_MAX, emit_lines, level_and_prefix

    sent: list[tuple[str, str]] = []
    emit_lines(lambda level, message: sent.append((level, message)), stream, lines)
    level, prefix = level_and_prefix(stream)
    assert {lv for lv, _ in sent} == {level}
    assert "\n".join(m for _, m in sent) == "\n".join(prefix + line for line in lines)
    # An event is over the limit only when it is one line that alone is.
    for _, message in sent:
        assert len(message) <= EVENT_TEXT_MAX or "\n" not in message


def test_emit_lines_splits_what_one_event_cannot_carry() -> None:
    from meith_plugins_process.attach import EVENT_TEXT_MAX, emit_lines

    lines = ["a" * 100_000, "b" * 100_000, "c" * 100_000, "d"]
    sent: list[str] = []
    emit_lines(lambda _level, message: sent.append(message), "stderr", lines)
    assert len(sent) == 2
    assert all(len(m) <= EVENT_TEXT_MAX for m in sent)
    assert "\n".join(sent) == "\n".join("[stderr] " + line for line in lines)
