"""The per-process ring buffer of log entries, with live subscribers.

Entries are tuples `(seq, stream, text, ts)` on the hot path (no model per line); `entry_dict`
makes the wire shape `{seq, stream, text, ts}` when a tool returns them. A batch of lines read
in one chunk shares one timestamp and is handed to every subscriber as one list, in order.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, Final

#: Most log entries kept per process (older ones are dropped first).
MAX_ENTRIES: Final = 5000
#: Also bounded by size, so 5,000 very long lines cannot hold hundreds of megabytes.
MAX_CHARS: Final = 8 * 1024 * 1024

Entry = tuple[int, str, str, int]
Subscriber = Callable[[list[Entry]], None]


def now_ms() -> int:
    return int(time.time() * 1000)


def entry_dict(entry: Entry) -> dict[str, Any]:
    seq, stream, text, ts = entry
    return {"seq": seq, "stream": stream, "text": text, "ts": ts}


class LogBuffer:
    """At most `max_entries` entries and about `max_chars` characters; `seq` never repeats."""

    def __init__(self, max_entries: int = MAX_ENTRIES, max_chars: int = MAX_CHARS) -> None:
        # maxlen: the count bound costs nothing per line (the deque drops the oldest in C).
        self._entries: deque[Entry] = deque(maxlen=max_entries)
        #: Characters appended since the size was last measured (an upper bound of the size).
        self._chars = 0
        self._max_entries = max_entries
        self._max_chars = max_chars
        self._subscribers: list[Subscriber] = []
        #: The seq the next entry gets.
        self.next_seq = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def first_seq(self) -> int:
        """The seq of the oldest entry still held (== next_seq when empty)."""
        return self.next_seq - len(self._entries)

    def append(self, stream: str, lines: list[str]) -> None:
        """Add lines of one stream that arrived together, then tell every subscriber."""
        if not lines:
            return
        seq = self.next_seq
        n = len(lines)
        batch = list(
            zip(
                range(seq, seq + n),
                itertools.repeat(stream, n),
                lines,
                itertools.repeat(now_ms(), n),
                strict=True,
            )
        )
        self.next_seq = seq + n
        self._entries.extend(batch)
        self._chars += sum(map(len, lines))
        if self._chars > self._max_chars:
            self._trim()
        if self._subscribers:
            for sub in tuple(self._subscribers):
                try:
                    sub(batch)
                except Exception:
                    # A broken subscriber (a closed client) must not stop the reader or the others.
                    self.unsubscribe(sub)

    def _trim(self) -> None:
        # Rare: measured only once the appended text could exceed the budget (for ordinary
        # lines, every few megabytes), then dropped from the old end until it fits.
        entries = self._entries
        chars = sum(len(e[2]) for e in entries)
        while chars > self._max_chars and len(entries) > 1:
            chars -= len(entries.popleft()[2])
        self._chars = chars

    def since(self, seq: int = 0, limit: int | None = None) -> list[Entry]:
        """Entries with seq >= `seq` (oldest first); with `limit`, only the newest `limit`."""
        start = max(0, seq - self.first_seq)
        count = len(self._entries) - start
        if limit is not None and count > limit:
            start += count - limit
        if start <= 0:
            return list(self._entries)
        return list(itertools.islice(self._entries, start, None))

    def tail(self, limit: int) -> list[Entry]:
        return self.since(0, limit)

    def subscribe(self, sub: Subscriber) -> Callable[[], None]:
        """Call `sub(batch)` for every later batch; returns the unsubscriber."""
        self._subscribers.append(sub)
        return lambda: self.unsubscribe(sub)

    def unsubscribe(self, sub: Subscriber) -> None:
        with contextlib.suppress(ValueError):
            self._subscribers.remove(sub)

    def texts(self) -> Iterable[str]:
        return (e[2] for e in self._entries)
