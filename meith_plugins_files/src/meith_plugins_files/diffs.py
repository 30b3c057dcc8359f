"""Unified diffs of what a write changed, bounded so that a result stays small.

Lines the two versions share at the start and at the end are set aside before difflib runs
(an edit to a large file is diffed in its neighbourhood, not whole); hunk headers are then
shifted back to the file's own line numbers.
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


def unified(before: str | None, after: str | None, name: str) -> tuple[str, bool]:
    """`(diff, truncated)`: `--- a/name` / `+++ b/name` hunks with 3 lines of context;
    `/dev/null` on the side of a file that did not exist."""
    old = (before or "").splitlines(keepends=True)
    new = (after or "").splitlines(keepends=True)
    start = 0
    limit = min(len(old), len(new))
    while start < limit and old[start] == new[start]:
        start += 1
    end = 0
    while end < limit - start and old[-1 - end] == new[-1 - end]:
        end += 1
    start = max(0, start - CONTEXT)
    end = max(0, end - CONTEXT)
    lines = difflib.unified_diff(
        old[start : len(old) - end],
        new[start : len(new) - end],
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
