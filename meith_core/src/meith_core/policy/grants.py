"""Grants: who may use which privileged capabilities, for which tool, where and how often.

Session grants live in memory (from an approval prompt or the in-process API). Standing grants
live in `$MEITH_HOME/grants.json`, are edited by `meith grants`, and apply to every session of
their caller kind; the runtime re-reads the file when it changes, without a restart.

A standing grant's `uses` is one budget for all its sessions, kept in the file: every change
to the file (a use consumed by a runtime, `meith grants add/revoke`) is a read-modify-write
under an exclusive `flock` on `grants.json.lock`, so two runtimes or two connections cannot both
spend the last use, and a restart does not refill it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from meith_core.base.home import file_signature, read_json, write_json_atomic
from meith_core.base.ids import new_id
from meith_core.base.paths import is_within
from meith_core.protocol.caller import CallerKind
from meith_core.protocol.capabilities import PRIVILEGED, Capability, parse_capabilities

#: The tool whose read-only grant, confined to no directory, opens every session's records and
#: sessions to an agent.
EVERY_SESSION_TOOL: Final = "get_audit_log"

GRANTS_FILE_VERSION = 1


@dataclass(slots=True)
class Grant:
    id: str
    caller: CallerKind
    capabilities: tuple[Capability, ...]
    session: str | None = None  # None: a standing grant for every session of `caller`
    tool: str | None = None
    uses: int | None = None  # remaining uses (standing: shared by all sessions); None: unlimited
    expires_at: int | None = None  # epoch ms
    cwd_prefix: str | None = None
    created_at: int = field(default_factory=lambda: time.time_ns() // 1_000_000)
    source: str = "api"
    #: Only agent sessions with this label (the client's self-reported name) match.
    agent: str | None = None
    #: The network destinations a process started under this grant (confined to `cwd_prefix`)
    #: may reach (`--net HOST[:PORT],*.domain` or `any`); empty: none beyond itself.
    net: tuple[str, ...] = ()
    #: The Unix sockets such a process may reach (`--socket PATH`), in its private /tmp too.
    sockets: tuple[str, ...] = ()

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
            **({"net": list(self.net)} if self.net else {}),
            **({"sockets": list(self.sockets)} if self.sockets else {}),
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
            net=_net_of(data.get("net")),
            sockets=_net_of(data.get("sockets")),
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
    net: Iterable[str] = (),
    sockets: Iterable[str] = (),
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
        net=normalise_net(net),
        sockets=normalise_sockets(sockets),
    )


def standing_grant(
    caller: str,
    capabilities: Iterable[str],
    *,
    tool: str | None = None,
    cwd: str | None = None,
    expires: str | None = None,
    uses: int | None = None,
    agent: str | None = None,
    net: Iterable[str] = (),
    sockets: Iterable[str] = (),
) -> Grant:
    """A standing grant from what the local user asked for (`meith grants add`'s options, the
    console's form), checked as `meith grants add` checks it; a ValueError says what is wrong
    in the option's own name."""
    caps = parse_capabilities(capabilities)
    if Capability.READ_ONLY in caps:
        # A read-only grant widens what agents read: a directory beyond their workspace, or
        # (unconfined) the one view named by its tool, get_audit_log's every session.
        if caps != (Capability.READ_ONLY,) or (cwd is None and tool != EVERY_SESSION_TOOL):
            raise ValueError(
                "read-only needs no grant to run; a read-only grant stands alone and either "
                "names a directory agents may read (--read DIR) or, without one, the view it "
                f"widens (--tool {EVERY_SESSION_TOOL}: every session's audit records and sessions)"
            )
    else:
        not_needed = [c.value for c in caps if c not in PRIVILEGED]
        if not_needed:
            raise ValueError(
                f"{', '.join(not_needed)} need no grant; grant one of: "
                f"{', '.join(sorted(c.value for c in PRIVILEGED))}"
            )
    expires_at = time.time_ns() // 1_000_000 + parse_duration_ms(expires) if expires else None
    prefix = os.path.abspath(os.path.expanduser(cwd)) if cwd else None
    if prefix is not None and not os.path.isdir(prefix):
        raise ValueError(f"--cwd {prefix}: no such directory")
    grant = new_grant(
        caller,
        caps,
        tool=tool,
        uses=uses,
        expires_at=expires_at,
        cwd_prefix=prefix,
        source="standing",
        agent=agent,
        net=net,
        sockets=sockets,
    )
    if grant.net and grant.cwd_prefix is None:
        raise ValueError(
            "--net applies to grants confined to a directory (--cwd DIR): processes "
            "started under an unconfined grant already have the user's network"
        )
    if grant.sockets and grant.cwd_prefix is None:
        raise ValueError(
            "--socket applies to grants confined to a directory (--cwd DIR): processes "
            "started under an unconfined grant already reach the user's sockets"
        )
    return grant


_DURATION = re.compile(r"^(\d+)\s*([smhdw])$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration_ms(text: str) -> int:
    """`30m`, `1h`, `7d` (`--expires`) in milliseconds."""
    match = _DURATION.match(text.strip().lower())
    if not match:
        raise ValueError(f"--expires {text!r}: use a number and a unit, e.g. 30m, 1h, 7d")
    return int(match.group(1)) * _UNIT_S[match.group(2)] * 1000


def normalise_net(values: Iterable[str]) -> tuple[str, ...]:
    """`--net` values as stored: each destination checked (`confine.destinations`), comma lists
    split, `any` alone when present."""
    from meith_core.confine.destinations import parse_destinations

    destinations = [str(d) for d in parse_destinations(values)]
    return ("any",) if "*" in destinations else tuple(destinations)


def normalise_sockets(values: Iterable[str]) -> tuple[str, ...]:
    """`--socket` values as stored: absolute (`~` expanded), normalised, each once."""
    out: list[str] = []
    for value in values:
        path = os.path.expanduser(str(value).strip())
        if not path:
            continue
        if not os.path.isabs(path) or "\0" in path:
            raise ValueError(f"--socket {value!r}: give the socket's absolute path")
        out.append(os.path.normpath(path))
    return tuple(dict.fromkeys(out))


def _net_of(raw: object) -> tuple[str, ...]:
    if not isinstance(raw, list):
        return ()
    return tuple(str(v) for v in raw if isinstance(v, str))


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

    # Editing: read-modify-write with an atomic replace, under the file lock.

    def add(self, grant: Grant) -> Grant:
        with self._locked():
            grants = [g for g in self.current() if g.id != grant.id] + [grant]
            self._save(grants)
        return grant

    def revoke(self, grant_id: str) -> Grant | None:
        """The grant removed; None when there was none of that id."""
        with self._locked():
            before = self.current()
            gone = next((g for g in before if g.id == grant_id), None)
            if gone is None:
                return None
            self._save([g for g in before if g.id != grant_id])
        return gone

    def consume_use(self, grant_id: str) -> bool:
        """Spend one use of a standing grant; False when none is left (or it is gone).

        Works on the file's raw JSON, so entries this version cannot parse are kept as written.
        A grant whose last use is spent is removed.
        """
        with self._locked():
            data = read_json(self.path)
            entries = data.get("grants") if isinstance(data, dict) else None
            if not isinstance(entries, list):
                return False
            entry = next(
                (e for e in entries if isinstance(e, dict) and e.get("id") == grant_id), None
            )
            if entry is None:
                return False
            uses = entry.get("uses")
            if uses is None:
                return True
            if not isinstance(uses, int) or uses <= 0:
                return False
            if uses == 1:
                entries.remove(entry)
            else:
                entry["uses"] = uses - 1
            write_json_atomic(self.path, data)
            self._sig = None
        return True

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """An exclusive lock on the grants file (held for a few file operations only)."""
        lock = self.path.with_name(self.path.name + ".lock")
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._sig = None  # whatever was read before the lock may be stale
            yield
        finally:
            os.close(fd)

    def _save(self, grants: list[Grant]) -> None:
        write_json_atomic(
            self.path,
            {"version": GRANTS_FILE_VERSION, "grants": [g.to_json() for g in grants]},
        )
        self._sig = None
