"""The unified diffs in results: applying one to the old text gives the new text, whatever
the edit (the shared start and end are set aside before difflib runs)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meith_plugins_files.diffs import MAX_DIFF_CHARS, unified

_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def apply(before: str, diff: str) -> str:
    """A minimal `patch`: enough to check hunks and their line numbers."""
    old = before.splitlines(keepends=True)
    out: list[str] = []
    pos = 0
    lines = diff.splitlines(keepends=True)[2:]
    i = 0
    while i < len(lines):
        m = _HUNK.match(lines[i])
        assert m, lines[i]
        start, count = int(m.group(1)), int(m.group(2) or 1)
        start = start - 1 if count else start
        out += old[pos:start]
        pos = start
        i += 1
        while i < len(lines) and not lines[i].startswith("@@"):
            line = lines[i]
            if line.startswith("\\"):  # "\ No newline at end of file": of the line before
                if lines[i - 1][:1] in (" ", "+"):
                    out[-1] = out[-1].removesuffix("\n")
            elif line.startswith(" "):
                out.append(line[1:])
                pos += 1
            elif line.startswith("-"):
                pos += 1
            elif line.startswith("+"):
                out.append(line[1:])
            i += 1
    return "".join(out + old[pos:])


lines = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "def f():\n", "    pass\n"]), max_size=40)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(before=lines, after=lines)
def test_applying_the_diff_to_the_old_text_gives_the_new(
    before: list[str], after: list[str]
) -> None:
    old, new = "".join(before), "".join(after)
    diff, cut = unified(old, new, "f")
    assert not cut
    assert apply(old, diff) == new
    assert (diff == "") == (old == new)


def test_a_one_line_edit_in_a_long_file_has_the_files_own_line_numbers() -> None:
    old = "".join(f"line {i}\n" for i in range(1, 1001))
    new = old.replace("line 500\n", "LINE 500\n")
    diff, _ = unified(old, new, "f")
    assert diff.splitlines()[2] == "@@ -497,7 +497,7 @@"


def test_a_huge_diff_is_cut_and_says_how_much_was_left_out() -> None:
    diff, cut = unified(None, "x\n" * 100_000, "f")
    assert cut
    assert len(diff) < MAX_DIFF_CHARS + 100
    assert diff.endswith("more lines\n")


def _reference(before: str, after: str, name: str) -> str:
    """The diff as difflib writes it over the whole of both texts, headers as they are."""
    import difflib

    out = []
    for line in difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{name}",
        tofile=f"b/{name}",
        n=3,
    ):
        if not line.startswith("@@") and not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        out.append(line)
    return "".join(out)


#: Every line break `str.splitlines` knows, `\r\n` among them.
_BREAKS = ["\n", "\r\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
broken_lines = st.lists(
    st.tuples(st.sampled_from(["a", "b", "", "def f():", "é"]), st.sampled_from(_BREAKS)).map(
        "".join
    ),
    max_size=30,
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    prefix=st.integers(0, 3000),
    before=broken_lines,
    after=broken_lines,
    suffix=st.integers(0, 3000),
    last=st.sampled_from(["", "tail without a newline", "\r"]),
)
def test_the_window_around_a_change_keeps_every_kind_of_line_break(
    prefix: int, before: list[str], after: list[str], suffix: int, last: str
) -> None:
    """Only the lines around a change are split (the shared start and end are found on the
    strings); with any line break splitlines knows, in long shared text on both sides (past
    the first probe of 4096 characters), the diff applies and numbers lines as the file does."""
    head = "".join(f"{i}{_BREAKS[i % len(_BREAKS)]}" for i in range(prefix))
    tail = "".join(f"t{i}{_BREAKS[i % len(_BREAKS)]}" for i in range(suffix)) + last
    old, new = head + "".join(before) + tail, head + "".join(after) + tail
    diff, cut = unified(old, new, "f")
    assert not cut
    assert apply(old, diff) == new
    assert (diff == "") == (old.splitlines(keepends=True) == new.splitlines(keepends=True))


def test_one_edit_after_many_lines_of_every_break_is_diffed_as_difflib_over_the_whole() -> None:
    head = "".join(f"line {i}{_BREAKS[i % len(_BREAKS)]}" for i in range(5000))
    tail = "".join(f"after {i}\r\n" for i in range(3000))
    old = head + "old line\n" + tail
    new = head + "new line\nand another\n" + tail
    diff, _ = unified(old, new, "f")
    assert diff == _reference(old, new, "f")
    assert diff.splitlines()[2] == "@@ -4998,7 +4998,8 @@"
