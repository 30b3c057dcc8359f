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
            if line.startswith(" "):
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
