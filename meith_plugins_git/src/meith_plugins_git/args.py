"""Input models of the fifteen tools (field names are the wire names, camelCase)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


def _cwd() -> Any:
    return Field(min_length=1, max_length=4096, description="A path inside the git repository")


_PATH = "A path in the repository, relative to its root (or absolute inside it)"
MAX_PATCH_CHARS = 32 * 1024 * 1024


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StatusArgs(_Args):
    cwd: str = _cwd()


class DiffArgs(_Args):
    cwd: str = _cwd()
    includePatches: bool = Field(
        default=True, description="false: per-file status and line counts without patch bodies"
    )
    path: str | None = Field(
        default=None, min_length=1, max_length=4096, description="Only this file's patch body"
    )
    scope: Literal["all", "staged", "unstaged"] = Field(
        default="all",
        description="staged: index against HEAD; unstaged: work tree against the index; all: both",
    )


class IdentityDetectArgs(_Args):
    cwd: str | None = Field(
        default=None,
        min_length=1,
        max_length=4096,
        description="A path inside the repository whose config to read (default: the "
        "caller's directory)",
    )


class BranchArgs(_Args):
    cwd: str = _cwd()
    action: Literal["list", "create", "switch"] = Field(
        default="list", description="list the local branches, create one, or switch to one"
    )
    name: str | None = Field(
        default=None,
        min_length=1,
        max_length=255,
        description="The branch to create or switch to",
    )
    startPoint: str | None = Field(
        default=None,
        min_length=1,
        max_length=1024,
        description="With create: the commit or ref the new branch starts at (default HEAD)",
    )


class CommitArgs(_Args):
    cwd: str = _cwd()
    message: str = Field(min_length=1, max_length=1024 * 1024, description="The commit message")


class PathsOrPatchArgs(_Args):
    cwd: str = _cwd()
    paths: list[str] | None = Field(
        default=None,
        min_length=1,
        max_length=100_000,
        description="Paths in the repository, each relative to its root (or absolute inside it)",
    )
    patch: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_PATCH_CHARS,
        description="A unified diff (as git_diff returns) to apply instead of whole paths",
    )


class StageArgs(PathsOrPatchArgs):
    pass


class UnstageArgs(PathsOrPatchArgs):
    pass


class RestoreArgs(PathsOrPatchArgs):
    target: Literal["worktree", "staged", "both"] = Field(
        default="worktree",
        description="What to discard: work-tree changes, staged changes (unstage), or both",
    )
    confirm: Literal[True] = Field(description="Must be true: this discards changes")


class LogArgs(_Args):
    cwd: str = _cwd()
    limit: int = Field(default=30, ge=1, le=200, description="At most this many commits")
    path: str | None = Field(default=None, min_length=1, max_length=4096, description=_PATH)


class BlameArgs(_Args):
    cwd: str = _cwd()
    path: str = Field(min_length=1, max_length=4096, description=_PATH)
    startLine: int | None = Field(default=None, ge=1, description="First line (1-based)")
    endLine: int | None = Field(default=None, ge=1, description="Last line (inclusive)")


class WorktreeArgs(_Args):
    cwd: str = _cwd()
    action: Literal["list", "create", "remove"] = Field(
        default="list", description="list the linked worktrees, create one, or remove one"
    )
    path: str | None = Field(
        default=None,
        min_length=1,
        max_length=4096,
        description="The worktree's directory (relative to the repository root), for create "
        "and remove; it must lie in the directory that holds the repository",
    )
    branch: str | None = Field(
        default=None,
        min_length=1,
        max_length=255,
        description="With create: a new branch to check out in the worktree",
    )
    startPoint: str | None = Field(
        default=None,
        min_length=1,
        max_length=1024,
        description="With create: the commit or ref to check out (default HEAD)",
    )
    force: bool = Field(
        default=False, description="With remove: remove even with uncommitted changes"
    )
    confirm: bool = Field(default=False, description="Must be true to remove a worktree")


class CheckpointCreateArgs(_Args):
    cwd: str = _cwd()
    label: str | None = Field(
        default=None, max_length=1000, description="A name for the checkpoint (its commit message)"
    )
    source: str | None = Field(
        default=None, max_length=200, description="Free text kept with it: what made it"
    )
    sessionId: str | None = Field(
        default=None, max_length=200, description="Free text kept with it: the session it is for"
    )
    toolCallId: str | None = Field(
        default=None,
        max_length=200,
        description="Free text kept with it: the tool call it precedes",
    )


class CheckpointListArgs(_Args):
    cwd: str = _cwd()


class CheckpointRestoreArgs(_Args):
    cwd: str = _cwd()
    id: str = Field(
        min_length=1,
        max_length=100,
        pattern=r"^[0-9a-z]{1,16}-[0-9a-z]{8}$",
        description="The checkpoint's id (from git_checkpoint_create or git_checkpoint_list)",
    )
    confirm: Literal[True] = Field(description="Must be true: this discards changes")
    force: bool = Field(default=False, description="Restore even though HEAD has moved since")


class CheckpointCompareArgs(_Args):
    cwd: str = _cwd()
    left: str = Field(min_length=1, max_length=1024, description="A checkpoint id or a ref")
    right: str = Field(
        default="HEAD",
        min_length=1,
        max_length=1024,
        description="The checkpoint id or ref to compare against",
    )
    includePatch: bool = Field(default=False, description="Also return the patch")
