"""Bytes from a pipe to complete text lines, on the log hot path."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from meith_plugins_process.lines import LineSplitter


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


def test_long_complete_lines_are_cut_too() -> None:
    lines = feed_all([b"a" * 25 + b"\nshort\n"], max_line=10)
    assert lines == ["a" * 10, "a" * 10, "a" * 5, "short"]
