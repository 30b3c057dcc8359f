"""'Did you mean …?': the names closest to a misspelt one (a tool, an argument, a CLI flag or
option value), for every surface that refuses a name (the CLI, the call pipeline, the MCP
bridge)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

#: How alike two names must be (difflib's ratio) to be offered.
_CLOSE = 0.75
#: Only names about as close as the best one: a shared `git_` prefix is not a resemblance.
_BAND = 0.05


def close_names(name: str, names: Iterable[str], *, most: int = 3) -> list[str]:
    """The names most like `name`, best first; empty when none is close."""
    scored = sorted(
        ((difflib.SequenceMatcher(None, name, n).ratio(), n) for n in set(names) if n != name),
        key=lambda pair: (-pair[0], pair[1]),
    )
    if not scored:
        return []
    best = scored[0][0]
    return [n for score, n in scored[:most] if score >= _CLOSE and score >= best - _BAND]


def did_you_mean(name: str, names: Iterable[str], *, quote: str = "", prefix: str = "") -> str:
    """`' Did you mean x or y?'` (each name written as `quote prefix name quote`, e.g. `--x`
    for a CLI flag), or the empty string when no name is close."""
    close = close_names(name, names)
    if not close:
        return ""
    return f" Did you mean {' or '.join(f'{quote}{prefix}{n}{quote}' for n in close)}?"


def not_one_of(value: str, allowed: Iterable[str]) -> str:
    """Why `value` is refused: the values an option takes, and the closest one."""
    names = list(allowed)
    return f"{value!r} is not one of: {', '.join(names)}.{did_you_mean(value, names)}"
