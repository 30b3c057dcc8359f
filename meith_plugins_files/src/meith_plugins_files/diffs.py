"""Unified diffs of what a write changed, bounded so that a result stays small."""

from __future__ import annotations

import difflib
from typing import Final

#: Characters of diff kept in a result; the rest is cut at a line and counted.
MAX_DIFF_CHARS: Final = 64 * 1024


def unified(before: str | None, after: str | None, name: str) -> tuple[str, bool]:
    """`(diff, truncated)`: `--- a/name` / `+++ b/name` hunks with 3 lines of context;
    `/dev/null` on the side of a file that did not exist."""
    old = (before or "").splitlines(keepends=True)
    new = (after or "").splitlines(keepends=True)
    lines = difflib.unified_diff(
        old,
        new,
        fromfile="/dev/null" if before is None else f"a/{name}",
        tofile="/dev/null" if after is None else f"b/{name}",
        n=3,
    )
    out: list[str] = []
    size = 0
    total = 0
    cut = False
    for line in lines:
        if not line.endswith("\n"):
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
