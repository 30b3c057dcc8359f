"""Input models of the fifteen tools (field names are the wire names, camelCase)."""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import Field, model_validator

from meith_core import ToolArgs


def _cwd() -> Any:
    return Field(min_length=1, max_length=4096, description="A path inside the git repository")


_PATH = "A path in the repository, relative to its root (or absolute inside it)"
MAX_PATCH_CHARS = 32 * 1024 * 1024


class StatusArgs(ToolArgs):
    cwd: str = _cwd()


class DiffArgs(ToolArgs):
    cwd: str = _cwd()
    includePatches: bool = Field(
        default=True, description="false: per-file status and line counts without patch bodies"
    )
    path: str | None = Field(
        default=None, min_length=1, max_length=4096, description="Only this file's patch body"
    )
    scope: Literal["all", "staged", "unstaged"] = Field(
        default="all",
        description="all (default), staged (index against HEAD) or unstaged (files against the index)",
    )
    includeUntracked: bool = Field(
        default=True,
        description="false: leave out untracked files (scope all and unstaged include them)",
    )


class IdentityDetectArgs(ToolArgs):
    cwd: str | None = Field(
        default=None, min_length=1, max_length=4096, description="A path inside the git repository"
    )


class BranchArgs(ToolArgs):
    cwd: str = _cwd()
    action: Literal["list", "create", "switch"] = Field(
        default="list", description="list (default), create or switch"
    )
    name: str | None = Field(
        default=None, min_length=1, max_length=255, description="The branch to create or switch to"
    )
    startPoint: str | None = Field(
        default=None,
        min_length=1,
        max_length=1024,
        description="Commit or ref a created branch starts at (default HEAD)",
    )


class CommitArgs(ToolArgs):
    cwd: str = _cwd()
    message: str = Field(min_length=1, max_length=1024 * 1024, description="The commit message")


class PathsOrPatchArgs(ToolArgs):
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
        description="A unified diff to apply instead of whole paths",
    )


class StageArgs(PathsOrPatchArgs):
    pass


class UnstageArgs(PathsOrPatchArgs):
    pass


class RestoreArgs(PathsOrPatchArgs):
    target: Literal["worktree", "staged", "both"] = Field(
        default="worktree", description="What to restore: worktree (default), staged or both"
    )
    confirm: Literal[True] = Field(description="Must be true: this discards changes")


class LogArgs(ToolArgs):
    cwd: str = _cwd()
    limit: int = Field(default=30, ge=1, le=200, description="At most this many commits")
    path: str | None = Field(default=None, min_length=1, max_length=4096, description=_PATH)


class BlameArgs(ToolArgs):
    cwd: str = _cwd()
    path: str = Field(min_length=1, max_length=4096, description=_PATH)
    startLine: int | None = Field(default=None, ge=1, description="First line to blame (1-based)")
    endLine: int | None = Field(default=None, ge=1, description="Last line to blame (1-based)")


class WorktreeArgs(ToolArgs):
    cwd: str = _cwd()
    action: Literal["list", "create", "remove"] = Field(
        default="list", description="list (default), create or remove"
    )
    path: str | None = Field(
        default=None, min_length=1, max_length=4096, description="The worktree's directory"
    )
    branch: str | None = Field(
        default=None,
        min_length=1,
        max_length=255,
        description="A new branch to create for the worktree (create)",
    )
    startPoint: str | None = Field(
        default=None,
        min_length=1,
        max_length=1024,
        description="Commit or ref the worktree starts at (create)",
    )
    force: bool = Field(default=False, description="Remove even with local changes (remove)")
    confirm: bool = Field(default=False, description="Must be true to remove a worktree")


class CheckpointCreateArgs(ToolArgs):
    cwd: str = _cwd()
    label: str | None = Field(
        default=None, max_length=1000, description="What the checkpoint is for (its message)"
    )
    message: str | None = Field(
        default=None,
        max_length=1000,
        description="The same as label, by the name git_commit uses (give one of the two)",
    )
    source: str | None = Field(
        default=None, max_length=200, description="Who made it (recorded with the checkpoint)"
    )
    sessionId: str | None = Field(
        default=None, max_length=200, description="A session id to record with the checkpoint"
    )
    toolCallId: str | None = Field(
        default=None, max_length=200, description="A tool call id to record with the checkpoint"
    )

    @model_validator(mode="after")
    def _message_is_the_label(self) -> Self:
        if self.message is not None:
            if self.label is not None and self.label != self.message:
                raise ValueError("give label or message (the same thing), not two different ones")
            self.label = self.message
        return self


class CheckpointListArgs(ToolArgs):
    cwd: str = _cwd()


class CheckpointRestoreArgs(ToolArgs):
    cwd: str = _cwd()
    id: str = Field(
        min_length=1,
        max_length=100,
        pattern=r"^[0-9a-z]{1,16}-[0-9a-z]{8}$",
        description="The checkpoint id (from git_checkpoint_list)",
    )
    confirm: Literal[True] = Field(description="Must be true: this discards changes")
    force: bool = Field(default=False, description="Restore even though HEAD has moved since")


class CheckpointCompareArgs(ToolArgs):
    cwd: str = _cwd()
    left: str = Field(min_length=1, max_length=1024, description="A checkpoint id or a ref")
    right: str = Field(
        default="HEAD",
        min_length=1,
        max_length=1024,
        description="A checkpoint id or a ref (default HEAD)",
    )
    includePatch: bool = Field(default=False, description="Include the patch, not only the files")
