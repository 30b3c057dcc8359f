"""What a call acts on, and the one request the permission service decides.

A tool declares what it acts on (`ActsOn`, the `acts_on=` of `@tool`):

- ``"path:ARG"`` — the path in its argument ``ARG`` (``"path:cwd"`` for most tools): resolved
  against the caller's directory, symlinks followed. The caller's self-reported directory
  (``clientInfo.cwd``) is only the default of a tool's own ``cwd`` argument.
- ``ActsOn.object(resolver, what=...)`` — an object that already exists (a dev server, a
  terminal, a tab): ``resolver(args)`` returns that object's own directory, or None when the
  object is unknown or has none.
- ``"global"`` (or ``"global:settings"``, ``"global:plugins"``, ``"global:runtime"``) — state
  shared by every session: no directory-confined grant ever covers it.

The permission service derives the acting `CallTarget` from the declaration
(`policy.service.acting_target`); a directory-confined grant covers a call only when the target
is a directory inside it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from meith_core.base.cancel import CancelToken
from meith_core.protocol.call_approval import ApprovalView, Notify
from meith_core.protocol.caller import CallerInfo
from meith_core.protocol.capabilities import Capability

TargetKind = Literal["path", "object", "global", "undeclared"]
#: `resolver(args) -> directory | None` of an object tool.
ObjectResolver = Callable[[Any], "str | None"]

_GLOBAL_WHATS: Final = frozenset({"settings", "plugins", "runtime", "state"})


@dataclass(frozen=True, slots=True)
class ActsOn:
    """A tool's declaration of what it acts on (see the module docstring)."""

    kind: Literal["path", "object", "global"]
    #: `path`: the argument holding the path. `global`: what it is (settings, plugins, ...).
    #: `object`: what the object is ("dev server", "terminal", "tab").
    name: str
    resolver: ObjectResolver | None = field(default=None, compare=False, repr=False)

    @classmethod
    def path(cls, argument: str = "cwd") -> ActsOn:
        return cls("path", argument)

    @classmethod
    def object(cls, resolver: ObjectResolver, what: str = "object") -> ActsOn:
        if not callable(resolver):
            raise ValueError("ActsOn.object needs a resolver: args -> directory or None")
        return cls("object", what, resolver)

    @classmethod
    def global_state(cls, what: str = "state") -> ActsOn:
        return cls("global", what)

    @classmethod
    def parse(cls, value: ActsOn | str) -> ActsOn:
        """`"path:ARG"`, `"global"`, `"global:WHAT"`, or an `ActsOn`."""
        if isinstance(value, ActsOn):
            return value
        if not isinstance(value, str):
            raise ValueError(
                f"acts_on must be 'path:ARG', 'global[:WHAT]' or ActsOn.object(...), not {value!r}"
            )
        kind, _, name = value.partition(":")
        if kind == "path" and name.isidentifier():
            return cls.path(name)
        if kind == "global" and (not name or name in _GLOBAL_WHATS):
            return cls.global_state(name or "state")
        if kind == "object":
            raise ValueError("an object tool declares acts_on=ActsOn.object(resolver, what=...)")
        raise ValueError(
            f"acts_on must be 'path:ARG', 'global' or 'global:WHAT' (WHAT one of "
            f"{', '.join(sorted(_GLOBAL_WHATS))}), or ActsOn.object(...), not {value!r}"
        )

    def describe(self) -> str:
        if self.kind == "path":
            return f"path:{self.name}"
        if self.kind == "global":
            return "global" if self.name == "state" else f"global:{self.name}"
        return f"object:{self.name}"


@dataclass(frozen=True, slots=True)
class CallTarget:
    """What one call acts on, as the permission service derived it."""

    kind: TargetKind
    #: The directory a confined grant is matched against; None when there is none (global
    #: state, an unknown object, an undeclared tool without a `cwd` argument).
    directory: str | None
    #: In words, for reasons and hints: "global state (settings)", "dev server ds_1's directory".
    what: str

    @property
    def confinable(self) -> bool:
        """Whether a directory-confined grant can cover it at all."""
        return self.directory is not None


@dataclass(frozen=True, slots=True)
class AuthRequest:
    """One call as the permission service sees it, built once from the call record
    (`CallRecord.auth_request`)."""

    request_id: str
    caller: CallerInfo
    tool: str
    plugin_id: str
    capabilities: tuple[Capability, ...]
    #: The privileged ones among `capabilities` (empty: no gate applies).
    privileged: tuple[Capability, ...]
    target: CallTarget
    #: The caller's directory (clientInfo.cwd, else the runtime's): shown to approvers, never
    #: matched against a grant.
    caller_cwd: str
    #: What an approver would be shown of the call (rendered only when one is asked).
    approval_view: Callable[[], ApprovalView] = field(compare=False, repr=False)
    cancel: CancelToken | None = field(default=None, compare=False, repr=False)
    notify: Notify | None = field(default=None, compare=False, repr=False)
