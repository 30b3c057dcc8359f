"""Connection capacity, per caller: no caller can take the slots another needs.

One pool for everyone let a process the runtime started lock the local user out: 20 children
each holding 230 connections filled the runtime's 4,096. Slots are now counted by who holds
them:

- every peer process: at most `per_peer`;
- processes the runtime started (descendants: dev servers, terminals, hooks, and whatever they
  fork, detached ones included, the runtime being their subreaper): together at most
  `descendants`, so the rest of `total` stays for the local user and the clients the user runs
  (the CLI, the MCP bridge); and each process tree below the runtime (one started process and
  its offspring) at most `per_tree`;
- connections that present one session's token: at most `per_session` for that session,
  whatever processes they come from.

A connection on the children's socket that has no valid session token within a few seconds
(in any frame carrying `clientInfo`: a hello, a call) is closed by the socket server
(`protocol.connection.Connection.overdue`): a slot there is not held by presenting nothing.
On the runtime's own socket a descendant without a token is refused call by call and counts
against the descendants' share until the idle timeout.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Final

from meith_core.base.peers import parent_pid

MAX_CONNECTIONS: Final = 4096
#: Connections one peer process may hold at once (one process cannot take every slot).
MAX_CONNECTIONS_PER_PEER: Final = 256
#: All processes the runtime started, together: the other 3,072 slots are the local user's.
MAX_DESCENDANT_CONNECTIONS: Final = 1024
#: One process tree below the runtime (a started process and everything it forks).
MAX_CONNECTIONS_PER_TREE: Final = 256
#: Connections bound to one session by its token.
MAX_CONNECTIONS_PER_SESSION: Final = 256
#: A connection on the children's socket with no valid session token by then is closed.
TOKEN_GRACE_S: Final = 5.0


@dataclass(frozen=True, slots=True)
class Limits:
    total: int = MAX_CONNECTIONS
    per_peer: int = MAX_CONNECTIONS_PER_PEER
    descendants: int = MAX_DESCENDANT_CONNECTIONS
    per_tree: int = MAX_CONNECTIONS_PER_TREE
    per_session: int = MAX_CONNECTIONS_PER_SESSION


@dataclass(slots=True)
class Slot:
    """One admitted connection's place in the counts."""

    pid: int
    #: The process tree below the runtime the peer belongs to (0: not a descendant).
    tree: int
    session: str | None = None


def tree_root(pid: int, runtime_pid: int) -> int:
    """The ancestor of `pid` whose parent is the runtime (the process the runtime started, or
    an orphan it adopted); `pid` itself when the chain cannot be read."""
    current = pid
    for _ in range(4096):
        parent = parent_pid(current)
        if parent is None or parent <= 1:
            return pid
        if parent == runtime_pid:
            return current
        current = parent
    return pid


class Capacity:
    """The counts of one socket server's connections."""

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        self.count = 0
        self._peers: Counter[int] = Counter()
        self._trees: Counter[int] = Counter()
        self._sessions: Counter[str] = Counter()
        self.descendants = 0

    def admit(self, pid: int, tree: int | None) -> Slot | str:
        """A slot for a peer (`tree`: its process tree when it descends from the runtime),
        or why not."""
        lim = self.limits
        if self.count >= lim.total:
            return f"too many connections (limit {lim.total})"
        if self._peers[pid] >= lim.per_peer:
            return f"this process holds too many connections (limit {lim.per_peer})"
        if tree is not None:
            if self.descendants >= lim.descendants:
                return (
                    "processes started by this runtime hold too many connections (limit "
                    f"{lim.descendants}; the rest are kept for the local user)"
                )
            if self._trees[tree] >= lim.per_tree:
                return f"this process tree holds too many connections (limit {lim.per_tree})"
            self._trees[tree] += 1
            self.descendants += 1
        self._peers[pid] += 1
        self.count += 1
        return Slot(pid, tree or 0)

    def bind_session(self, slot: Slot, session_id: str) -> str | None:
        """Count the connection for the session its token names; why not when it is over."""
        if slot.session == session_id:
            return None
        if self._sessions[session_id] >= self.limits.per_session:
            return (
                "this session holds too many connections (limit "
                f"{self.limits.per_session}); closing the connection"
            )
        self._unbind(slot)
        self._sessions[session_id] += 1
        slot.session = session_id
        return None

    def release(self, slot: Slot) -> None:
        self._unbind(slot)
        _drop(self._peers, slot.pid)
        if slot.tree:
            _drop(self._trees, slot.tree)
            self.descendants -= 1
        self.count -= 1

    def _unbind(self, slot: Slot) -> None:
        if slot.session is not None:
            _drop(self._sessions, slot.session)
            slot.session = None

    def status(self) -> dict[str, int]:
        return {
            "connections": self.count,
            "descendantConnections": self.descendants,
            "limit": self.limits.total,
            "descendantLimit": self.limits.descendants,
        }


def _drop(counter: Counter[Any], key: object) -> None:
    counter[key] -= 1
    if counter[key] <= 0:
        del counter[key]
