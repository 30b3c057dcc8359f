"""Session tokens for the processes a session starts: a child calls back as its parent session.

A process started for an agent session S gets `MEITH_SOCKET` and `MEITH_SESSION_TOKEN`. A
connection presenting the token (`clientInfo.sessionToken`) is S for every permission
purpose: S's caller kind, label and session id, so S's grants and no others, its calls audited
as S's, what it starts owned by S. It never answers approval requests (it would be approving
its own calls), and the token dies with S: a child cannot outlive its session's grants, and an
unknown token is refused rather than downgraded to some other identity.

One token per session (minted on first use), kept only as a digest; it is a bearer secret
in the child's environment, as reachable to the user's other processes as the socket itself.

Every process the runtime started (and whatever those start, detached or not: the runtime is
their child subreaper) is a token bearer on the runtime's own socket too: without a valid
token it is refused there, never taken for the local user whose uid it shares. What the local
user starts gets `LOCAL_USER`'s token: one per runtime, never ended (what the user started is
the user's across connections); its bearer claims what any of the user's processes may (`cli`,
or `agent` for an MCP bridge in the user's terminal), in a session of its own, never
answering approvals.

Children get a socket of their own, beside the runtime's (`<socket>.child`), on which every
connection must present a valid token: that one can be mounted into a confined child's
namespace (the runtime's own socket stays covered there), which can then call back as its
session and never claim `cli` to leave its confinement through the runtime.
"""

from __future__ import annotations

import hashlib
import secrets

from meith_core.protocol.caller import CallerKind, ChildBinding

#: The local user's children: they claim as the user's processes do, each connection a session.
LOCAL_USER: ChildBinding = ChildBinding(CallerKind.CLI, "")


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()


class ChildTokens:
    """The live tokens of one runtime."""

    def __init__(self) -> None:
        self._bindings: dict[bytes, ChildBinding] = {}
        self._tokens: dict[str, str] = {}  # session id -> its token

    def mint(self, binding: ChildBinding) -> str:
        """The token of `binding.session_id` (the same one for every child of a session)."""
        token = self._tokens.get(binding.session_id)
        if token is None:
            token = "mst_" + secrets.token_urlsafe(32)
            self._tokens[binding.session_id] = token
            self._bindings[_digest(token)] = binding
        return token

    def resolve(self, token: str) -> ChildBinding | None:
        return self._bindings.get(_digest(token))

    def end_session(self, session_id: str) -> None:
        if not session_id:
            return  # the local user's token lives as long as the runtime
        token = self._tokens.pop(session_id, None)
        if token is not None:
            self._bindings.pop(_digest(token), None)

    def __len__(self) -> int:
        return len(self._tokens)
