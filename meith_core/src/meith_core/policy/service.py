"""PermissionService: the provider gate and the caller gate (docs/architecture.md, "Identity and permissions").

Both gates apply only to tools that declare a privileged capability; everything else is
allowed for every caller (and still audited). Every decision carries a human-readable reason
that lands in the audit entry. The grants sessions hold, and their revocation, are kept by
`policy.session_grants`, on each session's `Session` (`policy.sessions`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

from meith_core.base.cancel import CancelToken
from meith_core.policy.asking import Approver, Decision, PromptCancelled, ask_unless_cancelled
from meith_core.policy.grants import Grant, StandingGrants
from meith_core.policy.held import GrantCheck, HeldGrant
from meith_core.policy.hints import approve_hint, grant_hint
from meith_core.policy.plugin_approvals import Approval, PluginApprovals
from meith_core.policy.session_grants import SessionGrants
from meith_core.policy.sessions import Sessions
from meith_core.protocol.approval import ApprovalAnswer, ApprovalRequest
from meith_core.protocol.caller import CallerInfo, CallerKind
from meith_core.protocol.capabilities import Capability, parse_capabilities, privileged_of

#: Providers whose tools are approved implicitly: the built-in `core` plugin and tools the
#: embedding application registers itself (`Runtime.register`).
HOST_PROVIDERS: frozenset[str] = frozenset({"core", "app"})


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
        sessions: Sessions | None = None,
    ) -> None:
        self.approvals = approvals
        self.standing = standing
        self.approver = approver
        self._fingerprint_of = fingerprint_of
        self._host_providers = host_providers
        #: The home whose files the hints tell the user to edit.
        self._home = standing.path.parent
        #: The sessions whose grants this service reads (the runtime's registry).
        self.sessions = sessions if sessions is not None else Sessions()
        self._sessions = SessionGrants(standing, self.sessions)

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
        return self._sessions.grant(
            caller,
            session,
            capabilities,
            tool=tool,
            uses=uses,
            expires_at=expires_at,
            cwd_prefix=cwd_prefix,
            source=source,
        )

    def revoke_session(self, session: str) -> None:
        """Immediately end every grant of `session`; later calls from it are denied."""
        self._sessions.revoke(session)

    def forget_session(self, session: str) -> None:
        """A session ended normally (its id is never reused): drop its state."""
        self.revoke_session(session)

    def is_revoked(self, session: str | None) -> bool:
        return self._sessions.is_revoked(session)

    def session_grants(self, session: str) -> list[Grant]:
        return self._sessions.of(session)

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
        if not session:
            return None
        grant = self._sessions.first_held(caller.caller, session, tool, wanted, cwd)
        return None if grant is None else HeldGrant(grant.cwd_prefix)

    def grant_check(self, caller: CallerInfo, tool: str) -> GrantCheck:
        """`held` bound to one call, for `ToolContext.caller_holds` / `held_grant`."""
        return lambda caps, cwd: self.held(caller, tool, parse_capabilities(caps), cwd)

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
        if self._sessions.is_revoked(session):
            return self._deny(tool, privileged, f"session {session} was revoked", kind)
        deny = functools.partial(
            self._deny, tool, privileged, kind=kind, cwd=cwd, label=caller.label
        )

        grant = self._sessions.consume(kind, session, tool, privileged, cwd, caller.label)
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
            if self._sessions.is_revoked(session):  # revoked while the prompt was open
                return deny(f"session {session} was revoked")
            if answer is ApprovalAnswer.ALLOW_ONCE:
                return Decision(True, f"approved once {by}")
            if answer is ApprovalAnswer.ALLOW_SESSION:
                self.grant(kind, session, privileged, tool=tool, source="prompt")
                return Decision(True, f"approved for this session {by}")
            if answer is ApprovalAnswer.DENY:
                return deny(f"denied {by}")
        return deny(f"no grant for {_caps(privileged)}")

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
