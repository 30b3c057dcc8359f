"""Unified diffs of what a write changed, bounded so that a result stays small.

Text the two versions share at the start and at the end is set aside before difflib runs
(an edit to a large file is diffed in its neighbourhood, not whole): the shared start and end
are found on the strings themselves (slices compared in C, halving), and only the lines
around the change are split. Hunk headers are then shifted back to the file's own line
numbers. Lines are what `str.splitlines` calls lines, as before the window was cut.
"""

from __future__ import annotations

import difflib
import re
from typing import Final

#: Characters of diff kept in a result; the rest is cut at a line and counted.
MAX_DIFF_CHARS: Final = 64 * 1024
CONTEXT: Final = 3
_HUNK: Final = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@$")


def _shift(header: str, by: int) -> str:
    m = _HUNK.match(header.rstrip("\n"))
    if m is None or by == 0:
        return header
    a, b = int(m.group(1)), int(m.group(3))
    # A start of 0 means an empty side; it stays empty at the shifted place.
    a = a + by if a or m.group(2) != ",0" else by
    b = b + by if b or m.group(4) != ",0" else by
    return f"@@ -{a}{m.group(2) or ''} +{b}{m.group(4) or ''} @@\n"


#: What `str.splitlines` ends a line at ("\r\n" is one break of two characters).
_BREAKS: Final = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
#: Characters looked at first around a change for its context lines (doubled as needed).
_PROBE: Final = 4096


def _shared_start(a: str, b: str) -> int:
    """Length of the longest common prefix of `a` and `b`."""
    lo, hi = 0, min(len(a), len(b))
    if a[:hi] == b[:hi]:
        return hi
    while lo < hi:  # a[:lo] == b[:lo] and a[:hi + 1] != b[:hi + 1]
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _shared_end(a: str, b: str, limit: int) -> int:
    """Length of the longest common suffix of `a` and `b`, at most `limit`."""
    lo, hi = 0, limit
    la, lb = len(a), len(b)
    if a[la - hi :] == b[lb - hi :]:
        return hi
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[la - mid : la - lo] == b[lb - mid : lb - lo]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _lines_before(text: str, pos: int) -> int:
    """How many lines `text[:pos]` holds, `pos` being the start of a line."""
    count = sum(text.count(c, 0, pos) for c in _BREAKS)
    return count - text.count("\r\n", 0, pos)


def _back(text: str, pos: int, lines: int) -> int:
    """The start of the line `lines` lines before the one holding `pos - 1` (0 at most);
    `pos` itself counts as inside a line that may have changed."""
    probe = _PROBE
    while True:
        first = max(0, pos - probe)
        parts = text[first:pos].splitlines(keepends=True)
        # The last part may be cut at `pos`; the first, at `first` (unless that is 0).
        whole = parts[:-1] if first == 0 else parts[1:-1]
        if len(whole) >= lines or first == 0:
            return pos - len(parts[-1] if parts else "") - sum(map(len, whole[-lines:]))
        probe *= 2


def _forward(text: str, pos: int, lines: int) -> int:
    """The end of the `lines`-th line after the one holding `pos` (the text's end at most)."""
    probe = _PROBE
    while True:
        last = min(len(text), pos + probe)
        parts = text[pos:last].splitlines(keepends=True)
        # The first part ends the line holding `pos`; the last may be cut at `last`.
        if len(parts) > lines + 1 or last == len(text):
            return pos + sum(map(len, parts[: lines + 1]))
        probe *= 2


def _window(old: str, new: str) -> tuple[list[str], list[str], int]:
    """The lines of each side around what changed (CONTEXT lines of each side's shared text
    and one more), and how many lines come before them."""
    head = _shared_start(old, new)
    tail = _shared_end(old, new, min(len(old), len(new)) - head)
    start = _back(old, head, CONTEXT + 1)
    # The shared end is the same text on both sides: the same lines, the same length.
    extra = _forward(old, len(old) - tail, CONTEXT + 1) - (len(old) - tail)
    old_lines = old[start : len(old) - tail + extra].splitlines(keepends=True)
    new_lines = new[start : len(new) - tail + extra].splitlines(keepends=True)
    return old_lines, new_lines, _lines_before(old, start)


def unified(before: str | None, after: str | None, name: str) -> tuple[str, bool]:
    """`(diff, truncated)`: `--- a/name` / `+++ b/name` hunks with 3 lines of context;
    `/dev/null` on the side of a file that did not exist."""
    old, new, start = _window(before or "", after or "")
    lines = difflib.unified_diff(
        old,
        new,
        fromfile="/dev/null" if before is None else f"a/{name}",
        tofile="/dev/null" if after is None else f"b/{name}",
        n=CONTEXT,
    )
    out: list[str] = []
    size = 0
    total = 0
    cut = False
    for line in lines:
        if line.startswith("@@"):
            line = _shift(line, start)
        elif not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        total += 1
        if cut or size + len(line) > MAX_DIFF_CHARS:
            cut = True
            continue
        size += len(line)
        out.append(line)
    if len(out) < total:
        out.append(f"... diff cut: {total - len(out)} more lines\n")
        return "".join(out), True
    return "".join(out), False
