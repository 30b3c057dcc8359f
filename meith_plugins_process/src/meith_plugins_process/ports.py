"""Which port a dev server serves on: announced in its output, or listening in its tree."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable
from typing import Final

import psutil

# Port announcement patterns, in order, case-insensitive; the first one that matches a line wins.
_PATTERNS: Final = (
    re.compile(r"https?://(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1\]|\[::\]):(\d{2,5})", re.I),
    re.compile(r"(?:listening|running|ready|started|local|preview).{0,40}?:(\d{2,5})\b", re.I),
    re.compile(r"\bport[:\s]+(\d{2,5})\b", re.I),
)
# Cheap pre-filter: a line without a colon or the word "port" cannot match any pattern, and
# this one scan over a whole chunk is far cheaper than three patterns per line.
_MAYBE: Final = re.compile(r":\d|port", re.I)


def port_in_lines(lines: Iterable[str]) -> int | None:
    """The port announced by the first line that announces one (1..65535), else None."""
    for line in lines:
        if not _MAYBE.search(line):
            continue
        for pattern in _PATTERNS:
            match = pattern.search(line)
            if match:
                port = int(match.group(1))
                if 1 <= port <= 65535:
                    return port
    return None


def port_in_chunk(lines: list[str]) -> int | None:
    """`port_in_lines` for a batch, pre-filtered with one scan of the joined text."""
    if not lines or not _MAYBE.search("\n".join(lines)):
        return None
    return port_in_lines(lines)


def listening_ports(pid: int) -> list[int]:
    """TCP ports process `pid` listens on (sorted; empty if it is gone or not ours)."""
    with contextlib.suppress(psutil.Error, OSError):
        conns = psutil.Process(pid).net_connections(kind="tcp")
        return sorted({c.laddr.port for c in conns if c.status == psutil.CONN_LISTEN and c.laddr})
    return []
