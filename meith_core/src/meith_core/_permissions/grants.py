"""Grants: who may use which privileged capabilities, for which tool, where and how often.

Session grants live in memory (from an approval prompt or the in-process API). Standing grants
live in `$MEITH_HOME/grants.json`, are edited by `meith grants`, and apply to every session of
their caller kind; the runtime re-reads the file when it changes, without a restart.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from meith_core._caller import CallerKind
from meith_core._capabilities import Capability, parse_capabilities
from meith_core._home import file_signature, read_json, write_json_atomic
from meith_core._ids import new_id
from meith_core._paths import is_within

GRANTS_FILE_VERSION = 1


@dataclass(slots=True)
class Grant:
    id: str
    caller: CallerKind
    capabilities: tuple[Capability, ...]
    session: str | None = None  # None: a standing grant for every session of `caller`
    tool: str | None = None
    uses: int | None = None  # remaining uses (per session, for standing grants); None: unlimited
    expires_at: int | None = None  # epoch ms
    cwd_prefix: str | None = None
    created_at: int = field(default_factory=lambda: time.time_ns() // 1_000_000)
    source: str = "api"
    #: Only agent sessions with this label (the client's self-reported name) match.
    agent: str | None = None

    def expired(self, now_ms: int) -> bool:
        return self.expires_at is not None and now_ms >= self.expires_at

    def covers(
        self, tool: str, required: Iterable[Capability], cwd: str | None, label: str | None = None
    ) -> bool:
        if self.agent is not None and self.agent != label:
            return False
        if self.tool is not None and self.tool != tool:
            return False
        if not set(required) <= set(self.capabilities):
            return False
        return self.cwd_prefix is None or (cwd is not None and is_within(cwd, self.cwd_prefix))

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "caller": self.caller.value,
            "capabilities": [c.value for c in self.capabilities],
            "tool": self.tool,
            "uses": self.uses,
            "expiresAt": self.expires_at,
            "cwdPrefix": self.cwd_prefix,
            "createdAt": self.created_at,
            **({"session": self.session} if self.session else {}),
            **({"agent": self.agent} if self.agent else {}),
            "source": self.source,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Grant:
        uses = data.get("uses")
        expires = data.get("expiresAt")
        prefix = data.get("cwdPrefix")
        return cls(
            id=str(data["id"]),
            caller=CallerKind(data["caller"]),
            capabilities=parse_capabilities(data["capabilities"]),
            tool=data.get("tool") or None,
            uses=int(uses) if uses is not None else None,
            expires_at=int(expires) if expires is not None else None,
            cwd_prefix=os.path.realpath(prefix) if prefix else None,
            created_at=int(data.get("createdAt") or 0),
            session=data.get("session") or None,
            source=str(data.get("source") or "standing"),
            agent=str(data["agent"]) if data.get("agent") else None,
        )


def new_grant(
    caller: CallerKind | str,
    capabilities: Iterable[Capability | str],
    *,
    session: str | None = None,
    tool: str | None = None,
    uses: int | None = None,
    expires_at: int | None = None,
    cwd_prefix: str | None = None,
    source: str = "api",
    agent: str | None = None,
) -> Grant:
    caps = parse_capabilities(capabilities)
    if not caps:
        raise ValueError("a grant needs at least one capability")
    if uses is not None and uses < 1:
        raise ValueError("uses must be at least 1")
    kind = CallerKind(caller)
    if agent is not None and kind is not CallerKind.AGENT:
        raise ValueError("--agent applies to agent grants only (--caller agent)")
    if kind not in (CallerKind.CLI, CallerKind.AGENT):
        raise ValueError(
            f"grants are for cli and agent callers; {kind.value} callers are "
            + (
                "trusted"
                if kind in (CallerKind.RENDERER, CallerKind.INTERNAL)
                else "governed by plugin approvals"
            )
        )
    return Grant(
        id=new_id("g"),
        caller=kind,
        capabilities=caps,
        session=session,
        tool=tool,
        uses=uses,
        expires_at=expires_at,
        cwd_prefix=os.path.realpath(cwd_prefix) if cwd_prefix else None,
        source=source,
        agent=agent,
    )


class StandingGrants:
    """`grants.json`, re-read whenever its signature (inode, size, mtime) changes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._sig: tuple[int, int, int] | None = None
        self._grants: list[Grant] = []
        self.load_error: str | None = None

    def current(self) -> list[Grant]:
        sig = file_signature(self.path)
        if sig != self._sig:
            self._sig = sig
            self._grants, self.load_error = self._load()
        return self._grants

    def _load(self) -> tuple[list[Grant], str | None]:
        if not self.path.exists():
            return [], None
        data = read_json(self.path)
        if not isinstance(data, dict) or not isinstance(data.get("grants"), list):
            return [], f"{self.path} is not a valid grants file; no standing grants apply"
        grants: list[Grant] = []
        errors: list[str] = []
        for raw in data["grants"]:
            try:
                grants.append(Grant.from_json(raw))
            except (KeyError, TypeError, ValueError) as exc:
                errors.append(f"skipped invalid grant {raw!r:.80}: {exc}")
        return grants, "; ".join(errors) or None

    # Editing (the CLI): read-modify-write with an atomic replace.

    def add(self, grant: Grant) -> Grant:
        grants = [g for g in self.current() if g.id != grant.id] + [grant]
        self._save(grants)
        return grant

    def revoke(self, grant_id: str) -> bool:
        before = self.current()
        after = [g for g in before if g.id != grant_id]
        if len(after) == len(before):
            return False
        self._save(after)
        return True

    def _save(self, grants: list[Grant]) -> None:
        write_json_atomic(
            self.path,
            {"version": GRANTS_FILE_VERSION, "grants": [g.to_json() for g in grants]},
        )
        self._sig = None
