"""The trust root changed by the local user, each change audited: standing grants
(`grants.json`), plugin approvals (`plugins.json`) and revoked sessions. `meith grants`,
`meith plugins`, `meith ui` and the runtime all change them here, so every door leaves the
same `trust-change` record (`audit.entry.trust_change_entry`) saying what changed and who, and
through which door, changed it.

A change that widens what may run (a grant added, a plugin approved) is not made when the
trail cannot take its record, as a privileged call is not run unaudited. One that narrows it (a
revocation) is made anyway: refusing it would leave the wider policy in force. Either way a
record that could not be written is said (`UnauditedChange`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from meith_core.audit.entry import trust_change_entry
from meith_core.audit.log import AuditLog, now_ms
from meith_core.base.home import MeithHome
from meith_core.base.ids import new_id
from meith_core.host.settings import SettingsStore, audit_trail
from meith_core.policy.grants import Grant, StandingGrants
from meith_core.policy.plugin_approvals import PluginApproval, PluginApprovals
from meith_core.protocol.caller import CallerInfo, CallerKind
from meith_core.protocol.capabilities import Capability

#: The local user at the CLI, who has no runtime session.
LOCAL_USER = CallerInfo(CallerKind.CLI)

T = TypeVar("T")


class UnauditedChange(RuntimeError):
    """The trail could not take a change's record; `made` says whether the change was made."""

    def __init__(self, message: str, *, made: bool) -> None:
        super().__init__(message)
        self.made = made


@dataclass
class TrustEditor:
    """Changes by one door: `caller` is who the records name (the CLI, or the console's own
    session), `by` the words for it (`the local user (meith grants add)`). `audit` is the
    runtime's trail when the runtime edits; otherwise the home's trail is opened per change."""

    home: MeithHome
    by: str
    caller: CallerInfo = LOCAL_USER
    audit: AuditLog | None = None

    # -- standing grants --------------------------------------------------------------------

    def add_grant(self, grant: Grant) -> Grant:
        added = self._change(
            widens=True,
            apply=lambda: StandingGrants(self.home.grants_path).add(grant),
            action="grant-added",
            what=lambda g: f"standing grant {g.id} added ({describe_grant(g)})",
            subject=lambda g: g.to_json(),
            capabilities=grant.capabilities,
        )
        assert added is not None
        return added

    def revoke_grant(self, grant_id: str) -> Grant | None:
        """The grant revoked; None when there was none of that id."""
        return self._change(
            widens=False,
            apply=lambda: StandingGrants(self.home.grants_path).revoke(grant_id),
            action="grant-revoked",
            what=lambda g: f"standing grant {g.id} revoked ({describe_grant(g)})",
            subject=lambda g: g.to_json(),
        )

    # -- plugin approvals -------------------------------------------------------------------

    def approve_plugin(
        self,
        plugin_id: str,
        capabilities: Iterable[Capability | str],
        fingerprint: str,
        *,
        distribution: str | None,
        version: str | None,
        tools: Iterable[Mapping[str, Any]],
    ) -> PluginApproval:
        """Approve `capabilities` of a plugin, pinned to `fingerprint` (and recording the
        version and tools it covers)."""
        caps, listed = list(capabilities), list(tools)
        approval = self._change(
            widens=True,
            apply=lambda: PluginApprovals(self.home.plugins_path).approve(
                plugin_id,
                caps,
                fingerprint,
                distribution=distribution,
                version=version,
                tools=listed,
            ),
            action="plugin-approved",
            what=lambda a: (
                f"plugin {plugin_id} {version or ''} approved for "
                f"{', '.join(c.value for c in a.capabilities) or 'nothing'}"
            ),
            subject=lambda a: {"plugin": plugin_id, **a.to_json()},
            capabilities=caps,
            plugin=plugin_id,
        )
        assert approval is not None
        return approval

    def revoke_plugin(self, plugin_id: str) -> PluginApproval | None:
        """The approval withdrawn; None when the plugin had none."""
        return self._change(
            widens=False,
            apply=lambda: PluginApprovals(self.home.plugins_path).revoke(plugin_id),
            action="plugin-revoked",
            what=lambda a: f"approval of plugin {plugin_id} {a.version or ''} revoked",
            subject=lambda a: {"plugin": plugin_id, **a.to_json()},
            plugin=plugin_id,
        )

    # -- sessions (in the runtime) ----------------------------------------------------------

    def revoke_session(self, session_id: str, revoke: Callable[[], None]) -> None:
        """Record that `revoke` ended a session's grants (it runs first, whatever the trail)."""

        def apply() -> str:
            revoke()
            return session_id

        self._change(
            widens=False,
            apply=apply,
            action="session-revoked",
            what=lambda sid: f"session {sid} revoked (its grants ended)",
            subject=lambda sid: {"sessionId": sid},
        )

    # -- one change -------------------------------------------------------------------------

    def _change(
        self,
        *,
        widens: bool,
        apply: Callable[[], T | None],
        action: str,
        what: Callable[[T], str],
        subject: Callable[[T], Mapping[str, Any]],
        capabilities: Iterable[Capability | str] = (),
        plugin: str | None = None,
    ) -> T | None:
        """Make one change (`apply`: what changed, None for nothing) and record it."""
        log = (
            self.audit
            if self.audit is not None
            else audit_trail(self.home.audit_path, SettingsStore(self.home.settings_path))
        )
        try:
            if widens and (why := log.preflight()) is not None:
                raise UnauditedChange(
                    f"{why}: nothing was changed, since the change could not be audited; make "
                    "the trail writable (free space, permissions), then try again",
                    made=False,
                )
            changed = apply()
            if changed is None:
                return changed  # nothing to revoke: nothing changed, nothing to record
            record = trust_change_entry(
                self.caller,
                action=action,
                by=self.by,
                what=" ".join(what(changed).split()),
                subject=subject(changed),
                capabilities=[
                    c.value if isinstance(c, Capability) else str(c) for c in capabilities
                ],
                plugin=plugin,
                entry_id=new_id("audit"),
                ts=now_ms(),
                pid=os.getpid(),
            )
            if not log.write(record):
                raise UnauditedChange(
                    f"the change was made, but its audit record could not be written "
                    f"({log.last_error}); check the trail with `meith audit verify`",
                    made=True,
                )
            return changed
        finally:
            if log is not self.audit:
                log.close()


def describe_grant(grant: Grant) -> str:
    """A standing grant in words, as `meith grants add` reports it."""
    return (
        f"{grant.caller.value}{' ' + grant.agent if grant.agent else ''} may use "
        f"{', '.join(c.value for c in grant.capabilities)}"
        f"{' for ' + grant.tool if grant.tool else ''}"
        f"{' under ' + grant.cwd_prefix if grant.cwd_prefix else ''}"
        f"{'; network: ' + ', '.join(grant.net) if grant.net else ''}"
        f"{'; sockets: ' + ', '.join(grant.sockets) if grant.sockets else ''}"
    )
