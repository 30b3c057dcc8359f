"""Who answers an approval request, in order: the calling connection when it answers for its
own session, then the plugins' `meith_approve` hooks, then the approvers the embedding program
added. The first answer wins; no answer is a denial (decided by the permission service).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable

import structlog

from meith_core.host.plugins.manager import PluginManager
from meith_core.policy.sessions import Sessions
from meith_core.protocol.approval import ApprovalAnswer, ApprovalReply, ApprovalRequest

_log = structlog.get_logger("meith.runtime")

#: An approver added by the embedding program (`Runtime.approvers`).
AddedApprover = Callable[[ApprovalRequest], Awaitable[ApprovalAnswer | None]]


class ApproverChain:
    """The runtime's one approver, asking the others in turn."""

    def __init__(self, plugins: PluginManager, sessions: Sessions) -> None:
        self._plugins = plugins
        #: Asked after the plugins, in order (the `meith serve` prompt is one).
        self.added: list[AddedApprover] = []
        #: Whose `Session.approver` (the connection answering for its own session) is asked first.
        self._sessions = sessions

    async def __call__(self, request: ApprovalRequest) -> ApprovalAnswer | ApprovalReply | None:
        """The calling connection when it answers approvals itself (its answer, a timeout
        included, is final); else the `meith_approve` hook, then approvers the embedding
        program added: first answer wins."""
        own = self._sessions.approver_of(request.caller.session_id)
        if own is not None:
            return await own(request)
        for plugin_id, thunk in self._plugins.call_each("meith_approve", request=request):
            try:
                answer = thunk()
                if inspect.isawaitable(answer):
                    answer = await answer
                if answer is not None:
                    return ApprovalAnswer(answer)
            except Exception as exc:  # a failing or nonsensical approver is no answer
                _log.error(
                    "approver failed", plugin=plugin_id, error=f"{type(exc).__name__}: {exc}"
                )
        for approver in self.added:
            answer = await approver(request)
            if answer is not None:
                return answer
        return None
