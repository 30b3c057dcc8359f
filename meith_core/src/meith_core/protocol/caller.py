"""Who is calling: built by the host, never taken from a peer."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum


class CallerKind(StrEnum):
    CLI = "cli"
    RENDERER = "renderer"
    AGENT = "agent"
    PLUGIN = "plugin"
    INTERNAL = "internal"


#: In-process callers that are trusted (still audited).
TRUSTED_CALLERS: frozenset[CallerKind] = frozenset({CallerKind.RENDERER, CallerKind.INTERNAL})

#: What a socket peer may claim; any other claim is downgraded to `cli` and audited.
#: `agent` gets none of what `cli` grants give: it has grants of its own.
SOCKET_CALLERS: frozenset[CallerKind] = frozenset(
    {CallerKind.CLI, CallerKind.AGENT, CallerKind.PLUGIN}
)

#: Longest agent label kept (the rest is cut off).
MAX_LABEL_CHARS = 128


def sanitize_label(label: str | None) -> str | None:
    """A self-reported name fit for logs and the audit trail: printable, bounded, or None.

    A label is a policy hint (which agent says it is calling), never a secret or a proof."""
    if not label:
        return None
    cleaned = "".join(ch for ch in label if ch.isprintable()).strip()[:MAX_LABEL_CHARS]
    return cleaned or None


PLUGIN_SESSION_PREFIX = "plugin:"


@dataclass(frozen=True, slots=True)
class CallerInfo:
    """The trusted identity and scope of one call.

    `claimed_caller` records what a socket peer asked to be when the host downgraded it.
    `plugin_id` is set only by the host, for plugins calling through `ToolContext.call_tool`.
    `label` is an agent's self-reported name (sanitised; a policy hint, never a secret).
    `workspace` is the directory the session was opened for: fixed by the host when the session
    opens (a connection's first frame, `Runtime.open_session`), inherited by the processes it
    starts and by a resume, and never changed by a later frame. Read scoping stands on it;
    `cwd` is a per-call hint, a default for a tool's own `cwd` argument and nothing more.
    """

    caller: CallerKind
    session_id: str | None = None
    cwd: str | None = None
    space_id: str | None = None
    tab_id: str | None = None
    claimed_caller: str | None = None
    plugin_id: str | None = None
    label: str | None = None
    workspace: str | None = None

    def __post_init__(self) -> None:
        # `CallerInfo("cli")` must mean the same as `CallerInfo(CallerKind.CLI)`: the gates
        # compare kinds by identity. An unknown kind is an error here, not a silent deny later.
        object.__setattr__(self, "caller", CallerKind(self.caller))

    @property
    def trusted(self) -> bool:
        return self.caller in TRUSTED_CALLERS

    def with_cwd(self, cwd: str) -> CallerInfo:
        return replace(self, cwd=cwd)

    @classmethod
    def for_plugin(
        cls, plugin_id: str, *, cwd: str | None = None, workspace: str | None = None
    ) -> CallerInfo:
        """The identity of a plugin calling another tool; only the host builds this. Its
        `workspace` is that of the call it acts within: a plugin reads no more than it."""
        return cls(
            caller=CallerKind.PLUGIN,
            session_id=PLUGIN_SESSION_PREFIX + plugin_id,
            cwd=cwd,
            plugin_id=plugin_id,
            workspace=workspace,
        )


@dataclass(frozen=True, slots=True)
class ChildBinding:
    """Who a child token's bearer calls as (see `meith_core.policy.child_tokens`)."""

    caller: CallerKind
    #: "": a session of its own per connection (the local user's children).
    session_id: str
    label: str | None = None
    #: The bound session's workspace: a child reads within it, whatever it claims.
    workspace: str | None = None
