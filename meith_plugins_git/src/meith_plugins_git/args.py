"""Input models of the fifteen tools (field names as in the original)."""

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
    scope: Literal["all", "staged", "unstaged"] = "all"


class IdentityDetectArgs(_Args):
    cwd: str | None = Field(default=None, min_length=1, max_length=4096)


class BranchArgs(_Args):
    cwd: str = _cwd()
    action: Literal["list", "create", "switch"] = "list"
    name: str | None = Field(default=None, min_length=1, max_length=255)
    startPoint: str | None = Field(default=None, min_length=1, max_length=1024)


class CommitArgs(_Args):
    cwd: str = _cwd()
    message: str = Field(min_length=1, max_length=1024 * 1024)


class PathsOrPatchArgs(_Args):
    cwd: str = _cwd()
    paths: list[str] | None = Field(
        default=None,
        min_length=1,
        max_length=100_000,
        description="Paths in the repository, each relative to its root (or absolute inside it)",
    )
    patch: str | None = Field(default=None, min_length=1, max_length=MAX_PATCH_CHARS)


class StageArgs(PathsOrPatchArgs):
    pass


class UnstageArgs(PathsOrPatchArgs):
    pass


class RestoreArgs(PathsOrPatchArgs):
    target: Literal["worktree", "staged", "both"] = "worktree"
    confirm: Literal[True] = Field(description="Must be true: this discards changes")


class LogArgs(_Args):
    cwd: str = _cwd()
    limit: int = Field(default=30, ge=1, le=200)
    path: str | None = Field(default=None, min_length=1, max_length=4096, description=_PATH)


class BlameArgs(_Args):
    cwd: str = _cwd()
    path: str = Field(min_length=1, max_length=4096, description=_PATH)
    startLine: int | None = Field(default=None, ge=1)
    endLine: int | None = Field(default=None, ge=1)


class WorktreeArgs(_Args):
    cwd: str = _cwd()
    action: Literal["list", "create", "remove"] = "list"
    path: str | None = Field(default=None, min_length=1, max_length=4096)
    branch: str | None = Field(default=None, min_length=1, max_length=255)
    startPoint: str | None = Field(default=None, min_length=1, max_length=1024)
    force: bool = False
    confirm: bool = False


class CheckpointCreateArgs(_Args):
    cwd: str = _cwd()
    label: str | None = Field(default=None, max_length=1000)
    source: str | None = Field(default=None, max_length=200)
    sessionId: str | None = Field(default=None, max_length=200)
    toolCallId: str | None = Field(default=None, max_length=200)


class CheckpointListArgs(_Args):
    cwd: str = _cwd()


class CheckpointRestoreArgs(_Args):
    cwd: str = _cwd()
    id: str = Field(min_length=1, max_length=100, pattern=r"^[0-9a-z]{1,16}-[0-9a-z]{8}$")
    confirm: Literal[True] = Field(description="Must be true: this discards changes")
    force: bool = Field(default=False, description="Restore even though HEAD has moved since")


class CheckpointCompareArgs(_Args):
    cwd: str = _cwd()
    left: str = Field(min_length=1, max_length=1024, description="A checkpoint id or a ref")
    right: str = Field(default="HEAD", min_length=1, max_length=1024)
    includePatch: bool = False
