"""Where a call may read and write: the workspace root, read scoping, protected paths.

Containment itself is the core's one check (`resolve_within`, `is_within`); this module
decides which root a call is contained in and which callers may read what. Everything a read
tool reads passes `check_readable`, everything a write tool writes passes `check_writable`:
one function each, so the policy has one place to change.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from meith_core import (
    CallerKind,
    ErrorCode,
    PathEscapeError,
    ToolContext,
    ToolError,
    is_secret_path,
    is_within,
    resolve_within,
    resolved_within,
    secret_paths,
    write_refusal,
)

#: Capabilities whose grant, confined to a directory, makes that directory readable too.
_COVERING_CAPABILITIES: Final = ("read-only", "writes-files", "starts-process")


@dataclass(frozen=True, slots=True)
class WorkspacePath:
    """A path resolved inside a workspace root: `relative` is plain (`a/b/c`, no `..`)."""

    root: Path
    path: Path

    @property
    def relative(self) -> str:
        return os.path.relpath(self.path, self.root)

    @property
    def display(self) -> str:
        rel = self.relative
        return "." if rel == "." else rel


def workspace_root(ctx: ToolContext, cwd: str | None) -> Path:
    """The directory a call's paths are contained in: its `cwd` argument (relative to the
    caller's directory), else the caller's directory; resolved, and an existing directory."""
    base = ctx.cwd
    text = os.path.expanduser(cwd) if cwd else base
    if "\0" in text:
        raise ToolError(ErrorCode.VALIDATION_ERROR, "cwd contains a NUL byte")
    root = Path(os.path.realpath(os.path.join(base, text)))
    if not root.is_dir():
        raise ToolError(
            ErrorCode.VALIDATION_ERROR,
            f"cwd {root} is not a directory",
            {"reason": "cwd not a directory", "cwd": str(root)},
        )
    return root


def resolve(root: Path, path: str | None) -> WorkspacePath:
    """`path` (relative to `root`, or absolute inside it) resolved and contained in `root`."""
    try:
        return WorkspacePath(root, resolve_within(root, path or "."))
    except PathEscapeError as exc:
        raise ToolError(
            ErrorCode.VALIDATION_ERROR,
            f"{path!r} is outside the workspace {root}: {exc}",
            {"reason": "path outside workspace", "path": path, "cwd": str(root)},
        ) from None


def _secrets(ctx: ToolContext) -> tuple[str, ...]:
    """The policy's secret paths for this runtime (`confinement.secretPaths` in its settings,
    every meith home), resolved: the very list confined processes are kept out of."""
    return secret_paths(ctx.settings, home=ctx.home.root)


def check_readable(ctx: ToolContext, path: Path) -> None:
    """Refuse a read the caller may not make (PERMISSION_DENIED, saying what is readable).

    The local user (`cli`) and trusted in-process callers read what the user can. `agent`
    and `plugin` callers read inside their session's workspace and the directories their
    grants cover, and never a secret path.
    """
    kind = ctx.caller.caller
    if ctx.caller.trusted or kind is CallerKind.CLI:
        return
    if is_secret_path(path, ctx.settings, home=ctx.home.root):
        raise ToolError(
            ErrorCode.PERMISSION_DENIED,
            f"{path} is a secret path: {kind.value} callers never read it (the secret paths "
            "are the confinement.secretPaths setting: meith settings get confinement)",
            {"reason": "secret path", "path": str(path)},
        )
    # The session's workspace, fixed when it opened: no frame's cwd widens it.
    workspace = ctx.workspace
    if workspace and is_within(path, workspace):
        return
    probe = str(path if path.is_dir() else path.parent)
    if any(ctx.held_grant(cap, cwd=probe) is not None for cap in _COVERING_CAPABILITIES):
        return
    raise ToolError(
        ErrorCode.PERMISSION_DENIED,
        f"{path} is outside what this {kind.value} session may read: its workspace is "
        f"{workspace or '(none)'}. Open the session for that directory (meith mcp --cwd DIR), "
        "or give it a grant there (a grant confined to DIR covers reads in DIR too: meith "
        "grants add --caller agent --capability writes-files --cwd DIR).",
        {"reason": "outside readable scope", "path": str(path), "workspace": workspace},
    )


def secret_excludes(ctx: ToolContext, root: Path) -> list[str]:
    """The secret paths beneath `root`, relative to it: what listing and searching skip for
    callers that may not read them."""
    if ctx.caller.trusted or ctx.caller.caller is CallerKind.CLI:
        return []
    base = str(root)
    return [
        os.path.relpath(secret, base)
        for secret in _secrets(ctx)
        if secret != base and resolved_within(secret, base)
    ]


def check_writable(ctx: ToolContext, target: WorkspacePath) -> None:
    """Refuse a write outside the grant's directory, or into what no agent's tool ever writes
    (the core's one rule, `write_refusal`: every meith home, meith's installation, git's
    metadata) — the very rule confined processes are kept out by."""
    path = target.path
    if ctx.grant_scope is not None and not is_within(path, ctx.grant_scope):
        raise ToolError(
            ErrorCode.PERMISSION_DENIED,
            f"{path} is outside the directory this grant is limited to ({ctx.grant_scope})",
            {"reason": "outside grant scope", "grantScope": ctx.grant_scope},
        )
    refused = write_refusal(str(path), str(target.root), home=ctx.home.root)
    if refused is not None:
        details = {"reason": refused.reason, "path": str(path)}
        if refused.reason == "git metadata":
            details["gitdir"] = refused.within
        raise ToolError(ErrorCode.PERMISSION_DENIED, refused.message, details)
