"""Who may control a tab: the claim rules.

- The owner identity is the caller's trusted session id (server-assigned for socket peers),
  else its caller kind. Nothing a caller sends in arguments takes part.
- `agent` and `plugin` callers must claim a tab with `browser_use_start` before controlling it;
  `cli`, `renderer` and `internal` may control unclaimed tabs.
- A tab claimed by one owner cannot be controlled, claimed or released by another
  (PERMISSION_DENIED, details name the owner); only `internal` may force a release.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from meith_core import CallerInfo, CallerKind, ErrorCode, ToolError

_MUST_CLAIM = frozenset({CallerKind.AGENT, CallerKind.PLUGIN})


class Ownable(Protocol):
    id: str
    owner_id: str | None


@dataclass(frozen=True, slots=True)
class Controller:
    owner_id: str
    require_claim: bool
    may_force: bool

    @classmethod
    def of(cls, caller: CallerInfo) -> Controller:
        return cls(
            owner_id=caller.session_id or caller.caller.value,
            require_claim=caller.caller in _MUST_CLAIM,
            may_force=caller.caller is CallerKind.INTERNAL,
        )


def _owned_by_other(tab: Ownable) -> ToolError:
    return ToolError(
        ErrorCode.PERMISSION_DENIED,
        f"Tab {tab.id} is currently controlled by owner {tab.owner_id}",
        {"tabId": tab.id, "ownerId": tab.owner_id},
    )


def assert_control(tab: Ownable, ctl: Controller) -> None:
    if tab.owner_id is not None:
        if tab.owner_id != ctl.owner_id:
            raise _owned_by_other(tab)
        return
    if ctl.require_claim:
        raise ToolError(
            ErrorCode.PERMISSION_DENIED,
            f"Tab {tab.id} must be claimed via browser_use_start before control",
            {"tabId": tab.id, "reason": "claim_required"},
        )


def claim(tab: Ownable, ctl: Controller) -> None:
    """Claim an unclaimed tab; claiming one's own tab again is a no-op."""
    if tab.owner_id is not None and tab.owner_id != ctl.owner_id:
        raise _owned_by_other(tab)
    tab.owner_id = ctl.owner_id


def release(tab: Ownable, ctl: Controller, *, force: bool = False) -> None:
    """Release a claim. Releasing an unclaimed tab is allowed; another owner's only by force,
    and only an `internal` caller can force."""
    if tab.owner_id is not None and tab.owner_id != ctl.owner_id and not (force and ctl.may_force):
        raise _owned_by_other(tab)
    tab.owner_id = None
