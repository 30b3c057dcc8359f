"""Who may touch a process or terminal: the one ownership rule every process tool goes through.

A process belongs to the session that started it and to the local user. The local user is the
`cli` caller (any of its sessions: each `meith call` is a new one) and the trusted in-process
callers. Another `agent` session, or a `plugin` caller, may neither act on it nor read its
output (output is where secrets are typed) and does not see it in listings.

Holding a producer back (an attachment that pauses the pipes while its reader catches up) is
narrower: only the owner itself — the starting session, or the user for what the user started —
may slow a process down. Everyone else who may read it lags and skips instead.

What an agent session started stops when the session ends (`meith_session_ended`), unless it
was started with `detach: true`: then it is the local user's to stop, and its record says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from meith_core import CallerInfo, CallerKind, ErrorCode, ToolError, ownership_error

#: Trusted in-process callers (the embedding application, the runtime itself).
TRUSTED_KINDS = frozenset({CallerKind.RENDERER, CallerKind.INTERNAL})


def _is_user(caller: CallerInfo) -> bool:
    return caller.trusted or caller.caller is CallerKind.CLI


@dataclass(frozen=True, slots=True)
class Owner:
    """The identity a process was started under."""

    kind: CallerKind
    session_id: str | None
    #: Started with `detach: true`: handed to the local user, it outlives its session.
    detached: bool = False

    @classmethod
    def of(cls, caller: CallerInfo, *, detach: bool = False) -> Owner:
        return cls(caller.caller, caller.session_id, detach)

    def ends_with(self, session_id: str) -> bool:
        """Whether what this owner started stops when `session_id` ends: an agent session's
        own processes do, unless detached; the local user's never do."""
        return not self.user and not self.detached and self.session_id == session_id

    @property
    def user(self) -> bool:
        return self.kind is CallerKind.CLI or self.kind in TRUSTED_KINDS

    def is_owner(self, caller: CallerInfo) -> bool:
        """The starting session itself, or the user for what the user started."""
        if self.user and _is_user(caller):
            return True
        return self.session_id is not None and caller.session_id == self.session_id

    def may_access(self, caller: CallerInfo) -> bool:
        """Owners, and the local user for anything."""
        return _is_user(caller) or self.is_owner(caller)

    def record(self) -> dict[str, Any]:
        """The owner's fields of a process record: detached, and who started it."""
        return {
            "detached": self.detached,
            "owner": self.kind.value,
            "ownerSession": self.session_id,
        }

    def describe(self) -> str:
        if self.user:
            return "the local user (cli)"
        return f"{self.kind.value} session {self.session_id}"


class Owned(Protocol):
    """What a registry keeps: something with an id, an owner and the directory it was started
    in, that can be closed."""

    id: str
    owner: Owner
    cwd: str

    def close(self) -> None: ...


T = TypeVar("T", bound=Owned)


class OwnedRegistry(Generic[T]):
    """One kind of owned object by id (the dev servers, the terminals). Every lookup a caller
    makes goes through the ownership rule here: `get` refuses what is not the caller's,
    `visible` lists only what is."""

    def __init__(self, what: str, start_tool: str) -> None:
        #: How errors name one of them ("Dev server", "Terminal").
        self.what = what
        #: The tool that starts one, which a refused caller is pointed to.
        self.start_tool = start_tool
        self.by_id: dict[str, T] = {}

    def get(self, item_id: str, caller: CallerInfo) -> T:
        """The item, or TOOL_FAILED for an unknown id and PERMISSION_DENIED for one the caller
        may not act on or read: the denial says who owns it and what to do instead (no grant
        can help)."""
        item = self.by_id.get(item_id)
        if item is None:
            raise ToolError(ErrorCode.TOOL_FAILED, f"Unknown {self.what.lower()}: {item_id}")
        owner = item.owner
        if not owner.may_access(caller):
            raise ownership_error(
                f"{self.what} {item_id}",
                owner.describe(),
                f"start a {self.what.lower()} of your own with {self.start_tool}; only the "
                "session that started it and the local user (cli) may use it or read its output",
                ownerCaller=owner.kind.value,
                ownerSession=owner.session_id,
            )
        return item

    def directory_of(self, item_id: str | None) -> str | None:
        """The directory the item was started in (None: no such item): what a tool on it acts
        on, whoever calls."""
        item = self.by_id.get(item_id or "")
        return item.cwd if item is not None else None

    def visible(self, caller: CallerInfo) -> list[T]:
        return [i for i in self.by_id.values() if i.owner.may_access(caller)]

    def owned_by(self, session_id: str) -> list[T]:
        """What `session_id` started (detached ones included)."""
        return [i for i in self.by_id.values() if i.owner.session_id == session_id]

    def close_all(self) -> None:
        for item in self.by_id.values():
            item.close()
