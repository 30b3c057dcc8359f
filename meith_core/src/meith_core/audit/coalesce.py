"""Coalescing floods of refused and failed calls, so that nobody can push evidence out of the
trail by failing fast.

The first refused or failed call of a kind — same caller, session, tool and outcome — is written
in full and opens a window; the next few of that kind within the window (`BURST` in all) are
written in full too, so ordinary mistakes and retries stay exact evidence; beyond that, calls of
the kind are only counted, and one `coalesced` record says how many there were when the window
closes (at the next record written after it, or when the trail is closed). Calls of tools that
do not exist are one kind whatever name was tried, or a flood of invented names would never
repeat. A second window per kind spans all sessions of a caller kind (`BURST_ALL_SESSIONS`
calls in full), so a peer that opens a new connection — a new session — for every call is
coalesced too. A privileged call that was allowed is never coalesced: it ran, and each one is
evidence of its own.

Successful calls of unprivileged tools are coalesced the same way, per session, at a higher
rate (`OK_BURST` per session and tool per window): an ordinary session's calls are all written,
but no session can fill the trail's byte budget with cheap successful calls faster than the
window lets through. (Whatever fills it, size-based retention carries privileged and denied
records forward: `segments`.)
"""

from __future__ import annotations

from typing import Any, Final

from meith_core.base.ids import new_id
from meith_core.protocol.capabilities import PRIVILEGED

WINDOW_S: Final = 10.0
#: Calls of one kind written in full per window before the rest are only counted.
BURST: Final = 20
#: Calls of one kind from all sessions of a caller kind written in full per window.
BURST_ALL_SESSIONS: Final = 10 * BURST
#: Successful unprivileged calls of one tool per session written in full per window.
OK_BURST: Final = 200
#: The session key of the window that spans all sessions.
ALL_SESSIONS: Final = "*"
#: Open windows kept at once; the oldest is closed (its record written) beyond that.
MAX_WINDOWS: Final = 1024
SAMPLE: Final = 5
_PRIVILEGED_NAMES: Final = frozenset(c.value for c in PRIVILEGED)

_Key = tuple[Any, Any, Any, Any]


class _Window:
    """One kind's window. Opened for every first call of a kind (successful calls included),
    so it is kept cheap: the samples exist only once something is counted."""

    __slots__ = (
        "count",
        "ends",
        "first",
        "first_ts",
        "last_ts",
        "request_ids",
        "session_ids",
        "tool_names",
        "written",
    )

    def __init__(self, ends: float, first: dict[str, Any]) -> None:
        self.ends = ends
        self.first = first
        self.written = 0
        self.count = 0
        self.first_ts = 0
        self.last_ts = 0
        self.request_ids: list[str] = _NO_SAMPLES
        self.tool_names: list[str] = _NO_SAMPLES
        self.session_ids: list[str] = _NO_SAMPLES

    def sample_lists(self) -> None:
        if self.request_ids is _NO_SAMPLES:
            self.request_ids, self.tool_names, self.session_ids = [], [], []


#: Shared by windows that counted nothing yet (never appended to: `sample_lists` first).
_NO_SAMPLES: Final[list[str]] = []


def coalescible(entry: dict[str, Any]) -> bool:
    outcome = entry.get("outcome")
    if entry.get("kind") is not None or outcome is None:
        return False
    if entry.get("decision") == "allow":
        caps = entry.get("capabilities") or ()
        return not any(c in _PRIVILEGED_NAMES for c in caps)
    return bool(outcome != "ok")


