"""Did you mean: the one way the CLI answers a misspelt name (a tool, a tool's parameter, an
option's value) with the names it was probably meant to be. Standard library only."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

#: How alike a name must be to be suggested (difflib's ratio): `agnet` is 0.8 like `agent`.
_CLOSE = 0.75


def closest(word: str, names: Iterable[str]) -> list[str]:
    """Up to three names about as close to `word` as the closest one; none when nothing is
    close (a shared `git_` prefix is not a resemblance)."""
    scored = sorted(
        ((difflib.SequenceMatcher(None, word, n).ratio(), n) for n in set(names)), reverse=True
    )
    if not scored:
        return []
    best = scored[0][0]
    return [n for score, n in scored[:3] if score >= _CLOSE and score >= best - 0.05]


def did_you_mean(word: str, names: Iterable[str], *, prefix: str = "") -> str:
    """' Did you mean X?' (each name written with `prefix`, e.g. `--`), or ''."""
    close = closest(word, names)
    return f" Did you mean {' or '.join(prefix + n for n in close)}?" if close else ""


def not_one_of(value: str, allowed: Iterable[str]) -> str:
    """Why `value` is refused: the values the option takes, and the closest one."""
    names = list(allowed)
    return f"{value!r} is not one of: {', '.join(names)}.{did_you_mean(value, names)}"
