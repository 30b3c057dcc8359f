"""Durations an environment variable may tune (tests shorten them; a slow reviewer lengthens
one). A value that is not a positive number of seconds up to the limit is ignored: a typo must
not mean "forever" or "at once"."""

from __future__ import annotations

import math
from collections.abc import Mapping


def seconds_from_env(
    environ: Mapping[str, str], name: str, default: float, maximum: float = 86400.0
) -> float:
    """`environ[name]` as seconds when it is a number in (0, maximum], else `default`."""
    raw = environ.get(name, "").strip()
    try:
        value = float(raw)
    except ValueError:
        return default
    if not math.isfinite(value) or not 0 < value <= maximum:
        return default
    return value
