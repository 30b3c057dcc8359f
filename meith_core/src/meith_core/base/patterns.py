"""Regular expressions a caller supplies: one bounded helper for every tool and plugin.

A pattern from a caller is hostile input. Python's `re` backtracks: `^(a+)+$` against a line
of 27 `a`s and a `!` takes seconds, doubling with each `a`, and on the event loop every other
caller waits for it. `compile_pattern` compiles with RE2 instead (the `google-re2` binding):
matching is linear in the text, whatever the pattern, and the compiled program's memory is
capped, so a pattern that would need more (`(a{1000}){1000}`) is refused when compiled, with a
clear message, rather than run.

RE2 is Perl syntax without the features that need backtracking: backreferences (`\\1`) and
lookaround (`(?=`, `(?!`, `(?<=`, `(?<!`) are refused with `PatternError`, which says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

import re2  # type: ignore[import-untyped]

#: The longest pattern a caller may give.
MAX_PATTERN_CHARS: Final = 1000
#: Memory RE2 may use for one compiled pattern (its program and matching caches).
MAX_PATTERN_MEMORY: Final = 8 * 1024 * 1024

_UNSUPPORTED: Final = (
    ("(?=", "lookahead"),
    ("(?!", "negative lookahead"),
    ("(?<=", "lookbehind"),
    ("(?<!", "negative lookbehind"),
)


class PatternError(ValueError):
    """A caller's pattern that is not compiled: invalid, too long, too large, or using a
    feature a linear-time engine does not have."""


@dataclass(frozen=True, slots=True)
class CallerPattern:
    """A compiled caller pattern; matching it takes time linear in the text."""

    pattern: str
    _compiled: Any = field(repr=False, compare=False)

    def search(self, text: str) -> bool:
        """Whether the pattern matches anywhere in `text`."""
        return self._compiled.search(text) is not None

    def find(self, text: str) -> str | None:
        """The first match in `text`, or None."""
        found = self._compiled.search(text)
        return None if found is None else str(found.group(0))


def compile_pattern(
    pattern: str, *, ignore_case: bool = False, max_chars: int = MAX_PATTERN_CHARS
) -> CallerPattern:
    """Compile a caller-supplied regular expression (RE2 syntax), or raise `PatternError`."""
    if len(pattern) > max_chars:
        raise PatternError(f"regular expression longer than {max_chars} characters")
    options = re2.Options()
    options.max_mem = MAX_PATTERN_MEMORY
    options.log_errors = False
    options.case_sensitive = not ignore_case
    try:
        compiled = re2.compile(pattern, options)
    except re2.error as exc:
        raise PatternError(_explain(pattern, exc)) from None
    return CallerPattern(pattern, compiled)


def _explain(pattern: str, exc: BaseException) -> str:
    text = exc.args[0] if exc.args else str(exc)
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    for marker, what in _UNSUPPORTED:
        if marker in pattern:
            return (
                f"invalid regular expression: {what} is not supported (patterns run on a "
                f"linear-time engine, RE2): {text}"
            )
    if "escape" in str(text) and any(f"\\{d}" in pattern for d in "123456789"):
        return (
            "invalid regular expression: backreferences are not supported (patterns run on a "
            f"linear-time engine, RE2): {text}"
        )
    if "too large" in str(text) or "too big" in str(text):
        return f"regular expression too large to run within its memory bound: {text}"
    return f"invalid regular expression: {text}"
