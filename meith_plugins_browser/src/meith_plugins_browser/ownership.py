"""Who may read or control a tab: the one access rule every browser tool goes through.

- The owner identity is the caller's trusted session id (server-assigned for socket peers),
  else its caller kind. Nothing a caller sends in arguments takes part.
- `agent` and `plugin` callers must claim a tab with `browser_use_start` before controlling it;
  `cli`, `renderer` and `internal` may control unclaimed tabs.
- A tab claimed by one owner cannot be controlled, claimed or released by another
  (PERMISSION_DENIED, details name the owner); only `internal` may force a release.
- A claimed tab is private to its owner for reads too (state, screenshots, logs, focus): what
  a session does in a page is where its secrets are typed. The local user (`cli`, any of its
  connections) and the trusted host (`renderer`, `internal`) may still look: what a session
  starts belongs to that session and to the local user. Other agents and plugins may not.
- Element ids and CDP sessions belong to a principal: the session, except that every `cli`
  connection is the same local user (a one-shot `meith call` reads the page, the next clicks).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from meith_core import CallerInfo, CallerKind, ErrorCode, ToolError, ownership_error

_MUST_CLAIM = frozenset({CallerKind.AGENT, CallerKind.PLUGIN})
#: Who may read a tab another session claimed.
_MAY_WATCH = frozenset({CallerKind.CLI, CallerKind.RENDERER, CallerKind.INTERNAL})


class Access(Enum):
    READ = "read"
    CONTROL = "control"


class Ownable(Protocol):
    id: str
    owner_id: str | None


@dataclass(frozen=True, slots=True)
class Controller:
    owner_id: str
    require_claim: bool
    may_force: bool
    may_watch: bool = False
    #: Whose element ids and CDP session a call uses.
    principal: str = ""

    @classmethod
    def of(cls, caller: CallerInfo) -> Controller:
        return cls(
            owner_id=caller.session_id or caller.caller.value,
            require_claim=caller.caller in _MUST_CLAIM,
            may_force=caller.caller is CallerKind.INTERNAL,
            may_watch=caller.caller in _MAY_WATCH,
            principal=(
                CallerKind.CLI.value
                if caller.caller is CallerKind.CLI
                else caller.session_id or caller.caller.value
            ),
        )


def _owned_by_other(tab: Ownable) -> ToolError:
    """Claimed by someone else: who, and what to do instead (no grant can help)."""
    error: ToolError = ownership_error(
        f"Tab {tab.id}",
        f"owner {tab.owner_id}, which claimed it",
        "open a tab of your own with open_browser_tab, or wait until its owner releases it "
        "(browser_use_end)",
        tabId=tab.id,
        ownerId=tab.owner_id,
    )
    return error


def may_read(tab: Ownable, ctl: Controller) -> bool:
    return tab.owner_id is None or tab.owner_id == ctl.owner_id or ctl.may_watch


def check_access(tab: Ownable, ctl: Controller, access: Access) -> None:
    """PERMISSION_DENIED unless `ctl` may read (or control) the tab."""
    if access is Access.READ:
        if not may_read(tab, ctl):
            raise _owned_by_other(tab)
        return
    if tab.owner_id is not None:
        if tab.owner_id != ctl.owner_id:
            raise _owned_by_other(tab)
        return
    if ctl.require_claim:
        raise ToolError(
            ErrorCode.PERMISSION_DENIED,
            f"Tab {tab.id} must be claimed via browser_use_start before control",
            {"tabId": tab.id, "reason": "claim_required", "gate": "claim"},
        )


def claim(tab: Ownable, ctl: Controller) -> bool:
    """Claim an unclaimed tab; claiming one's own tab again is a no-op (returns False)."""
    if tab.owner_id is not None and tab.owner_id != ctl.owner_id:
        raise _owned_by_other(tab)
    new = tab.owner_id is None
    tab.owner_id = ctl.owner_id
    return new


def check_release(tab: Ownable, ctl: Controller, *, force: bool = False) -> None:
    """Releasing an unclaimed tab is allowed; another owner's only by force, and only an
    `internal` caller can force."""
    if tab.owner_id is not None and tab.owner_id != ctl.owner_id and not (force and ctl.may_force):
        raise _owned_by_other(tab)
