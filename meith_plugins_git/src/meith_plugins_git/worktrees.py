"""`git_worktree`: list, create and remove linked worktrees.

Where a worktree may go: inside the directory that holds the repository's main work tree
(`../feature-x` next to the checkout), unless the caller is trusted; and always inside the
grant's `cwd_prefix` when the grant has one.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from meith_core import ErrorCode, PathEscapeError, ToolContext, ToolError, is_within, resolve_within
from meith_plugins_git.hooks import profile_for
from meith_plugins_git.locks import RepoLocks
from meith_plugins_git.repo import Repo
from meith_plugins_git.runner import READ_ONLY
from meith_plugins_git.validate import check_branch_name, check_revision

Action = Literal["list", "create", "remove"]


def parse_worktree_list(data: bytes, *, nul: bool) -> list[dict[str, Any]]:
    text = data.decode("utf-8", "replace")
    lines = text.split("\0") if nul else text.split("\n")
    out: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for line in lines:
        if not line:
            if current is not None:
                out.append(current)
                current = None
            continue
        key, _, value = line.partition(" ")
        if key == "worktree":
            if current is not None:
                out.append(current)
            current = {"path": value}
        elif current is None:
            continue
        elif key == "HEAD":
            current["head"] = value
        elif key == "branch":
            current["branch"] = value.removeprefix("refs/heads/")
        elif key in ("bare", "detached", "locked", "prunable"):
            current[key] = True
    if current is not None:
        out.append(current)
    return out


async def list_worktrees(repo: Repo) -> list[dict[str, Any]]:
    nul = repo.git.at_least(2, 36)
    done = await repo.run(
        ["worktree", "list"], ["--porcelain", *(["-z"] if nul else [])], profile=READ_ONLY
    )
    return parse_worktree_list(done.stdout, nul=nul)


def _real(path: str) -> str:
    return os.path.realpath(path)


def main_worktree_parent(repo: Repo) -> str:
    common = repo.common_dir
    main = os.path.dirname(common) if os.path.basename(common) == ".git" else repo.root
    return os.path.dirname(main)


def confine(ctx: ToolContext, repo: Repo, value: str) -> str:
    """The absolute path a worktree `path` names, refused where a worktree may not go."""
    if "\0" in value:
        raise ToolError(ErrorCode.VALIDATION_ERROR, "path must not contain NUL bytes")
    target = os.path.realpath(os.path.join(repo.root, os.path.expanduser(value)))
    if not ctx.caller.trusted:
        parent = main_worktree_parent(repo)
        try:
            resolve_within(parent, target)
        except PathEscapeError:
            raise ToolError(
                ErrorCode.PERMISSION_DENIED,
                f"Worktree path {target} is outside {parent}, the directory that holds the "
                "repository; only trusted callers may put worktrees elsewhere.",
                {"path": target, "allowedParent": parent},
            ) from None
    scope = ctx.grant_scope
    if scope is not None and not is_within(target, scope):
        raise ToolError(
            ErrorCode.PERMISSION_DENIED,
            f"Worktree path {target} is outside the grant's directory {scope}.",
            {"path": target, "grantScope": scope},
        )
    if is_within(target, repo.git_dir) or is_within(target, repo.common_dir):
        raise ToolError(ErrorCode.VALIDATION_ERROR, f"Worktree path {target} is inside a git dir")
    return target


async def worktree(
    ctx: ToolContext,
    repo: Repo,
    locks: RepoLocks,
    *,
    action: Action,
    path: str | None,
    branch: str | None,
    start_point: str | None,
    force: bool,
    confirm: bool,
    run_hooks: bool,
) -> list[dict[str, Any]]:
    if action == "list":
        return await list_worktrees(repo)
    if not path:
        raise ToolError(ErrorCode.VALIDATION_ERROR, "Worktree path is required.")
    profile = profile_for(run_hooks)
    if action == "create":
        target = confine(ctx, repo, path)
        options: list[str] = []
        if branch:
            options += ["-b", await check_branch_name(repo, branch)]
        operands = [target]
        if start_point:
            operands.append(check_revision(start_point, "startPoint"))
        async with locks.hold(repo):
            await repo.run(["worktree", "add"], options, operands=operands, profile=profile)
            return await list_worktrees(repo)
    if not confirm:
        raise ToolError(ErrorCode.VALIDATION_ERROR, "confirm must be true to remove a worktree.")
    target = confine(ctx, repo, path)
    async with locks.hold(repo):
        known = await list_worktrees(repo)
        linked = [w for w in known[1:] if _real(w["path"]) == target]
        if not linked:
            raise ToolError(
                ErrorCode.TOOL_FAILED,
                f"{target} is not a linked worktree of this repository",
                {"path": target, "worktrees": [w["path"] for w in known]},
            )
        await repo.run(
            ["worktree", "remove"], ["--force"] if force else [], operands=[target], profile=profile
        )
        return await list_worktrees(repo)
