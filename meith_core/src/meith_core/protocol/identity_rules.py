"""Who one connection is (its claim, a child's token, a resumed session) and each call's caller.

Sans-IO, part of `Connection` (`protocol.connection`).

Identity: the first frame that carries `clientInfo` (a `hello`, a `tool_call`, or a
`list_tools` that names one) fixes the connection's caller kind, label and whether it answers
approval requests. A socket peer may claim `cli`, `agent` or `plugin`; any other claim is
downgraded to `cli`. A later frame that claims a different kind runs as the fixed identity and
records the claim as `claimedCaller` (audited); later labels are ignored. A peer the runtime
itself started (a process or terminal of a tool, found by its parent chain) is never asked to
approve: it would be approving its own calls. A `cli` claim with `console` (the local user's
`meith ui`) answers approval requests for every session and may revoke sessions; a process the
runtime started, or a connection with a child's token, is never a console.

A first claim carrying `sessionToken` (a child of a session, see `policy.child_tokens`) is
that session instead, whatever it claims: its kind, label and session id, never approvals (the
local user's token: what it claims, as the user's processes may, in a session of its own). An
unknown token, or one whose session has ended since, is refused call by call: it never falls
back to an identity of its own choosing. A peer that must present one (a confined child) and
does not (a connection on the children's token-only socket, or any process the runtime started)
is refused the same way.

A `hello` presenting a `resumeToken` as the connection's first claim takes over the detached
session it names (its id, kind and label; approvals as this connection says), when the runtime
still keeps it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Final

from meith_core.protocol.actions import (
    Action,
    Identity,
    IdentityFixed,
    Refused,
    ResumedSession,
    SessionResumed,
)
from meith_core.protocol.caller import (
    SOCKET_CALLERS,
    CallerInfo,
    CallerKind,
    ChildBinding,
    sanitize_label,
)
from meith_core.protocol.messages import ClientInfo, Hello

#: Distinct scope hints (cwd, spaceId, tabId) whose caller identity a connection keeps built.
_MAX_CACHED_CALLERS: Final = 64


def _normalise(claim: str) -> CallerKind:
    try:
        kind = CallerKind(claim)
    except ValueError:
        return CallerKind.CLI
    return kind if kind in SOCKET_CALLERS else CallerKind.CLI


class IdentityRules:
    """One connection's identity and the callers of its calls. Synchronous, no I/O."""

    def __init__(
        self,
        session_id: str,
        *,
        runtime_cwd: str,
        may_answer_call_approvals: bool,
        resolve_token: Callable[[str], ChildBinding | None] | None,
        token_required: bool,
        resume: Callable[[str], ResumedSession | None] | None,
    ) -> None:
        #: The connection's session (replaced by the one it resumes).
        self.session_id = session_id
        self._resume = resume
        self._resolve_token = resolve_token
        #: The child token this connection presented, checked again before every call ("":
        #: none, but one was required).
        self._token: str | None = None
        self._token_required = token_required
        #: False for a peer the runtime itself started: it may not approve its own calls.
        self._may_answer_call_approvals = may_answer_call_approvals
        self._runtime_cwd = runtime_cwd
        self._identity: Identity | None = None
        self._callers: dict[tuple[str | None, ...], CallerInfo] = {}

    @property
    def identity(self) -> Identity:
        return self._identity or Identity(CallerKind.CLI)

    @property
    def token_bound(self) -> bool:
        """The connection calls only with a child token (it must, or it presented one)."""
        return self._token_required or self._token is not None

    def claim(self, info: ClientInfo, out: list[Action]) -> str | None:
        """Apply a claim; returns what to record as `claimedCaller` for this frame, if any."""
        claim = info.caller
        ident = self._identity
        if ident is not None:
            # Anything but the fixed kind, spelled as such, is another claim (a different
            # kind, or one that would be downgraded); a frame naming no kind claims nothing.
            if claim == ident.caller.value or "caller" not in info.model_fields_set:
                return None
            return claim
        if info.sessionToken is not None or self._token_required:
            self._token = info.sessionToken or ""
            binding = self._resolve_token(self._token) if self._resolve_token else None
            if binding is None:
                self._identity = Identity(CallerKind.AGENT)
            elif not binding.session_id:
                # The local user's processes claim what any of the user's processes may (an
                # MCP bridge in the user's terminal is an agent), in a session of their own.
                kind = _normalise(claim)
                self._identity = Identity(
                    kind, sanitize_label(info.label), False, "", workspace=self._workspace(info)
                )
            else:
                # A session's process reads within that session's workspace, whatever it says.
                self._identity = Identity(
                    binding.caller,
                    binding.label,
                    False,
                    binding.session_id,
                    workspace=binding.workspace,
                )
            out.append(IdentityFixed(self._identity))
            return None if self._identity.caller.value == claim else claim
        kind = _normalise(claim)
        answers = info.approvals and self._may_answer_call_approvals
        # The console answers for others: only the local user, never a process of the runtime.
        console = info.console and self._may_answer_call_approvals and claim == CallerKind.CLI.value
        self._identity = Identity(
            kind,
            sanitize_label(info.label),
            answers,
            console=console,
            console_url=sanitize_label(info.consoleUrl) if console else None,
            workspace=self._workspace(info),
            shares_call_approvals=answers and info.approvalsShared,
        )
        out.append(IdentityFixed(self._identity))
        return None if kind.value == claim else claim

    def take_over(self, hello: Hello, out: list[Action]) -> str:
        """Resume the detached session `hello.resumeToken` names; "" when done, else why not."""
        if self._identity is not None:
            return "a connection resumes a session only in its first frame"
        if self._token_required or hello.clientInfo.sessionToken is not None:
            return "a process started for a session cannot resume a session"
        found = self._resume(hello.resumeToken or "") if self._resume else None
        if found is None:
            return (
                "resumeToken is not valid: the session ended, is held by another connection, or "
                "was never issued; start a new session"
            )
        out.append(SessionResumed(self.session_id, found.session_id))
        self.session_id = found.session_id
        answers = hello.clientInfo.approvals and self._may_answer_call_approvals
        # A resumed session keeps the workspace it was opened for.
        self._identity = Identity(
            found.caller,
            found.label,
            answers,
            workspace=found.workspace,
            shares_call_approvals=answers and hello.clientInfo.approvalsShared,
        )
        out.append(IdentityFixed(self._identity))
        return ""

    def _workspace(self, info: ClientInfo) -> str | None:
        """The workspace a session is opened for: the `cwd` of the frame that opens it (the
        MCP bridge's `--cwd`), taken once; None when that frame names none."""
        cwd = info.cwd
        if cwd is None or "\0" in cwd:  # a NUL: no workspace (its calls are refused anyway)
            return None
        return os.path.normpath(os.path.join(self._runtime_cwd, cwd))

    def token_refusal(self) -> str:
        """Why this connection's calls are refused (its token is not, or no longer, valid)."""
        token = self._token
        if token is None and not self._token_required:
            return ""
        if not token:
            return (
                "this connection comes from a process started for a session (or confined by a "
                "meith runtime): it calls only as that session, with its token "
                "(MEITH_SESSION_TOKEN)"
            )
        binding = self._resolve_token(token) if self._resolve_token else None
        if binding is not None and binding.session_id == self.identity.session_id:
            return ""
        return (
            "sessionToken is not valid: the session that started this process has ended (or "
            "the token was never issued); its calls are refused"
        )

    def sender(self) -> CallerInfo:
        """Who sent a frame (a refused one, a console's revocation): the connection's identity
        so far, nothing the frame says."""
        ident = self.identity
        return CallerInfo(
            caller=ident.caller,
            session_id=ident.session_id or self.session_id,
            cwd=self._runtime_cwd,
            label=ident.label,
            workspace=ident.workspace,
        )

    def caller(self, info: ClientInfo, claimed: str | None) -> CallerInfo:
        """The call's identity: the connection's, with this frame's scope hints. A client
        sends the same hints call after call, so the (immutable) result is reused."""
        key = (info.cwd, info.spaceId, info.tabId, claimed)
        cached = self._callers.get(key)
        if cached is not None:
            return cached
        cwd = info.cwd
        if cwd is not None:
            if "\0" in cwd:
                raise Refused("clientInfo.cwd contains a NUL byte")
            # Relative hints are taken from the runtime's cwd.
            cwd = os.path.join(self._runtime_cwd, cwd)
        ident = self.identity
        caller = CallerInfo(
            caller=ident.caller,
            # The peer's sessionId is never used; a child's token names its parent's.
            session_id=ident.session_id or self.session_id,
            cwd=cwd or self._runtime_cwd,
            space_id=info.spaceId,
            tab_id=info.tabId,
            claimed_caller=claimed,
            label=ident.label,
            workspace=ident.workspace,
        )
        if len(self._callers) >= _MAX_CACHED_CALLERS:
            self._callers.clear()
        self._callers[key] = caller
        return caller