class Coalescer:
    def __init__(
        self,
        window_s: float = WINDOW_S,
        burst: int = BURST,
        burst_all_sessions: int | None = None,
        ok_burst: int = OK_BURST,
    ) -> None:
        self.window_s = window_s
        self.burst = max(1, burst)
        self.burst_all = max(1, burst_all_sessions or 10 * self.burst)
        self.ok_burst = max(1, ok_burst)
        self._open: dict[_Key, _Window] = {}
        self._next_end = float("inf")
        self._ready: list[dict[str, Any]] = []

    def absorb(self, entry: dict[str, Any], now: float) -> bool:
        """True when `entry` was counted instead of needing a record of its own."""
        if not coalescible(entry):
            return False
        tool = entry.get("toolName") if entry.get("plugin") is not None else None
        caller, outcome = entry.get("caller"), entry.get("outcome")
        mine = self._window((caller, entry.get("sessionId"), tool, outcome), now, entry)
        if outcome == "ok":
            # Successful calls: per session only (a peer opening a connection per call is
            # slowed by admission; retention carries privileged and denied records forward,
            # whatever fills the trail).
            if mine.written < self.ok_burst:
                mine.written += 1
                return False
            return self._count(mine, entry, tool, wide=False)
        every = self._window((caller, ALL_SESSIONS, tool, outcome), now, entry)
        if mine.written < self.burst and every.written < self.burst_all:
            mine.written += 1
            every.written += 1
            return False
        # Counted once, in the window that is full: the session's own, else the wide one.
        full = mine.written >= self.burst
        return self._count(mine if full else every, entry, tool, wide=not full)

    def _count(self, win: _Window, entry: dict[str, Any], tool: Any, *, wide: bool) -> bool:
        win.sample_lists()
        win.count += 1
        ts = entry.get("ts")
        if isinstance(ts, int):
            win.first_ts = win.first_ts or ts
            win.last_ts = ts
        if len(win.request_ids) < SAMPLE:
            win.request_ids.append(str(entry.get("requestId")))
        name = str(entry.get("toolName"))
        if tool is None and len(win.tool_names) < SAMPLE and name not in win.tool_names:
            win.tool_names.append(name)
        session = str(entry.get("sessionId"))
        if wide and len(win.session_ids) < SAMPLE and session not in win.session_ids:
            win.session_ids.append(session)
        return True

    def _window(self, key: _Key, now: float, entry: dict[str, Any]) -> _Window:
        win = self._open.get(key)
        if win is not None and now < win.ends:
            return win
        if win is not None and win.count:  # expired and not closed by `due` yet
            self._ready.append(_summary(win, key))
        elif win is None and len(self._open) >= MAX_WINDOWS:
            old_key = next(iter(self._open))
            evicted = self._open.pop(old_key)
            if evicted.count:
                self._ready.append(_summary(evicted, old_key))
        win = self._open[key] = _Window(ends=now + self.window_s, first=entry)
        self._next_end = min(self._next_end, win.ends)
        return win

    def due(self, now: float) -> list[dict[str, Any]]:
        """Records for the windows that have closed by `now` (cheap when none has)."""
        if now < self._next_end and not self._ready:
            return []
        out, self._ready = self._ready, []
        next_end = float("inf")
        for key, win in list(self._open.items()):
            if now >= win.ends:
                del self._open[key]
                if win.count:
                    out.append(_summary(win, key))
            else:
                next_end = min(next_end, win.ends)
        self._next_end = next_end
        return out

    def drain(self) -> list[dict[str, Any]]:
        """Records for every open window with counted calls (closing the trail)."""
        out = [*self._ready, *(_summary(w, k) for k, w in self._open.items() if w.count)]
        self._open.clear()
        self._ready = []
        self._next_end = float("inf")
        return out


def _summary(win: _Window, key: _Key) -> dict[str, Any]:
    first = win.first
    wide = key[1] == ALL_SESSIONS
    if first.get("outcome") == "ok":
        refused = "succeeded"
    elif first.get("decision") == "deny" or first.get("plugin") is None:
        refused = "refused"
    else:
        refused = "failed"
    record: dict[str, Any] = {
        "id": new_id("audit"),
        "ts": win.last_ts,
        "kind": "coalesced",
        "requestId": first.get("requestId"),
        "caller": first.get("caller"),
        "sessionId": ALL_SESSIONS if wide else first.get("sessionId"),
        "toolName": first.get("toolName") if first.get("plugin") is not None else "*unknown*",
        "plugin": first.get("plugin"),
        "capabilities": first.get("capabilities"),
        "decision": first.get("decision"),
        "outcome": first.get("outcome"),
        "reason": f"{win.count} more similar calls {refused} ({first.get('outcome')}) after "
        f"request {first.get('requestId')}",
        "count": win.count,
        "firstTs": win.first_ts,
        "lastTs": win.last_ts,
        "requestIds": win.request_ids,
    }
    if win.tool_names:
        record["toolNames"] = win.tool_names
    if wide:
        record["reason"] += f" (from many {first.get('caller')} sessions)"
        record["sessionIds"] = win.session_ids
    return record
