"""'Did you mean …?': the names closest to a misspelt one (a tool, an argument), for every
surface that refuses a name (the CLI, the call pipeline, the MCP bridge)."""

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


def did_you_mean(name: str, names: Iterable[str], *, quote: str = "") -> str:
    """`' Did you mean x or y?'`, or the empty string when no name is close."""
    close = close_names(name, names)
    if not close:
        return ""
    return f" Did you mean {' or '.join(f'{quote}{n}{quote}' for n in close)}?"
