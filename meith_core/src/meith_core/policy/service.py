"""PermissionService: the provider gate and the caller gate (docs/architecture.md, "Identity and permissions").

Both gates apply only to tools that declare a privileged capability; everything else is
allowed for every caller (and still audited). Every decision carries a human-readable reason
that lands in the audit entry. The grants sessions hold, and their revocation, are kept by
`policy.session_grants`, on each session's `Session` (`policy.sessions`).

A decision takes one `AuthRequest` (built from the call record, `CallRecord.auth_request`);
its target — what the call acts on — is derived here, in `acting_target`, from what the tool
declares (`policy.request.ActsOn`). A directory-confined grant covers a call only when that
target is a directory inside it: never global state, never the caller's own directory.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable

from meith_core.policy.asking import Approver, Decision, PromptCancelled, ask_unless_cancelled
from meith_core.policy.grants import EVERY_SESSION_TOOL, Grant, StandingGrants
from meith_core.policy.held import GrantCheck, HeldGrant
from meith_core.policy.hints import approve_plugin_hint, grant_hint
from meith_core.policy.plugin_approvals import PluginApproval, PluginApprovals
from meith_core.policy.request import ActsOn, AuthRequest, CallTarget
from meith_core.policy.session_grants import SessionGrants
from meith_core.policy.sessions import Sessions
from meith_core.protocol.call_approval import MAX_SHOWN_CHARS, ApprovalAnswer, ApprovalRequest
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
        plugin_approvals: PluginApprovals,
        standing: StandingGrants,
        fingerprint_of: Callable[[str], str | None],
        approver: Approver | None = None,
        host_providers: frozenset[str] = HOST_PROVIDERS,
        sessions: Sessions | None = None,
    ) -> None:
        self.plugin_approvals = plugin_approvals
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
        net: Iterable[str] = (),
        sockets: Iterable[str] = (),
    ) -> Grant:
        """Grant a session privileged capabilities (in memory; gone with the session); `net`
        and `sockets`: the destinations and Unix sockets processes started confined under it
        may reach."""
        return self._sessions.grant(
            caller,
            session,
            capabilities,
            tool=tool,
            uses=uses,
            expires_at=expires_at,
            cwd_prefix=cwd_prefix,
            source=source,
            net=net,
            sockets=sockets,
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
        self, caller: CallerInfo, tool: str, capabilities: Iterable[Capability], cwd: str | None
    ) -> HeldGrant | None:
        """`holds`, saying which directory the holding grant is confined to (the grant a call
        needing these capabilities would use first; `cwd` None: a call acting on no
        directory, which no directory-confined grant covers)."""
        wanted = tuple(capabilities)
        if caller.trusted:
            return HeldGrant(None)
        if caller.caller is CallerKind.PLUGIN:
            pid = caller.plugin_id
            if pid is None:
                return None
            if pid in self._host_providers:
                return HeldGrant(None)
            plugin_approval, _why = self._plugin_approval_for(pid)
            if plugin_approval is not None and set(wanted) <= set(plugin_approval.capabilities):
                return HeldGrant(None)
            return None
        session = caller.session_id
        if not session:
            return None
        grant = self._sessions.first_held(caller.caller, session, tool, wanted, cwd, caller.label)
        return None if grant is None else HeldGrant(grant.cwd_prefix, grant.net, grant.sockets)

    def sees_every_session(self, caller: CallerInfo) -> bool:
        """Whether `caller` may read every session's audit records and see every session (with
        its grants): the local user and trusted callers do; an agent or a `plugin` peer only
        with a read-only grant for `get_audit_log` (`meith grants add --caller agent --agent
        NAME --tool get_audit_log --capability read-only`), else its own session only."""
        if caller.trusted or caller.caller is CallerKind.CLI:
            return True
        # Asked for no directory: a read-only grant confined to one (`--read DIR`) widens
        # reads there, never this view.
        return self.held(caller, EVERY_SESSION_TOOL, (Capability.READ_ONLY,), None) is not None

    def every_session_hint(self, caller: CallerInfo) -> str:
        """What the local user runs to let this agent see every session's records."""
        command = grant_hint(
            self._home,
            EVERY_SESSION_TOOL,
            (Capability.READ_ONLY,),
            None,
            caller=caller.caller.value,
            agent=caller.label or None,
        )
        return (
            "Only this session's records and session are shown. To let this agent read every "
            f"session's, the user can run: {command}"
        )

    def grant_check(self, caller: CallerInfo, tool: str) -> GrantCheck:
        """`held` bound to one call, for `ToolContext.caller_holds` / `held_grant`."""
        return lambda caps, cwd: self.held(caller, tool, parse_capabilities(caps), cwd)

    # -- the decision -------------------------------------------------------------------

    def provider_approved(self, plugin_id: str, capabilities: tuple[Capability, ...]) -> bool:
        """Whether the provider gate lets this plugin's tool with these capabilities run now."""
        if not privileged_of(capabilities):
            return True
        return self._provider_gate("", capabilities, plugin_id) is None

    async def authorize(self, request: AuthRequest) -> Decision:
        """Decide one call. `request.cancel` (the call's token) ends a pending approval prompt:
        a call cancelled while waiting for a person is denied. `request.notify` reaches the
        caller while an approver keeps it waiting (see ApprovalRequest.notify)."""
        if not request.privileged:
            return Decision(True, "no privileged capability")

        provider = self._provider_gate(request.tool, request.capabilities, request.plugin_id)
        if provider is not None:
            return provider

        caller = request.caller
        if caller.trusted:
            return Decision(True, f"trusted in-process caller ({caller.caller.value})")
        if caller.caller is CallerKind.PLUGIN:
            return self._plugin_caller_gate(caller, request.tool, request.capabilities)
        return await self._session_gate(request)

    def _plugin_approval_for(self, plugin_id: str) -> tuple[PluginApproval | None, str | None]:
        """The plugin's valid approval, or None with why not."""
        plugin_approval = self.plugin_approvals.get(plugin_id)
        if plugin_approval is None:
            return None, f"plugin {plugin_id} is not approved"
        if plugin_approval.fingerprint != self._fingerprint_of(plugin_id):
            return None, (
                f"the approval of plugin {plugin_id} is void because the plugin changed since it "
                "was approved"
            )
        return plugin_approval, None

    def _provider_gate(
        self, tool: str, capabilities: tuple[Capability, ...], plugin_id: str
    ) -> Decision | None:
        if plugin_id in self._host_providers:
            return None
        plugin_approval, why = self._plugin_approval_for(plugin_id)
        missing = (
            [c for c in capabilities if c not in plugin_approval.capabilities]
            if plugin_approval
            else list(capabilities)
        )
        if plugin_approval is not None and not missing:
            return None
        reason = why or f"plugin {plugin_id} is not approved for {_caps(missing)}"
        return Decision(
            False,
            reason,
            message=(
                f'Tool "{tool}" is provided by plugin {plugin_id}, and {reason}. '
                f"To allow it, run: {approve_plugin_hint(self._home, plugin_id)}"
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
        plugin_approval, why = self._plugin_approval_for(pid)
        if plugin_approval is None or not plugin_approval.capabilities:
            reason = why or f"plugin {pid} has an empty approval"
            return Decision(
                False,
                reason,
                message=f'Plugin {pid} may not call "{tool}": {reason}.',
                details={"gate": "caller", "caller": "plugin", "plugin": pid},
            )
        missing = [c for c in capabilities if c not in plugin_approval.capabilities]
        if missing:
            reason = f"plugin {pid} lacks {_caps(missing)}"
            return Decision(
                False,
                reason,
                message=f'Plugin {pid} lacks capabilities [{_caps(missing)}] required by "{tool}".',
                details={"gate": "caller", "plugin": pid, "missing": [c.value for c in missing]},
            )
        return Decision(True, f"plugin {pid} approved for {_caps(capabilities)}")

    async def _session_gate(self, request: AuthRequest) -> Decision:
        caller, tool, privileged, target = (
            request.caller,
            request.tool,
            request.privileged,
            request.target,
        )
        kind, session = caller.caller, caller.session_id
        if not session:
            return self._deny(request, f"{kind.value} caller without a session")
        if self._sessions.is_revoked(session):
            return self._deny(request, f"session {session} was revoked")
        deny = functools.partial(self._deny, request)

        grant = self._sessions.consume(
            kind, session, tool, privileged, target.directory, caller.label
        )
        if grant is not None:
            what = "standing" if grant.session is None else "session"
            return Decision(
                True,
                f"{what} grant {grant.id}",
                grant_scope=grant.cwd_prefix,
                grant_net=grant.net,
                grant_sockets=grant.sockets,
            )

        if self.approver is not None:
            view = request.approval_view()
            if not view.fits:
                return deny(
                    f"not offered for approval: shown whole, its command and arguments are "
                    f"{view.chars} characters, more than an approver is shown "
                    f"({MAX_SHOWN_CHARS}); allow it with a grant instead"
                )
            asked = ApprovalRequest(
                request_id=request.request_id,
                caller=caller,
                tool_name=tool,
                plugin_id=request.plugin_id,
                capabilities=request.capabilities,
                privileged=privileged,
                cwd=target.directory or request.caller_cwd,
                view=view,
                notify=request.notify,
            )
            try:
                answer, by = await ask_unless_cancelled(self.approver, asked, request.cancel)
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
        confined = self._confined_near_miss(request)
        if confined is not None:
            if target.directory is None:
                why = (
                    f"grant {confined.id} is confined to {confined.cwd_prefix}, and a "
                    f"directory-confined grant never covers {tool}: it acts on {target.what}"
                )
            else:
                why = (
                    f"grant {confined.id} is confined to {confined.cwd_prefix}, and {tool} acts "
                    f"on {target.what}, {target.directory}, outside it"
                )
            return deny(why, confined=True)
        return deny(f"no grant for {_caps(privileged)}")

    def _confined_near_miss(self, request: AuthRequest) -> Grant | None:
        """A grant of the session that would cover the call but for its directory."""
        caller = request.caller
        matches = self._sessions.judged(
            caller.caller,
            caller.session_id or "",
            request.tool,
            request.privileged,
            request.target.directory,
            caller.label,
        )
        return next((m.grant for m in matches if m.miss == "directory"), None)

    def _deny(self, request: AuthRequest, reason: str, *, confined: bool = False) -> Decision:
        """A caller-gate denial: the reason, and the narrowest standing grant that would allow
        the call — without `--cwd` when the target has no directory (global state)."""
        caller, tool, privileged = request.caller, request.tool, request.privileged
        kind = caller.caller
        caps = _caps(privileged)
        where = request.target.directory
        hint = ""
        if kind is CallerKind.CLI:
            hint = f" To allow it, run: {grant_hint(self._home, tool, privileged, where)}"
        elif kind is CallerKind.AGENT:
            command = grant_hint(
                self._home, tool, privileged, where, caller="agent", agent=caller.label or None
            )
            hint = f" To allow it for this agent, the user can run: {command}"
        if confined and where is None and hint:
            hint += " (a grant without --cwd: no directory-confined grant covers it)"
        return Decision(
            False,
            reason,
            message=f'Tool "{tool}" requires {caps} permission ({reason}).{hint}',
            details={
                "gate": "caller",
                "caller": kind.value,
                "required": [c.value for c in privileged],
                "target": request.target.kind,
                **({"targetDirectory": where} if where is not None else {}),
            },
        )


def acting_target(acts_on: ActsOn | None, caller_cwd: str, arguments: object) -> CallTarget:
    """What a call acts on, from its tool's declaration: the one place the directory a
    confined grant is matched against is derived.

    An undeclared tool with a `cwd` argument acts on that path (the caller's directory is only
    that argument's default); an undeclared tool without one has no directory, so only an
    unconfined grant covers it.
    """
    if acts_on is None:
        if isinstance(getattr(arguments, "cwd", None), str):
            return _path_target("cwd", caller_cwd, arguments)
        return CallTarget("undeclared", None, "something it does not declare")
    if acts_on.kind == "path":
        return _path_target(acts_on.name, caller_cwd, arguments)
    if acts_on.kind == "global":
        what = "global state" if acts_on.name == "state" else f"global state ({acts_on.name})"
        return CallTarget("global", None, what)
    assert acts_on.resolver is not None
    try:
        directory = acts_on.resolver(arguments)
    except Exception:
        directory = None
    if not isinstance(directory, str) or not os.path.isabs(directory) or "\0" in directory:
        return CallTarget("object", None, f"a {acts_on.name} whose directory is unknown")
    return CallTarget("object", os.path.realpath(directory), f"the {acts_on.name}'s directory")


def _path_target(argument: str, caller_cwd: str, arguments: object) -> CallTarget:
    value = getattr(arguments, argument, None)
    if not isinstance(value, str) or not value or "\0" in value:
        return CallTarget("path", None, f"argument {argument}, which names no path")
    resolved = os.path.realpath(os.path.join(caller_cwd, os.path.expanduser(value)))
    return CallTarget("path", resolved, f"the path in argument {argument}")
