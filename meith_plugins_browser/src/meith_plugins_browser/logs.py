"""Per-tab console and network entries, in bounded ring buffers.

Console entry: `{level: log|info|warn|error|debug, text, ts, source?}`.
Network entry: `{id, method, url, status?, resourceType?, startedAt, endedAt?, durationMs?,
failed, errorText?}`.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from typing import Any, Final

MAX_ENTRIES: Final = 1000
#: A console text longer than this is cut (a page can log megabytes in one call).
MAX_TEXT: Final = 8000
MAX_URL: Final = 4000

_LEVELS: Final = {
    "error": "error",
    "assert": "error",
    "warning": "warn",
    "warn": "warn",
    "debug": "debug",
    "verbose": "debug",
    "info": "info",
}


def console_level(kind: str) -> str:
    """Console API / log entry types mapped to five levels."""
    return _LEVELS.get(kind, "log")


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def _cut(text: str, limit: int) -> str:
    return (
        text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more characters]"
    )


class ConsoleLog:
    def __init__(self, maxlen: int = MAX_ENTRIES) -> None:
        self._entries: deque[dict[str, Any]] = deque(maxlen=maxlen)

    def add(self, level: str, text: str, source: str | None = None) -> None:
        entry: dict[str, Any] = {"level": level, "text": _cut(text, MAX_TEXT), "ts": now_ms()}
        if source:
            entry["source"] = _cut(source, MAX_URL)
        self._entries.append(entry)

    def recent(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Most recent last."""
        items = list(self._entries)
        return items[-limit:] if limit else items

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


class NetworkLog:
    """Entries keyed by the browser's request object while the request is in flight."""

    def __init__(self, maxlen: int = MAX_ENTRIES) -> None:
        self._entries: deque[dict[str, Any]] = deque(maxlen=maxlen)
        self._open: OrderedDict[object, tuple[dict[str, Any], float]] = OrderedDict()
        self._seq = 0

    def started(self, key: object, method: str, url: str, resource_type: str | None) -> None:
        self._seq += 1
        entry: dict[str, Any] = {
            "id": f"net-{self._seq}",
            "method": method,
            "url": _cut(url, MAX_URL),
            "startedAt": now_ms(),
            "failed": False,
        }
        if resource_type:
            entry["resourceType"] = resource_type
        self._entries.append(entry)
        self._open[key] = (entry, time.perf_counter())
        while len(self._open) > MAX_ENTRIES:  # requests that never end (long polls) stay bounded
            self._open.popitem(last=False)

    def responded(self, key: object, status: int) -> None:
        item = self._open.get(key)
        if item is not None:
            item[0]["status"] = status

    def finished(self, key: object, error: str | None = None) -> None:
        item = self._open.pop(key, None)
        if item is None:
            return
        entry, started = item
        entry["endedAt"] = now_ms()
        entry["durationMs"] = round((time.perf_counter() - started) * 1000, 1)
        if error is not None:
            entry["failed"] = True
            entry["errorText"] = error

    def recent(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Most recent last; copies, so a caller never sees an entry change under it."""
        items = [dict(e) for e in self._entries]
        return items[-limit:] if limit else items

    def clear(self) -> None:
        """Forget every entry (numbering goes on, so an id never means two requests)."""
        self._entries.clear()
        self._open.clear()

    def __len__(self) -> int:
        return len(self._entries)
