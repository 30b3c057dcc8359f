"""Where a call may read and write: the workspace root, read scoping, protected paths.

Containment itself is the core's one check (`resolve_within`, `is_within`); this module
decides which root a call is contained in and which callers may read what. Everything a read
tool reads passes `check_readable`, everything a write tool writes passes `check_writable`:
one function each, so the policy has one place to change.
"""

from __future__ import annotations

import fnmatch
import os
import shlex
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
    matches_secret_pattern,
    resolve_within,
    resolved_within,
    secret_paths,
    secret_patterns,
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
    """`path` (relative to `root`, or absolute inside it) resolved and contained in `root`:
    links inside the workspace are taken to their targets here, once; the tools then open the
    result through descriptors (`opened`), following no link."""
    try:
        return WorkspacePath(root, resolve_within(root, path or "."))
    except OSError as exc:
        # A component renamed or swapped while it was resolved (readlink of what stopped
        # being a link): a race, said as one, not a crash.
        raise ToolError(
            ErrorCode.TOOL_FAILED,
            f"{path!r} changed while it was being resolved ({exc.strerror or exc}); try again",
            {"reason": "path changed", "path": path},
        ) from None
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


def _local(ctx: ToolContext) -> bool:
    """The local user and trusted in-process callers: they read what the user can."""
    return ctx.caller.trusted or ctx.caller.caller is CallerKind.CLI


def check_secret(ctx: ToolContext, path: Path) -> None:
    """Refuse any caller but the local user a secret path (reading it, or a write or patch
    whose diff, dry run or "not found" answer would show what is in it)."""
    if _local(ctx):
        return
    if is_secret_path(path, ctx.settings, home=ctx.home.root):
        kind = ctx.caller.caller
        raise ToolError(
            ErrorCode.PERMISSION_DENIED,
            f"{path} is a secret path: {kind.value} callers never read or write it (the "
            "secret paths and file names are the confinement.secretPaths and "
            "confinement.secretPatterns settings: meith settings get confinement)",
            {"reason": "secret path", "path": str(path)},
        )


def check_readable(ctx: ToolContext, path: Path) -> None:
    """Refuse a read the caller may not make (PERMISSION_DENIED, saying what is readable).

    The local user (`cli`) and trusted in-process callers read what the user can. `agent`
    and `plugin` callers read inside their session's workspace and the directories their
    grants cover, and never a secret path.
    """
    kind = ctx.caller.caller
    if _local(ctx):
        return
    check_secret(ctx, path)
    # The session's workspace, fixed when it opened: no frame's cwd widens it.
    workspace = ctx.workspace
    if workspace and is_within(path, workspace):
        return
    probe = str(path if path.is_dir() else path.parent)
    if any(ctx.held_grant(cap, cwd=probe) is not None for cap in _COVERING_CAPABILITIES):
        return
    # A read needs a read widening, not a grant to write: the narrowest that allows it.
    widen = (
        f", or let it read there: meith grants add --caller agent --read {shlex.quote(probe)}"
        if kind is CallerKind.AGENT
        else ""
    )
    raise ToolError(
        ErrorCode.PERMISSION_DENIED,
        f"{path} is outside what this {kind.value} session may read: its workspace is "
        f"{workspace or '(none)'}. Open the session for that directory (meith mcp --cwd "
        f"DIR){widen}.",
        {"reason": "outside readable scope", "path": str(path), "workspace": workspace},
    )


def secret_excludes(ctx: ToolContext, root: Path) -> tuple[list[str], SecretNames]:
    """What listing and searching from `root` skip for callers that may not read it: the
    secret paths beneath `root` (relative to it) and the secret file names."""
    if _local(ctx):
        return [], SecretNames()
    base = str(root)
    paths = [
        os.path.relpath(secret, base)
        for secret in _secrets(ctx)
        if secret != base and resolved_within(secret, base)
    ]
    return paths, SecretNames.of(list(secret_patterns(ctx.settings, home=ctx.home.root)))


@dataclass(frozen=True, slots=True)
class SecretNames:
    """The secret file-name patterns, split for a walk: those rg can skip itself (`for_rg`),
    and whether the rest must be checked name by name (a pattern a kept name, `!x`, would
    re-include: rg's positive globs would limit the walk to them)."""

    patterns: tuple[str, ...] = ()
    for_rg: tuple[str, ...] = ()
    check: bool = False

    @classmethod
    def of(cls, patterns: list[str]) -> SecretNames:
        kept = [p[1:] for p in patterns if p.startswith("!")]
        named = [p for p in patterns if not p.startswith("!")]
        plain = tuple(p for p in named if not any(fnmatch.fnmatchcase(k, p) for k in kept))
        return cls(tuple(patterns), plain, len(plain) < len(named))

    def hides(self, relative: str) -> bool:
        """Whether a listed name is secret by a pattern rg was not given."""
        return self.check and matches_secret_pattern(relative.rsplit("/", 1)[-1], self.patterns)


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
    check_secret(ctx, path)
    refused = write_refusal(str(path), str(target.root), home=ctx.home.root)
    if refused is not None:
        details = {"reason": refused.reason, "path": str(path)}
        if refused.reason == "git metadata":
            details["gitdir"] = refused.within
        raise ToolError(ErrorCode.PERMISSION_DENIED, refused.message, details)
