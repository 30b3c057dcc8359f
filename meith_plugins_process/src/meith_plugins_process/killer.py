"""The one process-group killer: stop, kill, shutdown and crash recovery all end processes here.

Every managed process is started as the leader of a new session (so its session id and process
group id equal its pid) and carries `MEITH_PROCESS_ID=<its id>` in its environment, which its
descendants inherit. A target's members are found in one pass over the process table:

- when the leader is still the process we started (pid *and* start time match): every process
  in its session or process group, every descendant of it (even one that moved to a session of
  its own), and every process carrying the marker;
- when the leader is gone: only processes carrying the marker. Its pid, session and group
  numbers may have been reused by an unrelated process, so they prove nothing any more.

The killer never signals itself or one of its ancestors, and leaves alone a target the runtime
itself runs inside (started from a terminal a previous runtime left behind: that shell and its
other jobs are the user's).

Zombies count as gone: a dead process whose parent has not reaped it yet (PID 1 in some
containers never reaps) has already released everything it held.

A confined spawn's members cannot leave its PID namespace (`KillTarget.namespace`): its leader,
the confinement wrapper, is then the only process signalled. It passes the signal to every
member once, through the namespace's init, and SIGKILL to it ends them all; the members found
are still watched until they are gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

import anyio.to_thread
import psutil

#: Environment variable naming the managed process (dev_…/term_…) in the child and its
#: descendants; how survivors are recognised once their leader is gone.
MARKER_ENV: Final = "MEITH_PROCESS_ID"

#: Two reads of one process's start time agree far closer than this; a reused pid does not.
START_TIME_TOLERANCE_S: Final = 0.05

_POLL_FIRST_S: Final = 0.01
_POLL_MAX_S: Final = 0.05


@dataclass(frozen=True, slots=True)
class KillTarget:
    """A managed process to end: its id (the marker), leader pid and start time, signal."""

    id: str
    pid: int | None
    create_time: float | None
    sig: signal.Signals = signal.SIGTERM
    #: The leader holds every member in a PID namespace of its own (a confined spawn's wrapper).
    namespace: bool = False


@dataclass(slots=True)
class Outcome:
    """What happened to one target."""

    id: str
    #: Processes found alive when the kill started.
    found: list[int] = field(default_factory=list)
    #: Processes that needed SIGKILL after the grace period.
    killed: list[int] = field(default_factory=list)
    #: Processes still alive at the end (should be empty; reported, not hidden).
    survivors: list[int] = field(default_factory=list)

    @property
    def was_running(self) -> bool:
        return bool(self.found)


def parse_signal(name: str | int | None, default: signal.Signals) -> signal.Signals:
    """`"SIGTERM"`, `"term"`, `"15"` or 15 -> `Signals.SIGTERM`; ValueError names the accepted."""
    if name is None or name == "":
        return default
    if isinstance(name, int) or (isinstance(name, str) and name.strip().isdigit()):
        try:
            return signal.Signals(int(name))
        except ValueError:
            raise ValueError(f"unknown signal number {name}") from None
    text = name.strip().upper()
    if not text.startswith("SIG"):
        text = "SIG" + text
    try:
        return signal.Signals[text]
    except KeyError:
        common = "SIGTERM, SIGINT, SIGHUP, SIGKILL, SIGQUIT, SIGUSR1, SIGUSR2"
        raise ValueError(f"unknown signal {name!r}; use a name such as {common}") from None


def identity_matches(proc: psutil.Process, create_time: float | None) -> bool:
    """True when `proc` is alive, not a zombie, and (if known) started at `create_time`."""
    try:
        if (
            create_time is not None
            and abs(proc.create_time() - create_time) > START_TIME_TOLERANCE_S
        ):
            return False
        return bool(proc.status() != psutil.STATUS_ZOMBIE)
    except (psutil.NoSuchProcess, psutil.AccessDenied, ProcessLookupError):
        return False


def _alive(proc: psutil.Process) -> bool:
    # psutil.Process remembers the start time it saw: is_running() is False for a reused pid.
    try:
        return bool(proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def _protected_pids() -> set[int]:
    """This process and its ancestors: never signalled."""
    out = {os.getpid()}
    with contextlib.suppress(psutil.Error):
        out.update(p.pid for p in psutil.Process().parents())
    return out


def find_members(targets: Sequence[KillTarget]) -> dict[str, list[psutil.Process]]:
    """One pass over the process table: the live members of each target (blocking; run it in
    a worker thread)."""
    protected = _protected_pids()
    # A target that contains this runtime (it runs inside a terminal a previous runtime left
    # behind) is left alone entirely: its other processes are the user's, not survivors.
    own_marker = os.environ.get(MARKER_ENV)
    live = [t for t in targets if t.id != own_marker and t.pid not in protected]
    leaders: dict[int, str] = {}
    for t in live:
        if t.pid is None:
            continue
        with contextlib.suppress(psutil.Error):
            if identity_matches(psutil.Process(t.pid), t.create_time):
                leaders[t.pid] = t.id
    markers = {t.id for t in live}
    members: dict[str, dict[int, psutil.Process]] = {t.id: {} for t in targets}
    parent_of: dict[int, int] = {}
    procs: dict[int, psutil.Process] = {}
    for proc in psutil.process_iter(["ppid", "status"]):
        pid = proc.pid
        info = proc.info
        if pid in protected or info.get("status") == psutil.STATUS_ZOMBIE:
            continue
        procs[pid] = proc
        parent_of[pid] = info.get("ppid") or 0
        owner: str | None = leaders.get(pid)
        if owner is None and leaders:
            with contextlib.suppress(OSError):
                owner = leaders.get(os.getsid(pid)) or leaders.get(os.getpgid(pid))
        if owner is None:
            try:
                marker = proc.environ().get(MARKER_ENV)
            except (psutil.Error, OSError):
                marker = None
            if marker in markers:
                owner = marker
        if owner is not None:
            members[owner][pid] = proc
    # Descendants that left the session (setsid daemons still parented under the tree).
    if leaders:
        children: dict[int, list[int]] = {}
        for pid, ppid in parent_of.items():
            children.setdefault(ppid, []).append(pid)
        for leader, owner in leaders.items():
            stack = list(children.get(leader, ()))
            while stack:
                pid = stack.pop()
                if pid not in members[owner] and pid in procs:
                    members[owner][pid] = procs[pid]
                stack.extend(children.get(pid, ()))
    return {tid: list(found.values()) for tid, found in members.items()}


def _signal_all(
    procs: Iterable[psutil.Process], sig: signal.Signals, skip_group: int | None
) -> None:
    for proc in procs:
        # psutil refuses to signal a pid that was reused since it saw the process.
        with contextlib.suppress(psutil.Error, OSError):
            if skip_group is not None and os.getpgid(proc.pid) == skip_group:
                continue  # got it from killpg already; a second SIGINT/SIGTERM is not the same
            proc.send_signal(sig)


def _signal_group(pgid: int | None, create_time: float | None, sig: signal.Signals) -> int | None:
    """Signal the leader's whole group, only while the leader is provably ours (so the group
    number is too); also reaches members forked after the scan. Returns the group signalled."""
    if pgid is None:
        return None
    with contextlib.suppress(psutil.Error, OSError):
        if identity_matches(psutil.Process(pgid), create_time) and pgid not in _protected_pids():
            os.killpg(pgid, sig)
            return pgid
    return None


def _signal_target(
    target: KillTarget, procs: Iterable[psutil.Process], sig: signal.Signals
) -> None:
    if target.namespace and _signal_leader(target, sig):
        return
    group = _signal_group(target.pid, target.create_time, sig)
    _signal_all(procs, sig, group)


def _signal_leader(target: KillTarget, sig: signal.Signals) -> bool:
    """Signal only the leader, while it is provably ours; whether it was."""
    if target.pid is None:
        return False
    with contextlib.suppress(psutil.Error, OSError):
        leader = psutil.Process(target.pid)
        if identity_matches(leader, target.create_time) and target.pid not in _protected_pids():
            leader.send_signal(sig)
            return True
    return False


async def terminate(
    targets: Sequence[KillTarget], *, grace_s: float, kill_wait_s: float = 1.0
) -> list[Outcome]:
    """Signal every target at once, wait (in parallel) up to `grace_s` for all members to go,
    SIGKILL what is left, and wait up to `kill_wait_s` more.

    Cancelled while waiting (a shutdown budget ran out), it SIGKILLs what is left before the
    cancellation propagates: a cancelled stop never leaves processes running.
    """
    if not targets:
        return []
    try:
        found = await anyio.to_thread.run_sync(find_members, list(targets))
    except BaseException:
        # Cancelled before the scan finished (a shutdown budget ran out): at least the groups
        # of leaders that are provably ours die.
        for t in targets:
            _signal_group(t.pid, t.create_time, signal.SIGKILL)
        raise
    outcomes = {t.id: Outcome(t.id, found=sorted(p.pid for p in found[t.id])) for t in targets}
    for t in targets:
        _signal_target(t, found[t.id], t.sig)
    pending = {t.id: [p for p in found[t.id] if _alive(p)] for t in targets}
    try:
        if grace_s > 0:
            pending = await _wait_gone(pending, grace_s)
        leftovers = {tid: procs for tid, procs in pending.items() if procs}
        if leftovers:
            for t in targets:
                if leftovers.get(t.id):
                    _signal_target(t, leftovers[t.id], signal.SIGKILL)
                    outcomes[t.id].killed = sorted(p.pid for p in leftovers[t.id])
            pending = await _wait_gone(leftovers, kill_wait_s)
    except BaseException:
        for t in targets:
            _signal_target(t, pending.get(t.id, ()), signal.SIGKILL)
        raise
    for tid, procs in pending.items():
        outcomes[tid].survivors = sorted(p.pid for p in procs if _alive(p))
    return [outcomes[t.id] for t in targets]


async def _wait_gone(
    pending: dict[str, list[psutil.Process]], timeout_s: float
) -> dict[str, list[psutil.Process]]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    delay = _POLL_FIRST_S
    while True:
        pending = {tid: [p for p in procs if _alive(p)] for tid, procs in pending.items()}
        if not any(pending.values()) or loop.time() >= deadline:
            return pending
        await asyncio.sleep(min(delay, max(0.0, deadline - loop.time())))
        delay = min(delay * 2, _POLL_MAX_S)
