"""Which grant applies when several cover a call: the most specific, by one order.

1. a grant pinned to the calling session (its own, or a standing one for that session) before
   one for every session;
2. a grant for a named agent (`--agent A`) before one for any agent;
3. a grant for one tool (`--tool T`) before one for any tool;
4. a grant confined to a deeper directory before a shallower one, and any confined grant
   before an unconfined one;
5. ties: the grant with fewer capabilities, then the older one (`createdAt`), then the
   smaller id — never the order of `grants.json`.

A covering grant with no use left gives way to the next. The permission service spends
grants in this order (`policy.session_grants`), `held` answers with the first, and `meith
grants explain` shows it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final, Literal

from meith_core.base.paths import is_within
from meith_core.policy.grants import Grant
from meith_core.protocol.caller import CallerKind
from meith_core.protocol.capabilities import Capability

#: Why a grant does not cover a call, checked in this order ("" when it covers).
Miss = Literal[
    "", "caller", "session", "agent", "tool", "capabilities", "expired", "uses", "directory"
]

ORDER_TEXT: Final = (
    "the calling session's own before every session's, a named agent before any agent, one "
    "tool before any tool, a deeper directory before a shallower one (confined before "
    "unconfined); ties: fewer capabilities, then older, then the smaller id"
)


@dataclass(frozen=True, slots=True)
class GrantMatch:
    """One grant judged against one call."""

    grant: Grant
    #: "" when the grant covers the call, else the first check it fails.
    miss: Miss
    #: In words: what makes it specific (when it covers) or why it does not cover.
    why: str

    @property
    def covers(self) -> bool:
        return not self.miss

    def to_json(self) -> dict[str, Any]:
        return {**self.grant.to_json(), "covers": self.covers, "why": self.why}


def rank(grant: Grant, session: str | None) -> tuple[int, int, int, int, int, int, str]:
    """The sort key of the order (the module docstring): smaller is more specific."""
    depth = -1 if grant.cwd_prefix is None else grant.cwd_prefix.rstrip("/").count("/")
    return (
        0 if grant.session is not None and grant.session == session else 1,
        0 if grant.agent is not None else 1,
        0 if grant.tool is not None else 1,
        -depth,
        len(grant.capabilities),
        grant.created_at,
        grant.id,
    )


def covering(
    grants: Iterable[Grant],
    kind: CallerKind,
    session: str | None,
    *,
    label: str | None,
    tool: str,
    wanted: tuple[Capability, ...],
    directory: str | None,
    now_ms: int,
) -> list[GrantMatch]:
    """Every grant judged: those that cover the call first, most specific first, then the
    others in the same order, each with why not (`directory` None: the call acts on no
    directory, so no directory-confined grant covers it)."""
    matches = [
        _judge(g, kind, session, label, tool, wanted, directory, now_ms)
        for g in sorted(grants, key=lambda g: rank(g, session))
    ]
    return [m for m in matches if m.covers] + [m for m in matches if not m.covers]


def _judge(
    grant: Grant,
    kind: CallerKind,
    session: str | None,
    label: str | None,
    tool: str,
    wanted: tuple[Capability, ...],
    directory: str | None,
    now_ms: int,
) -> GrantMatch:
    if grant.caller is not kind:
        return GrantMatch(grant, "caller", f"for {grant.caller.value} callers")
    if grant.session is not None and grant.session != session:
        return GrantMatch(grant, "session", "for another session")
    if grant.agent is not None and grant.agent != label:
        return GrantMatch(grant, "agent", f"for agent {grant.agent!r}, not {label!r}")
    if grant.tool is not None and grant.tool != tool:
        return GrantMatch(grant, "tool", f"for tool {grant.tool}")
    missing = [c.value for c in wanted if c not in grant.capabilities]
    if missing:
        return GrantMatch(grant, "capabilities", f"lacks {', '.join(missing)}")
    if grant.expired(now_ms):
        return GrantMatch(grant, "expired", "expired")
    if grant.uses is not None and grant.uses <= 0:
        return GrantMatch(grant, "uses", "no use left")
    if grant.cwd_prefix is not None and (
        directory is None or not is_within(directory, grant.cwd_prefix)
    ):
        where = "acts on no directory" if directory is None else f"acts on {directory}"
        return GrantMatch(grant, "directory", f"confined to {grant.cwd_prefix}; the call {where}")
    return GrantMatch(grant, "", _specific(grant, session))


def _specific(grant: Grant, session: str | None) -> str:
    parts = []
    if grant.session is not None and grant.session == session:
        parts.append("this session's own")
    if grant.caller is CallerKind.AGENT:
        parts.append(f"named agent {grant.agent!r}" if grant.agent else "any agent")
    parts.append(f"tool {grant.tool}" if grant.tool else "any tool")
    parts.append(f"directory {grant.cwd_prefix}" if grant.cwd_prefix else "no directory")
    count = len(grant.capabilities)
    parts.append(f"{count} capabilit{'y' if count == 1 else 'ies'}")
    return ", ".join(parts)


__all__ = ["ORDER_TEXT", "GrantMatch", "Miss", "covering", "rank"]
