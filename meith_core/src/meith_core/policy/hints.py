"""What a denial tells the user to run: the narrowest change that allows the call, aimed at the
home of the runtime that refused it."""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable
from pathlib import Path

from meith_core.base.home import default_home
from meith_core.protocol.capabilities import Capability
from meith_core.protocol.errors import ErrorCode, ToolError

#: `details.gate` of a denial that no grant can lift: the object belongs to someone else.
OWNERSHIP_GATE = "ownership"


def home_prefix(home: Path) -> str:
    """`MEITH_HOME=... ` when the runtime's home is not the one a plain `meith` would use (an
    in-process runtime on a home of its own), so the hint edits the right files."""
    try:
        same = os.path.realpath(home) == os.path.realpath(default_home())
    except OSError:
        same = False
    return "" if same else f"MEITH_HOME={shlex.quote(str(home))} "


def approve_plugin_hint(home: Path, plugin_id: str) -> str:
    return f"{home_prefix(home)}meith plugins approve {plugin_id}"


def grant_hint(
    home: Path,
    tool: str,
    privileged: Iterable[Capability],
    cwd: str | None,
    *,
    caller: str = "cli",
    agent: str | None = None,
) -> str:
    """The narrowest standing grant that would allow this call: its caller kind (and, for an
    agent, its name), its tool, its directory."""
    flags = " ".join(f"--capability {c.value}" for c in privileged)
    who = f"--caller {caller}" + (f" --agent {shlex.quote(agent)}" if agent else "")
    where = f" --cwd {shlex.quote(cwd)}" if cwd else ""
    return f"{home_prefix(home)}meith grants add {who} {flags} --tool {tool}{where}"


def ownership_error(what: str, owner: str, instead: str, **details: object) -> ToolError:
    """PERMISSION_DENIED for acting on, or reading, what belongs to someone else: it says who
    owns it and what the caller can do instead. No grant can lift it, so it names none (the
    MCP bridge adds no `meith grants add` to a denial whose gate is "ownership")."""
    return ToolError(
        ErrorCode.PERMISSION_DENIED,
        f"{what} belongs to {owner}; no grant changes that. Instead: {instead}",
        {"reason": "not the owner", "gate": OWNERSHIP_GATE, "owner": owner, **details},
    )
