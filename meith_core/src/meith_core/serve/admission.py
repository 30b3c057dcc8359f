"""What the socket server decides about a peer before reading a byte from it."""

from __future__ import annotations

from typing import NamedTuple

from meith_core.serve.capacity import Slot


class Refusal(NamedTuple):
    """A connection the server will not serve; `tell`: say why to the peer (a same-user
    peer over a limit) before closing, instead of dropping it silently."""

    reason: str
    tell: bool = False


class Admitted(NamedTuple):
    """A peer the server serves. `descendant`: a process the runtime started (or one of
    theirs): it calls only as the session that started it, with its token, on any socket;
    left without one it is refused, never taken for the local user (it shares the user's uid,
    so the uid check alone cannot tell). Such a peer never answers approval requests.

    `confined`: why the peer may be a confined process, of this runtime or of any other (a
    user namespace not this runtime's, no_new_privs): it is held to the same rule as a
    descendant, so no runtime of the user takes a confined process for the user."""

    pid: int
    descendant: bool
    #: Its place in the connection counts (`serve.capacity`), given back when it closes.
    slot: Slot | None = None
    confined: str | None = None
