"""Search hits from rg's records: a record parsed, the hit, and its context lines, each line of
a file given once (where two hits' context would overlap, the later hit's starts after the
earlier's ends)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

#: Longest line text kept in a search hit.
MAX_HIT_CHARS: Final = 500


def parse_record(rest: bytes) -> tuple[int, int | None, bytes] | None:
    """`line:column:text` -> (line, byte column, text); `line-text` (context) -> (line, None,
    text); anything else (never printed by rg) -> None."""
    digits = len(rest) - len(rest.lstrip(b"0123456789"))
    if not digits:
        return None
    line, sep = int(rest[:digits]), rest[digits : digits + 1]
    if sep == b"-":
        return line, None, rest[digits + 1 :]
    if sep != b":":
        return None
    column, colon, text = rest[digits + 1 :].partition(b":")
    if not colon or not column.isdigit():
        return None
    return line, int(column), text


@dataclass
class Hit:
    path: str
    line: int
    column: int
    text: str
    before: list[str] | None = None
    after: list[str] | None = None

    def as_json(self) -> dict[str, Any]:
        """The hit as `SearchMatch` writes it, without the absent context keys."""
        out: dict[str, Any] = {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "text": self.text,
        }
        if self.before is not None:
            out["before"] = self.before
        if self.after is not None:
            out["after"] = self.after
        return out


def strip_line(line: str) -> str:
    line = line.rstrip("\r\n")
    return line if len(line) <= MAX_HIT_CHARS else line[:MAX_HIT_CHARS] + "…"


def add_context(hits: list[Hit], seen: dict[int, str], context: int) -> None:
    """Give one file's hits (in line order) up to `context` lines before and after from
    `seen` (line number -> text), never a line twice: a hit's lines after stop before the
    next hit, and the next hit's lines before start after them."""
    shown = 0  # the last line number given so far
    for i, hit in enumerate(hits):
        end = hit.line + context
        if i + 1 < len(hits):
            end = min(end, hits[i + 1].line - 1)
        hit.before = [
            seen[n] for n in range(max(hit.line - context, shown + 1), hit.line) if n in seen
        ]
        hit.after = [seen[n] for n in range(hit.line + 1, end + 1) if n in seen]
        shown = hit.line + len(hit.after)
