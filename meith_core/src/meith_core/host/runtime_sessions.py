"""`Runtime`'s sessions: opened, granted, resumed, ended, and their processes' call-back tokens."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import structlog

from meith_core.audit.log import AuditLog
from meith_core.base.callback_env import TOKEN_ENV
from meith_core.base.home import MeithHome
from meith_core.base.ids import new_session_id
from meith_core.host.call_approvers import ApproverChain
from meith_core.host.plugins.lifecycle import LifecycleHooks
from meith_core.host.plugins.manager import PluginManager
from meith_core.host.trust_edits import TrustEditor, UnauditedChange
from meith_core.policy.asking import Approver
from meith_core.policy.child_tokens import LOCAL_USER, ChildTokens
from meith_core.policy.grants import Grant
from meith_core.policy.service import PermissionService
from meith_core.policy.sessions import Session, Sessions, describe_sessions
from meith_core.protocol.actions import ResumedSession
from meith_core.protocol.caller import CallerInfo, CallerKind, ChildBinding, sanitize_label

_log = structlog.get_logger("meith.runtime")


class RuntimeSessions:
    """`Runtime`'s session methods; the attributes below are the runtime's own."""

    home: MeithHome
    cwd: str
    socket_path: str | None
    child_socket_path: str | None
    audit: AuditLog
    plugins: PluginManager
    sessions: Sessions
    permissions: PermissionService
    _approvers: ApproverChain
    _hooks: LifecycleHooks

    def revoke_session(self, session_id: str, by: CallerInfo) -> None:
        """End a session's grants at once, asked by the local user's console `by` (audited)."""
        door = f"the local user's console ({by.label})" if by.label else "the local user"
        try:
            TrustEditor(self.home, door, by, audit=self.audit).revoke_session(
                session_id, lambda: self.permissions.revoke_session(session_id)
            )
        except UnauditedChange as exc:  # revoked all the same: only the record is missing
            _log.error("session revoked, not audited", sessionId=session_id, error=str(exc))

    @property
    def child_tokens(self) -> ChildTokens:
        """Tokens of the processes sessions started (they call back as their session)."""
        return self.sessions.tokens

    def open_session(
        self,
        caller: CallerKind | str = CallerKind.AGENT,
        *,
        cwd: str | None = None,
        label: str | None = None,
    ) -> CallerInfo:
        """A new session with an unguessable id; standing grants of its kind apply to it. It is
        opened for `cwd` (default the runtime's directory): its workspace, where its reads reach
        (`CallerInfo.workspace`)."""
        kind = CallerKind(caller)
        session = new_session_id(kind.value)
        where = cwd or self.cwd
        record = self.sessions.open(session, kind, sanitize_label(label), workspace=where)
        return CallerInfo(
            caller=kind, session_id=session, cwd=where, label=record.label, workspace=where
        )

    def grant(
        self,
        session: CallerInfo,
        capabilities: Iterable[str],
        *,
        tool: str | None = None,
        uses: int | None = None,
        expires_at: int | None = None,
        cwd_prefix: str | None = None,
        net: Iterable[str] = (),
        sockets: Iterable[str] = (),
    ) -> Grant:
        if session.session_id is None:
            raise ValueError("grant needs a session (Runtime.open_session)")
        return self.permissions.grant(
            session.caller,
            session.session_id,
            capabilities,
            tool=tool,
            uses=uses,
            expires_at=expires_at,
            cwd_prefix=cwd_prefix,
            net=net,
            sockets=sockets,
        )

    async def close_session(self, session: CallerInfo | str, *, revoke: bool = True) -> None:
        """End a session: its grants go at once, plugins release what it held."""
        session_id = session.session_id if isinstance(session, CallerInfo) else session
        if session_id is None:
            return
        known = self.sessions.end(session_id) is not None
        self._approvers.forget_session(session_id)
        if revoke:
            self.permissions.revoke_session(session_id)
        if known:
            await self._hooks.run("meith_session_ended", session_id=session_id)

    def child_environment(self, caller: CallerInfo) -> dict[str, str]:
        """What a process started for `caller` needs to call back as `caller` (see
        `ToolContext.child_environment`)."""
        if self.socket_path is None:
            return {}
        if caller.trusted or caller.caller is CallerKind.CLI:
            token = self.child_tokens.mint(LOCAL_USER)
            return {
                "MEITH_HOME": str(self.home.root),
                "MEITH_SOCKET": self.socket_path,
                TOKEN_ENV: token,
            }
        session = caller.session_id
        if (
            caller.caller is not CallerKind.AGENT
            or session is None
            or session not in self.sessions
            or self.permissions.is_revoked(session)
        ):
            return {}
        record = self.sessions.get(session)
        workspace = record.workspace if record is not None else caller.workspace
        token = self.sessions.child_token(
            ChildBinding(caller.caller, session, caller.label, workspace=workspace)
        )
        return {"MEITH_SOCKET": self.child_socket_path or self.socket_path, TOKEN_ENV: token}

    def track_session(self, session_id: str, kind: CallerKind, label: str | None = None) -> Session:
        """Record a session opened elsewhere (a socket connection); ended by close_session."""
        return self.sessions.open(session_id, kind, label)

    def resume_session(self, token: str) -> ResumedSession | None:
        """The detached session `token` resumes, attached again; None when there is none."""
        session = self.sessions.resume(token)
        if session is None:
            return None
        return ResumedSession(
            session.session_id, session.caller, session.label, workspace=session.workspace
        )

    def set_session_approver(
        self, session_id: str, approver: Approver | None, *, shared: bool = False
    ) -> None:
        """`approver` answers this session's approval requests before any other approver;
        `shared`: the other approvers are asked at the same time, and the first answer wins."""
        self.sessions.set_approver(session_id, approver)
        self._approvers.share(session_id, shared and approver is not None)

    def set_console_approver(
        self, session_id: str, approver: Approver | None, url: str | None = None
    ) -> None:
        """`approver` (a local user's console, answering at `url`) is asked about every
        session's approval requests, after the calling connection and the `meith_approve`
        hooks; its own session's calls are the local user's actions."""
        if approver is None or session_id in self.sessions:
            self._approvers.set_console(session_id, approver, url)

    def list_sessions(self, viewer: CallerInfo | None = None) -> list[dict[str, Any]]:
        """The live sessions with their grants (session grants, then standing ones that apply)
        and what each owns (`owns`, as the plugins' `meith_session_objects` report it). A
        `viewer` that may not see every session's (`sees_every_session`) sees its own only."""
        rows = describe_sessions(self.sessions, self.permissions)
        if viewer is not None and not self.permissions.sees_every_session(viewer):
            rows = [r for r in rows if r["sessionId"] == viewer.session_id]
        for row in rows:
            row["owns"] = self._session_objects(row["sessionId"])
        return rows

    def _session_objects(self, session_id: str) -> list[dict[str, Any]]:
        owned: list[dict[str, Any]] = []
        for plugin_id, thunk in self.plugins.call_each(
            "meith_session_objects", session_id=session_id
        ):
            try:
                items = thunk()
            except Exception as exc:  # one plugin's failure hides only its own objects
                _log.error(
                    "meith_session_objects failed",
                    plugin=plugin_id,
                    error=f"{type(exc).__name__}: {exc}",
                )
                continue
            if isinstance(items, list):
                owned.extend({**i, "plugin": plugin_id} for i in items if isinstance(i, dict))
        return owned
