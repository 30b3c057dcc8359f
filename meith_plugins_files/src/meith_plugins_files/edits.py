"""Edits to one file's text, located first and applied only when every one of them holds.

Two forms: a range `{start, end, newText}` (character offsets, end exclusive, into the text
as read) and an exact text `{oldText, newText, replaceAll?}`. All edits are located against
the original text; they must not overlap. Any edit that does not hold fails the whole batch
with a message that says how many matches there were and where.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Final

from meith_core import ErrorCode, ToolError
from meith_plugins_files.models import Edit, RangeEdit
from meith_plugins_files.textio import line_ending

#: Lines listed in a "matches N times" message before "…".
_MAX_LINES_LISTED: Final = 10


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int
    text: str
    edit: int  # 1-based index of the edit it came from


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _lines_list(text: str, offsets: list[int]) -> str:
    lines = [str(line_of(text, o)) for o in offsets[:_MAX_LINES_LISTED]]
    more = ", …" if len(offsets) > _MAX_LINES_LISTED else ""
    word = "line" if len(offsets) == 1 else "lines"
    return f"{word} {', '.join(lines)}{more}"


def _find_all(text: str, needle: str) -> list[int]:
    out, i = [], text.find(needle)
    while i >= 0:
        out.append(i)
        i = text.find(needle, i + len(needle))
    return out


def _ignoring_whitespace(text: str, old: str) -> list[int]:
    """Where `old` is in `text` when all whitespace is left out of both (`sum( items )` is
    at `sum(items)`), as offsets into `text`."""
    needle = "".join(old.split())
    if not needle:
        return []
    kept = [i for i, ch in enumerate(text) if not ch.isspace()]
    squeezed = "".join(text[i] for i in kept)
    return [kept[o] for o in _find_all(squeezed, needle)]


def _not_found(text: str, old: str, number: int, where: str) -> ToolError:
    hints = []
    found = _ignoring_whitespace(text, old)
    if found:
        hints.append(
            f"it matches at {_lines_list(text, found)} when whitespace is ignored "
            "(check spaces, indentation and line breaks)"
        )
    first = next((line.strip() for line in old.splitlines() if line.strip()), "")
    if not hints and first and first != old.strip():
        found = _find_all(text, first)
        if found:
            hints.append(f"its first line appears at {_lines_list(text, found)}")
    message = f"edit {number}: oldText was not found in {where} (0 matches)"
    if hints:
        message += "; " + "; ".join(hints)
    return ToolError(
        ErrorCode.TOOL_FAILED,
        message + ". Nothing was changed.",
        {"reason": "no match", "edit": number, "matches": 0},
    )


def locate(text: str, edits: list[Edit], where: str) -> list[Span]:
    """The spans the edits replace, sorted; ToolError (nothing applied) when one fails."""
    spans: list[Span] = []
    crlf: bool | None = None  # whether the file's line breaks are CRLF: found when needed
    for number, edit in enumerate(edits, 1):
        if isinstance(edit, RangeEdit):
            if edit.start > edit.end or edit.end > len(text):
                raise ToolError(
                    ErrorCode.TOOL_FAILED,
                    f"edit {number}: range {edit.start}..{edit.end} is not within {where} "
                    f"({len(text)} characters). Nothing was changed.",
                    {"reason": "bad range", "edit": number, "length": len(text)},
                )
            spans.append(Span(edit.start, edit.end, edit.newText, number))
            continue
        old, new = edit.oldText, edit.newText
        found = _find_all(text, old)
        if not found and "\n" in old and "\r\n" not in old:
            if crlf is None:  # counted once, and only for an edit that needs it
                crlf = line_ending(text) == "crlf"
            if crlf:
                # The agent wrote LF line breaks against a CRLF file: match and write CRLF.
                old = old.replace("\n", "\r\n")
                new = new.replace("\r\n", "\n").replace("\n", "\r\n")
                found = _find_all(text, old)
        if not found:
            raise _not_found(text, edit.oldText, number, where)
        if len(found) > 1 and not edit.replaceAll:
            raise ToolError(
                ErrorCode.TOOL_FAILED,
                f"edit {number}: oldText matches {len(found)} times in {where} "
                f"({_lines_list(text, found)}); include more surrounding lines to make it "
                "unique, or set replaceAll: true. Nothing was changed.",
                {
                    "reason": "ambiguous",
                    "edit": number,
                    "matches": len(found),
                    "lines": [line_of(text, o) for o in found],
                },
            )
        spans.extend(Span(o, o + len(old), new, number) for o in found)
    spans.sort(key=lambda s: (s.start, s.end))
    for a, b in itertools.pairwise(spans):
        if b.start < a.end or (b.start == a.start and a.edit != b.edit):
            raise ToolError(
                ErrorCode.TOOL_FAILED,
                f"edits {a.edit} and {b.edit} overlap (at line {line_of(text, b.start)}); "
                "combine them into one. Nothing was changed.",
                {"reason": "overlap", "edits": [a.edit, b.edit]},
            )
    return spans


def apply(text: str, spans: list[Span]) -> str:
    out, pos = [], 0
    for span in spans:
        out.append(text[pos : span.start])
        out.append(span.text)
        pos = span.end
    out.append(text[pos:])
    return "".join(out)
