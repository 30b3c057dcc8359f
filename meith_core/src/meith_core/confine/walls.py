"""Walls that explain themselves: what the walls of one confined process refused while it ran
(a connection, a name lookup), each with the grant flag that would open it, and hints for a
failed command whose error output shows a write the walls stopped. A model reading a result
learns "meith refused example.com: grant --net example.com" instead of debugging DNS."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from meith_core.base.paths import is_within

#: Refusals kept per process (the first ones; the rest are counted).
MAX_REFUSALS: Final = 20
#: Hints drawn from the error output of one command, at most.
MAX_WRITE_HINTS: Final = 3
_WRITE_ERRORS: Final = re.compile(
    r"Permission denied|Read-only file system|Operation not permitted"
)
#: What a path in a directory made private for the process (its own empty /tmp) says.
_MISSING: Final = re.compile(r"No such file or directory|cannot access|can't cd|not found")
_PATH: Final = re.compile(r"(?<![\w.])(/[\w.@+~,=%-]+(?:/[\w.@+~,=%-]*)*)")


class WallLog:
    """What one confined process's walls refused, in order, without repeats (thread-safe: the
    gate's and the control channel's threads add to it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, str], dict[str, str]] = {}
        self.more = 0

    def add(
        self, wall: str, what: str, *, opens: str | None = None, note: str | None = None
    ) -> None:
        entry = {"wall": wall, "what": what}
        if opens is not None:
            entry["open"] = opens
        if note is not None:
            entry["note"] = note
        with self._lock:
            if (wall, what) in self._entries:
                return
            if len(self._entries) >= MAX_REFUSALS:
                self.more += 1
                return
            self._entries[(wall, what)] = entry

    def refused(self) -> list[dict[str, str]]:
        with self._lock:
            return list(self._entries.values())


def refusal_diagnostics(refused: Iterable[Mapping[str, str]]) -> list[dict[str, str]]:
    """One warning per refusal, for the result of a command that failed after it."""
    out = []
    for entry in refused:
        how = entry.get("open") or entry.get("note") or ""
        out.append(
            {
                "level": "warn",
                "message": f"meith refused {entry['what']} (the {entry['wall']} wall)"
                + (f": {how}" if how else ""),
            }
        )
    return out


def write_hints(
    stderr: str,
    *,
    writable: Sequence[str],
    read_only: Sequence[str] = (),
    hidden: Sequence[str] = (),
    private: Sequence[str] = (),
    scope: str,
) -> list[dict[str, str]]:
    """Hints for the paths a failed command's error output names next to a write error
    ("Permission denied", "Read-only file system") where a wall, not the file's mode, is the
    likely cause: outside the writable directories, in read-only git metadata, or hidden; and
    next to "No such file or directory" for a path in a directory made private for the
    process (its /tmp holds only its own directories)."""
    hints: list[dict[str, str]] = []
    seen: set[str] = set()
    for line in stderr.splitlines():
        if len(hints) >= MAX_WRITE_HINTS:
            break
        write, missing = _WRITE_ERRORS.search(line), _MISSING.search(line)
        if not (write or missing):
            continue
        for path in _PATH.findall(line):
            if path in seen or len(hints) >= MAX_WRITE_HINTS:
                continue
            seen.add(path)
            if write:
                message = _why(path, writable, read_only, hidden, scope)
            else:
                message = _unseen(path, writable, private)
            if message is not None:
                hints.append({"level": "warn", "message": message})
    return hints


def _unseen(path: str, writable: Sequence[str], private: Sequence[str]) -> str | None:
    where = next((d for d in private if is_within(path, d)), None)
    if where is None or any(is_within(path, w) for w in writable):
        return None
    return (
        f"{path} is not there for this process: meith gives it a private {where} (the "
        f"user-sockets wall) holding only {', '.join(writable)}; a grant that covers the "
        "directory makes it visible (meith grants add -c starts-process --cwd DIR)"
    )


def _why(
    path: str, writable: Sequence[str], read_only: Sequence[str], hidden: Sequence[str], scope: str
) -> str | None:
    if any(is_within(path, h) for h in hidden):
        return (
            f"{path} is hidden from this process by meith (the secrets wall: "
            "confinement.secretPaths and meith's homes are covered)"
        )
    if any(is_within(path, r) for r in read_only):
        return (
            f"{path} is read-only for this process (the git-metadata wall: existing .git is "
            "mounted read-only; run git commands that write it through meith's git tools)"
        )
    if not any(is_within(path, w) for w in writable):
        return (
            f"meith's writes wall: this process writes only beneath {', '.join(writable)}; "
            f"{path} is outside (to write there, a grant must cover it: meith grants add -c "
            "starts-process --cwd DIR)"
        )
    return None


def report(
    in_force: Sequence[str], writable: Sequence[str], net: Sequence[str], log: WallLog
) -> dict[str, Any]:
    """The `walls` field of a result: the walls in force, where writes go, the network rules,
    and what was refused."""
    out: dict[str, Any] = {
        "inForce": list(in_force),
        "writable": list(writable),
        "network": list(net),
        "refused": log.refused(),
    }
    if log.more:
        out["refusedMore"] = log.more
    return out


__all__ = ["WallLog", "refusal_diagnostics", "report", "write_hints"]
