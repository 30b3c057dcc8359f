"""PermissionService: the provider gate and the caller gate (docs/architecture.md, "Identity and permissions").

Both gates apply only to tools that declare a privileged capability; everything else is
allowed for every caller (and still audited). Every decision carries a human-readable reason
that lands in the audit entry.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable

from meith_core._caller import CallerInfo, CallerKind
from meith_core._cancel import CancelToken
from meith_core._capabilities import Capability, parse_capabilities, privileged_of
from meith_core._context import GrantCheck, HeldGrant
from meith_core._permissions.approvals import Approval, PluginApprovals
from meith_core._permissions.asking import (
    ApprovalAnswer,
    ApprovalRequest,
    Approver,
    Decision,
    PromptCancelled,
    ask_unless_cancelled,
)
from meith_core._permissions.grants import Grant, StandingGrants, new_grant
from meith_core._permissions.hints import approve_hint, grant_hint

#: Providers whose tools are approved implicitly: the built-in `core` plugin and tools the
#: embedding application registers itself (`Runtime.register`).
HOST_PROVIDERS: frozenset[str] = frozenset({"core", "app"})
#: Every ended session is remembered as revoked (a caller holding its id must stay denied),
#: but a long-running server ends one per connection: past this many, the oldest are
#: forgotten. Session ids are unguessable and never reused, so only an in-process caller
#: still holding a session that ended that many sessions ago could notice.
MAX_REMEMBERED_REVOKED = 100_000


def _caps(values: Iterable[Capability]) -> str:
    return ", ".join(c.value for c in values)


class PermissionService:
    def __init__(
        self,
        *,
        approvals: PluginApprovals,
        standing: StandingGrants,
        fingerprint_of: Callable[[str], str | None],
        approver: Approver | None = None,
        host_providers: frozenset[str] = HOST_PROVIDERS,
    ) -> None:
        self.approvals = approvals
        self.standing = standing
        self.approver = approver
        self._fingerprint_of = fingerprint_of
        self._host_providers = host_providers
        #: The home whose files the hints tell the user to edit.
        self._home = standing.path.parent
        self._session_grants: dict[str, list[Grant]] = {}
        # Insertion-ordered, so the oldest can be forgotten (see MAX_REMEMBERED_REVOKED).
        self._revoked: dict[str, None] = {}

    # -- grants and sessions ------------------------------------------------------------

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
        )
        self._session_grants.setdefault(session, []).append(grant)
        return grant

    def revoke_session(self, session: str) -> None:
        """Immediately end every grant of `session`; later calls from it are denied."""
        self._revoked[session] = None
        while len(self._revoked) > MAX_REMEMBERED_REVOKED:
            del self._revoked[next(iter(self._revoked))]
        self._session_grants.pop(session, None)

    def forget_session(self, session: str) -> None:
        """A session ended normally (its id is never reused): drop its state."""
        self.revoke_session(session)

    def is_revoked(self, session: str | None) -> bool:
        return session is not None and session in self._revoked

    def session_grants(self, session: str) -> list[Grant]:
        return list(self._session_grants.get(session, ()))

    def holds(
        self, caller: CallerInfo, tool: str, capabilities: Iterable[Capability], cwd: str
    ) -> bool:
        """Whether `caller` already holds `capabilities` for `tool` at `cwd`.

        A question a running tool asks before doing more than its declared capabilities (git
        hooks are programs): it consumes no use and asks no approver.
        """
        return self.held(caller, tool, capabilities, cwd) is not None

    def held(
        self, caller: CallerInfo, tool: str, capabilities: Iterable[Capability], cwd: str
    ) -> HeldGrant | None:
        """`holds`, saying which directory the holding grant is confined to (the grant a call
        needing these capabilities would use first)."""
        wanted = tuple(capabilities)
        if caller.trusted:
            return HeldGrant(None)
        if caller.caller is CallerKind.PLUGIN:
            pid = caller.plugin_id
            if pid is None:
                return None
            if pid in self._host_providers:
                return HeldGrant(None)
            approval, _why = self._approval_for(pid)
            if approval is not None and set(wanted) <= set(approval.capabilities):
                return HeldGrant(None)
            return None
        session = caller.session_id
        if not session or session in self._revoked:
            return None
        now = time.time_ns() // 1_000_000
        for grant in self._candidates(caller.caller, session):
            if grant.expired(now) or not grant.covers(tool, wanted, cwd):
                continue
            if grant.uses is None or grant.uses > 0:
                return HeldGrant(grant.cwd_prefix)
        return None

    def grant_check(self, caller: CallerInfo, tool: str) -> GrantCheck:
        """`held` bound to one call, for `ToolContext.caller_holds` / `held_grant`."""
        return lambda caps, cwd: self.held(caller, tool, parse_capabilities(caps), cwd)

    def _candidates(self, kind: CallerKind, session: str) -> list[Grant]:
        """The session's own grants, then the standing grants that apply to it."""
        own = [g for g in self._session_grants.get(session, ()) if g.caller is kind]
        standing = [
            g
            for g in self.standing.current()
            if g.caller is kind and (g.session is None or g.session == session)
        ]
        return own + standing

    # -- the decision -------------------------------------------------------------------

    def provider_approved(self, plugin_id: str, capabilities: tuple[Capability, ...]) -> bool:
        """Whether the provider gate lets this plugin's tool with these capabilities run now."""
        if not privileged_of(capabilities):
            return True
        return self._provider_gate("", capabilities, plugin_id) is None

    async def authorize(
        self,
        caller: CallerInfo,
        tool_name: str,
        capabilities: tuple[Capability, ...],
        plugin_id: str,
        *,
        request_id: str,
        cwd: str,
        arguments_summary: Callable[[], str],
        cancel: CancelToken | None = None,
        notify: Callable[[str], None] | None = None,
    ) -> Decision:
        """Decide one call. `cancel` (the call's token) ends a pending approval prompt: a call
        cancelled while waiting for a person is denied. `notify` reaches the caller while an
        approver keeps it waiting (see ApprovalRequest.notify)."""
        privileged = privileged_of(capabilities)
        if not privileged:
            return Decision(True, "no privileged capability")

        provider = self._provider_gate(tool_name, capabilities, plugin_id)
        if provider is not None:
            return provider

        if caller.trusted:
            return Decision(True, f"trusted in-process caller ({caller.caller.value})")
        if caller.caller is CallerKind.PLUGIN:
            return self._plugin_caller_gate(caller, tool_name, capabilities)
        return await self._session_gate(
            caller,
            tool_name,
            capabilities,
            privileged,
            plugin_id,
            request_id,
            cwd,
            arguments_summary,
            cancel,
            notify,
        )

    def _approval_for(self, plugin_id: str) -> tuple[Approval | None, str | None]:
        """The plugin's valid approval, or None with why not."""
        approval = self.approvals.get(plugin_id)
        if approval is None:
            return None, f"plugin {plugin_id} is not approved"
        if approval.fingerprint != self._fingerprint_of(plugin_id):
            return None, (
                f"the approval of plugin {plugin_id} is void because the plugin changed since it "
                "was approved"
            )
        return approval, None

    def _provider_gate(
        self, tool: str, capabilities: tuple[Capability, ...], plugin_id: str
    ) -> Decision | None:
        if plugin_id in self._host_providers:
            return None
        approval, why = self._approval_for(plugin_id)
        missing = (
            [c for c in capabilities if c not in approval.capabilities]
            if approval
            else list(capabilities)
        )
        if approval is not None and not missing:
            return None
        reason = why or f"plugin {plugin_id} is not approved for {_caps(missing)}"
        return Decision(
            False,
            reason,
            message=(
                f'Tool "{tool}" is provided by plugin {plugin_id}, and {reason}. '
                f"To allow it, run: {approve_hint(self._home, plugin_id)}"
            ),
            details={
                "gate": "provider",
                "plugin": plugin_id,
                "missing": [c.value for c in missing],
            },
        )

    def _plugin_caller_gate(
        self, caller: CallerInfo, tool: str, capabilities: tuple[Capability, ...]
    ) -> Decision:
        pid = caller.plugin_id
        if pid is None:
            reason = "the caller is not bound to an approved plugin identity"
            return Decision(
                False,
                reason,
                message=f'Plugin caller is not bound to an approved plugin identity for "{tool}".',
                details={"gate": "caller", "caller": "plugin"},
            )
        if pid in self._host_providers:
            return Decision(True, f"plugin {pid} is part of the host")
        approval, why = self._approval_for(pid)
        if approval is None or not approval.capabilities:
            reason = why or f"plugin {pid} has an empty approval"
            return Decision(
                False,
                reason,
                message=f'Plugin {pid} may not call "{tool}": {reason}.',
                details={"gate": "caller", "caller": "plugin", "plugin": pid},
            )
        missing = [c for c in capabilities if c not in approval.capabilities]
        if missing:
            reason = f"plugin {pid} lacks {_caps(missing)}"
            return Decision(
                False,
                reason,
                message=f'Plugin {pid} lacks capabilities [{_caps(missing)}] required by "{tool}".',
                details={"gate": "caller", "plugin": pid, "missing": [c.value for c in missing]},
            )
        return Decision(True, f"plugin {pid} approved for {_caps(capabilities)}")

    async def _session_gate(
        self,
        caller: CallerInfo,
        tool: str,
        capabilities: tuple[Capability, ...],
        privileged: tuple[Capability, ...],
        plugin_id: str,
        request_id: str,
        cwd: str,
        arguments_summary: Callable[[], str],
        cancel: CancelToken | None,
        notify: Callable[[str], None] | None,
    ) -> Decision:
        kind, session = caller.caller, caller.session_id
        if not session:
            return self._deny(tool, privileged, f"{kind.value} caller without a session", kind)
        if session in self._revoked:
            return self._deny(tool, privileged, f"session {session} was revoked", kind)
        deny = functools.partial(
            self._deny, tool, privileged, kind=kind, cwd=cwd, label=caller.label
        )

        grant = self._consume(kind, session, tool, privileged, cwd, caller.label)
        if grant is not None:
            what = "standing" if grant.session is None else "session"
            return Decision(True, f"{what} grant {grant.id}", grant_scope=grant.cwd_prefix)

        if self.approver is not None:
            request = ApprovalRequest(
                request_id=request_id,
                caller=caller,
                tool_name=tool,
                plugin_id=plugin_id,
                capabilities=capabilities,
                privileged=privileged,
                cwd=cwd,
                arguments_summary=arguments_summary(),
                notify=notify,
            )
            try:
                answer, by = await ask_unless_cancelled(self.approver, request, cancel)
            except PromptCancelled:
                return deny("cancelled while waiting for approval")
            except Exception as exc:
                # A broken approver must neither open the gate nor break the call pipeline.
                reason = f"approver failed ({type(exc).__name__}: {exc})"[:300]
                return deny(reason)
            if session in self._revoked:  # revoked while the prompt was open
                return deny(f"session {session} was revoked")
            if answer is ApprovalAnswer.ALLOW_ONCE:
                return Decision(True, f"approved once {by}")
            if answer is ApprovalAnswer.ALLOW_SESSION:
                self.grant(kind, session, privileged, tool=tool, source="prompt")
                return Decision(True, f"approved for this session {by}")
            if answer is ApprovalAnswer.DENY:
                return deny(f"denied {by}")
        return deny(f"no grant for {_caps(privileged)}")

    def _consume(
        self,
        kind: CallerKind,
        session: str,
        tool: str,
        privileged: tuple[Capability, ...],
        cwd: str,
        label: str | None = None,
    ) -> Grant | None:
        now = time.time_ns() // 1_000_000
        grants = self._session_grants.get(session, [])
        for grant in grants:
            if (
                grant.caller is kind
                and not grant.expired(now)
                and grant.covers(tool, privileged, cwd, label)
            ):
                if grant.uses is not None:
                    grant.uses -= 1
                    if grant.uses <= 0:
                        grants.remove(grant)
                return grant
        for grant in self.standing.current():
            if (
                grant.caller is not kind
                or grant.expired(now)
                or not grant.covers(tool, privileged, cwd, label)
            ):
                continue
            if grant.session is not None and grant.session != session:
                continue  # an entry pinned to one session applies to that session only
            # One budget for every session and runtime, spent in the file under its lock.
            if grant.uses is not None and not self.standing.consume_use(grant.id):
                continue
            return grant
        return None

    def _deny(
        self,
        tool: str,
        privileged: tuple[Capability, ...],
        reason: str,
        kind: CallerKind,
        cwd: str | None = None,
        label: str | None = None,
    ) -> Decision:
        caps = _caps(privileged)
        hint = ""
        if kind is CallerKind.CLI:
            hint = f" To allow it, run: {grant_hint(self._home, tool, privileged, cwd)}"
        elif kind is CallerKind.AGENT:
            command = grant_hint(
                self._home, tool, privileged, cwd, caller="agent", agent=label or None
            )
            hint = f" To allow it for this agent, the user can run: {command}"
        return Decision(
            False,
            reason,
            message=f'Tool "{tool}" requires {caps} permission ({reason}).{hint}',
            details={
                "gate": "caller",
                "caller": kind.value,
                "required": [c.value for c in privileged],
            },
        )
