"""The grants a session holds: its own (kept on its `Session`, gone with it) and the standing
ones that apply to it; which sessions were revoked; spending a grant's uses.

The permission service asks this module which grant covers a call — the most specific of those
that do, by the order of `policy.grant_order`; the gates themselves, and the approvers asked
when none does, are in `policy.service`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from meith_core.policy.grant_order import GrantMatch, covering
from meith_core.policy.grants import Grant, StandingGrants, new_grant
from meith_core.policy.sessions import Sessions
from meith_core.protocol.caller import CallerKind
from meith_core.protocol.capabilities import Capability

#: Every ended session is remembered as revoked (a caller holding its id must stay denied),
#: but a long-running server ends one per connection: past this many, the oldest are
#: forgotten. Session ids are unguessable and never reused, so only an in-process caller
#: still holding a session that ended that many sessions ago could notice.
MAX_REMEMBERED_REVOKED = 100_000


class SessionGrants:
    def __init__(self, standing: StandingGrants, sessions: Sessions) -> None:
        self.standing = standing
        self._sessions = sessions
        # Insertion-ordered, so the oldest can be forgotten (see MAX_REMEMBERED_REVOKED).
        self._revoked: dict[str, None] = {}

    def grant(
        self,
        caller: CallerKind | str,
        session: str,
        capabilities: Iterable[Capability | str],
        *,
        tool: str | None = None,
        uses: int | None = None,
        expires_at: int | None = None,
        cwd_prefix: str | None = None,
        source: str = "api",
        net: Iterable[str] = (),
        sockets: Iterable[str] = (),
    ) -> Grant:
        """Grant a session privileged capabilities (in memory; gone with the session)."""
        if not session:
            raise ValueError("a session grant needs a session id")
        if session in self._revoked:
            raise ValueError(f"session {session} was revoked")
        grant = new_grant(
            caller,
            capabilities,
            session=session,
            tool=tool,
            uses=uses,
            expires_at=expires_at,
            cwd_prefix=cwd_prefix,
            source=source,
            net=net,
            sockets=sockets,
        )
        self._sessions.holder(session, grant.caller).grants.append(grant)
        return grant

    def revoke(self, session: str) -> None:
        """Immediately end every grant of `session`; later calls from it are denied."""
        self._revoked[session] = None
        while len(self._revoked) > MAX_REMEMBERED_REVOKED:
            del self._revoked[next(iter(self._revoked))]
        holder = self._sessions.get(session)
        if holder is not None:
            holder.grants.clear()

    def is_revoked(self, session: str | None) -> bool:
        return session is not None and session in self._revoked

    def of(self, session: str) -> list[Grant]:
        """The session's own grants (not the standing ones)."""
        return list(self._sessions.own_grants(session))

    def judged(
        self,
        kind: CallerKind,
        session: str,
        tool: str,
        wanted: tuple[Capability, ...],
        directory: str | None,
        label: str | None,
    ) -> list[GrantMatch]:
        """The session's own grants and the standing ones of its caller kind, judged against
        one call: those that cover it first, most specific first (`grant_order`)."""
        own = [g for g in self._sessions.own_grants(session) if g.caller is kind]
        standing = [g for g in self.standing.current() if g.caller is kind]
        return covering(
            own + standing,
            kind,
            session,
            label=label,
            tool=tool,
            wanted=wanted,
            directory=directory,
            now_ms=time.time_ns() // 1_000_000,
        )

    def first_held(
        self,
        kind: CallerKind,
        session: str,
        tool: str,
        wanted: tuple[Capability, ...],
        cwd: str | None,
        label: str | None = None,
    ) -> Grant | None:
        """The grant a call needing `wanted` would use first, without spending a use
        (`label`: the agent's, which a grant for a named agent must match; `cwd` None: no
        directory-confined grant covers it)."""
        if session in self._revoked:
            return None
        matches = self.judged(kind, session, tool, wanted, cwd, label)
        return matches[0].grant if matches and matches[0].covers else None

    def consume(
        self,
        kind: CallerKind,
        session: str,
        tool: str,
        privileged: tuple[Capability, ...],
        cwd: str | None,
        label: str | None = None,
    ) -> Grant | None:
        """The most specific grant covering this call, one of its uses spent; None when none
        covers it (`cwd` None: the call acts on no directory, so no directory-confined grant
        does)."""
        own = self._sessions.own_grants(session)
        for match in self.judged(kind, session, tool, privileged, cwd, label):
            if not match.covers:
                break
            grant = match.grant
            if any(g is grant for g in own):
                if grant.uses is not None:
                    grant.uses -= 1
                    if grant.uses <= 0:
                        own.remove(grant)
                return grant
            # One budget for every session and runtime, spent in the file under its lock.
            if grant.uses is not None and not self.standing.consume_use(grant.id):
                continue
            return grant
        return None
