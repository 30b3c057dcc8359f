"""Reading the trail as `meith audit` and `meith ui` show it: the newest records with intents
that never got an outcome marked `interrupted` (`running` while their runtime lives), and a
follower that reads only what was appended since."""

from __future__ import annotations

import json
import os
from collections import deque
from typing import Any


def collect(
    records: Any,
    limit: int,
    keep: Any,
    live_pids: set[int],
) -> list[dict[str, Any]]:
    """The newest `limit` records to show, oldest first: outcomes as written, and intents that
    never got an outcome as `interrupted` (or `running` while their runtime is alive)."""
    shown: deque[dict[str, Any]] = deque(maxlen=max(0, limit))
    open_intents: dict[tuple[Any, Any], dict[str, Any]] = {}
    for r in records:
        key = (r.get("sessionId"), r.get("requestId"))
        kind = r.get("kind")
        if kind == "intent":
            open_intents[key] = r
            continue
        if kind is None:
            open_intents.pop(key, None)
        if keep(r):
            shown.append(r)
    unfinished = []
    for r in open_intents.values():
        alive = r.get("pid") in live_pids
        r = {**r, "outcome": "running" if alive else "interrupted"}
        if keep(r):
            unfinished.append(r)
    merged = sorted([*shown, *unfinished], key=lambda r: r.get("ts") or 0)
    return merged[-limit:] if limit > 0 else []


class Follower:
    """Records appended to the trail since it was opened: reads only what is new, following
    the current segment across rotations (never re-reading the whole trail)."""

    def __init__(self, path: Any) -> None:
        self.path = path
        self.fh: Any = None
        self.ino = -1
        self.rest = b""
        self._open(at_end=True)

    def _open(self, *, at_end: bool) -> None:
        try:
            self.fh = open(self.path, "rb")  # noqa: SIM115 - kept open between polls
        except OSError:
            self.fh, self.ino = None, -1
            return
        self.ino = os.fstat(self.fh.fileno()).st_ino
        if at_end:
            self.fh.seek(0, os.SEEK_END)

    def new_records(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if self.fh is None:
            self._open(at_end=False)
        if self.fh is None:
            return out
        out += self._drain()
        try:
            moved = os.stat(self.path).st_ino != self.ino
        except OSError:
            moved = False
        if moved:  # rotated: the old segment's tail was read above, continue in the new one
            self.fh.close()
            self.rest = b""
            self._open(at_end=False)
            if self.fh is not None:
                out += self._drain()
        return out

    def _drain(self) -> list[dict[str, Any]]:
        data = self.rest + self.fh.read()
        *lines, self.rest = data.split(b"\n")
        out = []
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                out.append(record)
        return out

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()
