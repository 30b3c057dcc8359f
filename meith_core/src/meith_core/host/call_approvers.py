"""Who is asked for a call approval, in order: the calling connection when it answers for its
own session, then the plugins' `meith_approve` hooks, then the local user's consoles (`meith
ui`, all asked at once), then the approvers the embedding program added (the `serve` prompt).
The first answer wins; no answer is a denial (decided by the permission service). A calling
connection that shares its approvals (an MCP client's task) is asked at the same time as the
others. The caller is told while a person is asked (where, and how long it waits), and when a
person allowed it.

A console's own call (a button the person pressed on its page) asks nobody: it is the local
user's action, allowed as such and audited as made from the console.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Awaitable, Callable

import structlog

from meith_core.host.plugins.manager import PluginManager
from meith_core.policy.asking import Approver
from meith_core.policy.sessions import Sessions
from meith_core.protocol.call_approval import (
    APPROVED,
    ApprovalAnswer,
    ApprovalRequest,
    CallApprovalReply,
    waiting_for,
)
from meith_core.protocol.call_approval_desk import CALL_APPROVAL_TIMEOUT_S

_log = structlog.get_logger("meith.runtime")

_ALLOWS = (ApprovalAnswer.ALLOW_ONCE, ApprovalAnswer.ALLOW_SESSION)
#: An approver added by the embedding program (`Runtime.approvers`).
AddedApprover = Callable[[ApprovalRequest], Awaitable[ApprovalAnswer | None]]
#: What a console's own privileged call is allowed as (it lands in the audit reason).
CONSOLE_OWN_ACTION = "the local user, acting in the console (meith ui)"


class ApproverChain:
    """The runtime's one approver, asking the others in turn."""

    def __init__(self, plugins: PluginManager, sessions: Sessions) -> None:
        self._plugins = plugins
        #: Asked after the plugins, in order (the `meith serve` prompt is one).
        self.added: list[AddedApprover] = []
        #: Whose `Session.approver` (the connection answering for its own session) is asked first.
        self._sessions = sessions
        #: The local user's consoles, by their own session: asked about every session.
        self._consoles: dict[str, Approver] = {}
        #: Where each console answers (its address), to tell a waiting caller.
        self._console_urls: dict[str, str | None] = {}
        #: Sessions whose own approver is asked at the same time as the others.
        self._shared: set[str] = set()

    def share(self, session_id: str, shared: bool) -> None:
        if shared:
            self._shared.add(session_id)
        else:
            self._shared.discard(session_id)

    def set_console(self, session_id: str, approver: Approver | None, url: str | None) -> None:
        if approver is None:
            self.forget_session(session_id)
        else:
            self._consoles[session_id] = approver
            self._console_urls[session_id] = url

    def forget_session(self, session_id: str) -> None:
        """A session ended: if it was a console's, that console is asked no more."""
        self._consoles.pop(session_id, None)
        self._console_urls.pop(session_id, None)
        self._shared.discard(session_id)

    async def __call__(self, request: ApprovalRequest) -> ApprovalAnswer | CallApprovalReply | None:
        """The calling connection when it answers approvals itself (its answer, a timeout
        included, is final; a connection that shares them is asked beside the others); else
        the `meith_approve` hook, the consoles, then approvers the embedding program added:
        first answer wins. A console's own call is allowed as the local user's action."""
        if request.caller.session_id in self._consoles:
            return CallApprovalReply(ApprovalAnswer.ALLOW_ONCE, CONSOLE_OWN_ACTION)
        own = self._sessions.approver_of(request.caller.session_id)
        if own is None:
            answer = await self._others(request)
        elif request.caller.session_id not in self._shared:
            answer = await own(request)
        else:
            answer = await _first_answer([own, self._others], request)
        decision = answer.answer if isinstance(answer, CallApprovalReply) else answer
        if decision in _ALLOWS and request.notify is not None:
            request.notify(APPROVED)
        return answer

    async def _others(self, request: ApprovalRequest) -> ApprovalAnswer | CallApprovalReply | None:
        """The hooks, then the local user's consoles and the added approvers."""
        for plugin_id, thunk in self._plugins.call_each("meith_approve", request=request):
            try:
                hooked = thunk()
                if inspect.isawaitable(hooked):
                    hooked = await hooked
                if hooked is not None:
                    return ApprovalAnswer(hooked)
            except Exception as exc:  # a failing or nonsensical approver is no answer
                _log.error(
                    "approver failed", plugin=plugin_id, error=f"{type(exc).__name__}: {exc}"
                )
        answer: ApprovalAnswer | CallApprovalReply | None = None
        if self._consoles:
            if request.notify is not None:  # the serve prompt says where it waits itself
                request.notify(
                    waiting_for(self._where_consoles(), CALL_APPROVAL_TIMEOUT_S), awaiting=True
                )
            answer = await _first_answer(list(self._consoles.values()), request)
        for approver in [] if answer is not None else self.added:
            answer = await approver(request)
            if answer is not None:
                break
        return answer

    def _where_consoles(self) -> str:
        urls = sorted({u for u in self._console_urls.values() if u})
        if not urls:
            return "in the meith ui console"
        return f"in the meith ui console at {' or '.join(urls)}"


async def _first_answer(
    approvers: list[Approver], request: ApprovalRequest
) -> ApprovalAnswer | CallApprovalReply | None:
    """Ask every approver at once; the first answer wins and the others are withdrawn."""
    tasks = {asyncio.ensure_future(a(request)) for a in approvers}
    try:
        while tasks:
            done, tasks = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                if not task.cancelled() and task.exception() is None:
                    answer = task.result()
                    if answer is not None:
                        return answer
        return None
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
