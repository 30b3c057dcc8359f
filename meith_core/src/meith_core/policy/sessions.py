"""The live sessions of a runtime: who, since when, how many calls (`list_sessions`).

A session is one socket connection or one `Runtime.open_session`. Its id is assigned by the
runtime; its kind and label are what the connection claimed first (see `protocol.connection`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from meith_core.policy.grants import Grant
from meith_core.protocol.caller import CallerKind

if TYPE_CHECKING:
    from meith_core.policy.service import PermissionService


@dataclass(slots=True)
class SessionRecord:
    session_id: str
    caller: CallerKind
    label: str | None = None
    since: float = field(default_factory=time.time)
    #: Calls made in this session (counted when a call starts, whatever its outcome).
    calls: int = 0


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


class SessionTable:
    """Live sessions by id, in the order they began."""

    def __init__(self) -> None:
        self._records: dict[str, SessionRecord] = {}

    def open(self, session_id: str, caller: CallerKind, label: str | None = None) -> SessionRecord:
        record = SessionRecord(session_id, caller, label)
        self._records[session_id] = record
        return record

    def get(self, session_id: str | None) -> SessionRecord | None:
        return None if session_id is None else self._records.get(session_id)

    def identify(self, session_id: str, caller: CallerKind, label: str | None) -> None:
        """A session's kind and label became known (a connection's first claim)."""
        record = self._records.get(session_id)
        if record is not None:
            record.caller, record.label = caller, label

    def count_call(self, session_id: str | None) -> None:
        record = self.get(session_id)
        if record is not None:
            record.calls += 1

    def pop(self, session_id: str) -> SessionRecord | None:
        return self._records.pop(session_id, None)

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._records

    def __iter__(self) -> Iterator[SessionRecord]:
        return iter(list(self._records.values()))

    def __len__(self) -> int:
        return len(self._records)


def describe_sessions(
    sessions: SessionTable, permissions: PermissionService
) -> list[dict[str, Any]]:
    """The live sessions with their grants: `grants` are the session's own (they end with it),
    `standingGrants` the standing ones that apply to it (`meith grants`, shared by every session
    of that caller, or of that agent name)."""
    standing = permissions.standing.current()
    out = []
    for rec in sessions:
        out.append(
            {
                "sessionId": rec.session_id,
                "caller": rec.caller.value,
                "label": rec.label,
                "since": iso_utc(rec.since),
                "calls": rec.calls,
                "grants": [grant_summary(g) for g in permissions.session_grants(rec.session_id)],
                "standingGrants": [
                    grant_summary(g)
                    for g in standing
                    if g.caller is rec.caller
                    and g.session in (None, rec.session_id)
                    and g.agent in (None, rec.label)
                ],
            }
        )
    return out
