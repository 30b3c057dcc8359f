"""The sessions of a runtime: one `Session` object per session, owned by one `Sessions` registry.

A session is one socket connection, one resumed socket session, or one `Runtime.open_session`.
Its id is assigned by the runtime; its kind and label are what the connection claimed first
(see `protocol.connection`). Everything the runtime keeps for a session is on its `Session`:
its own grants, the connection that answers its approval requests, the token its processes
call back with, the secret that resumes it, and while no connection holds it, until when it
waits to be resumed. Ending a session is one call, `Sessions.end`.

A session whose client asked for it to be resumable (`hello` with `resumable`) outlives its
connection: when the connection closes without `end_session`, the session is *detached* (its
grants, processes and token kept, no approver) until a connection presents its resume token in
`hello` or the resume window passes. The token is a bearer secret held only by the client that
received it in `welcome`; it is kept as a digest, and a new one is issued at each resume.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from meith_core.policy.asking import Approver
from meith_core.policy.child_tokens import ChildTokens
from meith_core.policy.grants import Grant
from meith_core.protocol.caller import CallerKind, ChildBinding

if TYPE_CHECKING:
    from meith_core.policy.service import PermissionService


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8", "surrogateescape")).digest()


@dataclass(slots=True, eq=False)
class Session:
    session_id: str
    caller: CallerKind
    label: str | None = None
    since: float = field(default_factory=time.time)
    #: Calls made in this session (counted when a call starts, whatever its outcome).
    calls: int = 0
    #: The session's own grants (in memory; gone with the session). Standing grants that
    #: apply to it live in `grants.json`.
    grants: list[Grant] = field(default_factory=list)
    #: The connection that answers this session's approval requests itself, if any.
    approver: Approver | None = None
    #: The token the processes it started call back with (minted on first use).
    child_token: str | None = None
    #: The digest of the secret that resumes it (None: not resumable).
    resume_digest: bytes | None = None
    #: While detached (no connection holds it): the monotonic time it ends unless resumed.
    detached_until: float | None = None
    #: The directory it was opened for (`CallerInfo.workspace`): fixed when it opens.
    workspace: str | None = None

    @property
    def resumable(self) -> bool:
        return self.resume_digest is not None

    @property
    def detached(self) -> bool:
        return self.detached_until is not None


def iso_utc(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).isoformat(timespec="milliseconds")


def grant_summary(grant: Grant) -> dict[str, Any]:
    """A grant as `list_sessions` shows it."""
    return {
        "id": grant.id,
        "capabilities": [c.value for c in grant.capabilities],
        "tool": grant.tool,
        "cwd": grant.cwd_prefix,
        "uses": grant.uses,
        "expires": None if grant.expires_at is None else iso_utc(grant.expires_at / 1000),
        "source": grant.source,
    }


class Sessions:
    """The live sessions by id, in the order they began, and the index of their child tokens."""

    def __init__(self) -> None:
        self._live: dict[str, Session] = {}
        #: Child tokens by digest (the local user's too, which belongs to no session).
        self.tokens = ChildTokens()

    # -- the table ------------------------------------------------------------------------

    def open(
        self,
        session_id: str,
        caller: CallerKind,
        label: str | None = None,
        *,
        workspace: str | None = None,
    ) -> Session:
        session = Session(session_id, caller, label, workspace=workspace)
        self._live[session_id] = session
        return session

    def get(self, session_id: str | None) -> Session | None:
        return None if session_id is None else self._live.get(session_id)

    def holder(self, session_id: str, caller: CallerKind) -> Session:
        """The session a grant is given to: a live one, or one the embedding program names
        without having opened it (it is then tracked like an opened one)."""
        session = self._live.get(session_id)
        if session is None:
            session = self.open(session_id, caller)
        return session

    def identify(
        self,
        session_id: str,
        caller: CallerKind,
        label: str | None,
        workspace: str | None = None,
    ) -> None:
        """A session's kind, label and workspace became known (a connection's first claim)."""
        session = self._live.get(session_id)
        if session is not None:
            session.caller, session.label, session.workspace = caller, label, workspace

    def count_call(self, session_id: str | None) -> None:
        session = self.get(session_id)
        if session is not None:
            session.calls += 1

    def end(self, session_id: str) -> Session | None:
        """Forget a session and everything it held: grants, approver, child and resume tokens."""
        session = self._live.pop(session_id, None)
        self.tokens.end_session(session_id)
        if session is not None:
            session.grants.clear()
            session.approver = None
            session.child_token = None
            session.resume_digest = None
        return session

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._live

    def __iter__(self) -> Iterator[Session]:
        return iter(list(self._live.values()))

    def __len__(self) -> int:
        return len(self._live)

    # -- what a session holds -------------------------------------------------------------

    def own_grants(self, session_id: str) -> list[Grant]:
        session = self._live.get(session_id)
        return session.grants if session is not None else []

    def set_approver(self, session_id: str, approver: Approver | None) -> None:
        session = self._live.get(session_id)
        if session is not None:
            session.approver = approver

    def approver_of(self, session_id: str | None) -> Approver | None:
        session = self.get(session_id)
        return session.approver if session is not None else None

    def child_token(self, binding: ChildBinding) -> str:
        """The token of `binding`'s session (one per session, the same for all its children)."""
        token = self.tokens.mint(binding)
        session = self._live.get(binding.session_id)
        if session is not None:
            session.child_token = token
        return token

    # -- detaching and resuming -----------------------------------------------------------

    def issue_resume_token(self, session_id: str) -> str | None:
        """A new secret that resumes this session (the previous one no longer does)."""
        session = self._live.get(session_id)
        if session is None:
            return None
        token = "mrt_" + secrets.token_urlsafe(32)
        session.resume_digest = _digest(token)
        return token

    def detach(self, session_id: str, until: float) -> bool:
        """No connection holds a resumable session any more: keep it until `until`. False
        (nothing kept) for a session that is not resumable."""
        session = self._live.get(session_id)
        if session is None or not session.resumable:
            return False
        session.detached_until = until
        session.approver = None
        return True

    def resume(self, token: str) -> Session | None:
        """The detached session this token resumes (it is then attached again), else None."""
        wanted = _digest(token)
        for session in self._live.values():
            digest = session.resume_digest
            if digest is not None and session.detached and secrets.compare_digest(digest, wanted):
                session.detached_until = None
                return session
        return None

    def expired(self, now: float) -> list[str]:
        """Detached sessions whose resume window has passed (the caller ends them)."""
        return [
            s.session_id
            for s in self._live.values()
            if s.detached_until is not None and now >= s.detached_until
        ]


def describe_sessions(sessions: Sessions, permissions: PermissionService) -> list[dict[str, Any]]:
    """The live sessions with their grants: `grants` are the session's own (they end with it),
    `standingGrants` the standing ones that apply to it (`meith grants`, shared by every session
    of that caller, or of that agent name); `state` whether a connection holds it; `workspace`
    the directory it was opened for (where an agent's reads reach)."""
    standing = permissions.standing.current()
    out = []
    now = time.monotonic()
    for s in sessions:
        row: dict[str, Any] = {
            "sessionId": s.session_id,
            "caller": s.caller.value,
            "label": s.label,
            "since": iso_utc(s.since),
            "calls": s.calls,
            "workspace": s.workspace,
            "grants": [grant_summary(g) for g in permissions.session_grants(s.session_id)],
            "standingGrants": [
                grant_summary(g)
                for g in standing
                if g.caller is s.caller
                and g.session in (None, s.session_id)
                and g.agent in (None, s.label)
            ],
            "state": "detached" if s.detached else "attached",
        }
        if s.detached_until is not None:
            row["endsInS"] = max(0, round(s.detached_until - now))
        out.append(row)
    return out
