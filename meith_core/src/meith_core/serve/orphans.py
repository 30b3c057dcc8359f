"""The runtime keeps what its children leave behind (Linux): it is a child subreaper.

A process a tool started can detach (fork twice, `setsid`) so that it no longer looks like a
descendant of the runtime, and connect to the runtime's socket as if it were the local user.
As a child subreaper (`PR_SET_CHILD_SUBREAPER`) the runtime, not init, becomes the parent of
every process orphaned below it, so the socket still sees such a peer as a descendant and asks
it for its session token (`base.peers.peer_descends_from`).

Adopted orphans are the runtime's to reap when they exit. Its own children are waited for by
whoever started them (asyncio's child watcher, `subprocess`), and reaping one of those first
would lose its exit status; so `OrphanReaper` reaps only a child that has stayed a zombie for
`ORPHAN_GRACE_S` — far longer than any of those waiters leaves one.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import time
from typing import Final

import structlog

_log = structlog.get_logger("meith.server")

_PR_SET_CHILD_SUBREAPER: Final = 36
_PR_GET_CHILD_SUBREAPER: Final = 37
#: A child that stays a zombie this long is an adopted orphan nobody else waits for.
ORPHAN_GRACE_S: Final = 5.0

_holders = 0
_was_subreaper = False


def _prctl(option: int, arg: object) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.prctl(option, arg, 0, 0, 0))


def _is_subreaper() -> bool:
    flag = ctypes.c_int(0)
    if _prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(flag)) != 0:
        return False
    return flag.value != 0


def adopt_orphans() -> bool:
    """Make this process a child subreaper (until as many `release_orphans` calls); False
    where the system has no such thing."""
    global _holders, _was_subreaper
    if not sys.platform.startswith("linux"):
        return False
    if _holders == 0:
        try:
            _was_subreaper = _is_subreaper()
            if not _was_subreaper and _prctl(_PR_SET_CHILD_SUBREAPER, 1) != 0:
                _log.warning("cannot become a child subreaper", errno=ctypes.get_errno())
                return False
        except (OSError, AttributeError) as exc:
            _log.warning("cannot become a child subreaper", error=str(exc))
            return False
    _holders += 1
    return True


def release_orphans() -> None:
    """Undo one `adopt_orphans` (the last one restores what the process was before)."""
    global _holders
    if _holders == 0:
        return
    _holders -= 1
    if _holders == 0 and not _was_subreaper:
        with contextlib.suppress(OSError, AttributeError):
            _prctl(_PR_SET_CHILD_SUBREAPER, 0)


def _zombie_children() -> dict[int, bytes]:
    """This process's children that are zombies, with their start time (to tell a pid reused
    between two sweeps)."""
    out: dict[int, bytes] = {}
    pids: set[int] = set()
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return out
    for tid in tids:
        with (
            contextlib.suppress(OSError, ValueError),
            open(f"/proc/self/task/{tid}/children", "rb") as fh,
        ):
            pids.update(int(p) for p in fh.read().split())
    for pid in pids:
        with contextlib.suppress(OSError, ValueError, IndexError):
            with open(f"/proc/{pid}/stat", "rb") as fh:
                stat = fh.read()
            fields = stat[stat.rindex(b")") + 2 :].split()
            if fields[0] == b"Z":
                out[pid] = fields[19]  # starttime
    return out


class OrphanReaper:
    """Reaps adopted orphans, sweep by sweep (the socket server's watchdog sweeps)."""

    def __init__(self, grace_s: float = ORPHAN_GRACE_S) -> None:
        self.grace_s = grace_s
        #: Zombie children seen so far: pid -> (start time, when first seen).
        self._seen: dict[int, tuple[bytes, float]] = {}

    def sweep(self, now: float | None = None) -> list[int]:
        """Reap the children that have been zombies for the grace period; returns their pids."""
        now = time.monotonic() if now is None else now
        try:
            # Cheap when there is nothing to do: is any child a zombie? (WNOWAIT: not reaped)
            any_zombie = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            any_zombie = None
        if any_zombie is None:
            self._seen.clear()
            return []
        zombies = _zombie_children()
        seen: dict[int, tuple[bytes, float]] = {}
        reaped: list[int] = []
        for pid, start in zombies.items():
            before = self._seen.get(pid)
            since = before[1] if before is not None and before[0] == start else now
            if now - since < self.grace_s:
                seen[pid] = (start, since)
                continue
            with contextlib.suppress(ChildProcessError):
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    reaped.append(pid)
        self._seen = seen
        if reaped:
            _log.debug("reaped adopted orphans", pids=reaped)
        return reaped
