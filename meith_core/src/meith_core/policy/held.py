"""What a tool may learn of its caller's grants: whether one is held, and where it is confined."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class HeldGrant:
    """A grant the caller already holds (see `ToolContext.held_grant`)."""

    #: The directory the grant is confined to; None when it is not (or the caller is trusted).
    scope: str | None
    #: The network destinations the grant names (`--net`); empty: none.
    net: tuple[str, ...] = ()
    #: The Unix sockets the grant names (`--socket`); empty: none.
    sockets: tuple[str, ...] = ()


#: `(capabilities, directory) -> HeldGrant | None`: does the caller already hold these there?
GrantCheck = Callable[[tuple[str, ...], str], HeldGrant | None]
