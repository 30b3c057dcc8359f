"""The fifteen tools: argument handling and repository lookup around the modules that work."""

from __future__ import annotations

from typing import Any

from meith_core import ErrorCode, ToolContext, ToolDefinition, ToolError, tool
from meith_plugins_git import branches, changes, checkpoints, diff, history, render, worktrees
from meith_plugins_git.args import (
    BlameArgs,
    BranchArgs,
    CheckpointCompareArgs,
    CheckpointCreateArgs,
    CheckpointListArgs,
    CheckpointRestoreArgs,
    CommitArgs,
    DiffArgs,
    IdentityDetectArgs,
    LogArgs,
    RestoreArgs,
    StageArgs,
    StatusArgs,
    UnstageArgs,
    WorktreeArgs,
)
from meith_plugins_git.discovery import discover, require_repo
from meith_plugins_git.hooks import CHECKOUT_HOOKS, COMMIT_HOOKS, skipped_hooks, with_notice
from meith_plugins_git.identity import detect_identities, git_settings
from meith_plugins_git.locks import RepoLocks
from meith_plugins_git.runner import Git
from meith_plugins_git.status import read_status
from meith_plugins_git.validate import repo_path

READ = ["read-only"]
WRITES = ["writes-files"]
DESTRUCTIVE = ["destructive"]
#: Every git tool acts on the repository its `cwd` argument names (the caller's directory is
#: only that argument's default): a grant confined to a directory covers it inside that
#: directory only.
ON_CWD = "path:cwd"


class GitTools:
    """Per-runtime state (the resolved git, the per-repository locks) and the tool functions."""

    def __init__(self, git: Git, locks: RepoLocks | None = None) -> None:
        self.git = git
        self.locks = locks or RepoLocks()

    def definitions(self) -> list[ToolDefinition]:
        # Every privileged tool finds its repository through require_repo, which refuses one
        # outside a grant confined to a directory.
        return [
            tool(
                self.git_status,
                effect="reads",
                capabilities=READ,
                idempotent=True,
                acts_on=ON_CWD,
                render=render.status_text,
            ),
            tool(
                self.git_diff,
                effect="reads",
                capabilities=READ,
                idempotent=True,
                acts_on=ON_CWD,
                render=render.diff_text,
            ),
            tool(
                self.git_log,
                effect="reads",
                capabilities=READ,
                idempotent=True,
                acts_on=ON_CWD,
                render=render.log_text,
            ),
            tool(
                self.git_blame, effect="reads", capabilities=READ, idempotent=True, acts_on=ON_CWD
            ),
            tool(
                self.git_identity_detect,
                effect="reads",
                capabilities=READ,
                idempotent=True,
                acts_on=ON_CWD,
            ),
            tool(
                self.git_stage,
                effect="updates",
                capabilities=WRITES,
                grant_scope="enforced",
                acts_on=ON_CWD,
            ),
            tool(
                self.git_unstage,
                effect="updates",
                capabilities=WRITES,
                grant_scope="enforced",
                acts_on=ON_CWD,
            ),
            tool(
                self.git_commit,
                effect="appends",
                capabilities=WRITES,
                grant_scope="enforced",
                acts_on=ON_CWD,
            ),
            tool(
                self.git_branch,
                effect="creates",
                capabilities=WRITES,
                grant_scope="enforced",
                acts_on=ON_CWD,
            ),
            tool(
                self.git_worktree,
                effect="removes",
                capabilities=WRITES,
                grant_scope="enforced",
                acts_on=ON_CWD,
            ),
            tool(
                self.git_restore,
                effect="removes",
                capabilities=DESTRUCTIVE,
                grant_scope="enforced",
                acts_on=ON_CWD,
            ),
            tool(
                self.git_checkpoint_create,
                effect="creates",
                capabilities=WRITES,
                grant_scope="enforced",
                acts_on=ON_CWD,
            ),
            tool(
                self.git_checkpoint_list,
                effect="reads",
                capabilities=READ,
                idempotent=True,
                acts_on=ON_CWD,
            ),
            tool(
                self.git_checkpoint_compare,
                effect="reads",
                capabilities=READ,
                idempotent=True,
                acts_on=ON_CWD,
            ),
            tool(
                self.git_checkpoint_restore,
                effect="removes",
                capabilities=DESTRUCTIVE,
                grant_scope="enforced",
                acts_on=ON_CWD,
            ),
        ]

    # -- read-only ----------------------------------------------------------------------

    async def git_status(self, ctx: ToolContext, args: StatusArgs) -> dict[str, Any]:
        """Branch (short sha when detached), upstream, ahead/behind and changed files of the
        repository around cwd, with staged, unstaged and untracked lists. Not a repository:
        an error that says how to point at one."""
        return await read_status(await require_repo(self.git, ctx, args.cwd))

    async def git_diff(self, ctx: ToolContext, args: DiffArgs) -> dict[str, Any]:
        """Changes against HEAD (or the empty tree before the first commit): scope all, staged
        or unstaged; per-file status, line counts, binary flag and (includePatches) patch
        bodies, optionally for one path only. Untracked files (scope all and unstaged, unless
        includeUntracked is false) are counted exactly, their preview is capped."""
        repo = await discover(self.git, ctx, args.cwd)
        if repo is None:
            return diff.empty_diff(args.scope)
        path = repo_path(repo, args.path) if args.path else None
        result = await diff.read_diff(
            repo,
            args.scope,
            args.includePatches,
            path,
            lambda: ctx.cancelled,
            include_untracked=args.includeUntracked,
        )
        if path is not None:
            # Said in the result: the text then leads with it instead of answering the whole
            # summary as if the path had been found.
            result["path"] = path
            result["pathMatches"] = sum(_names(f, path) for f in result["files"])
        return result

    async def git_log(self, ctx: ToolContext, args: LogArgs) -> list[dict[str, Any]]:
        """Recent commits on HEAD (optionally touching one path): hash, author, date, subject
        and refs."""
        repo = await require_repo(self.git, ctx, args.cwd)
        path = repo_path(repo, args.path) if args.path else None
        return await history.read_log(repo, args.limit, path)

    async def git_blame(self, ctx: ToolContext, args: BlameArgs) -> dict[str, Any]:
        """Who last changed each line of a file (optionally a line range), including
        uncommitted lines."""
        repo = await require_repo(self.git, ctx, args.cwd)
        return await history.read_blame(
            repo, repo_path(repo, args.path), args.startLine, args.endLine
        )

    async def git_identity_detect(
        self, ctx: ToolContext, args: IdentityDetectArgs
    ) -> dict[str, Any]:
        """Propose commit identity profiles from the repository's and the global git config and
        from `gh`/`glab auth status` (account names only; tokens are never read)."""
        repo = None
        if args.cwd:
            try:
                repo = await discover(self.git, ctx, args.cwd)
            except ToolError as exc:
                # A directory we will not treat as a repository (missing, refused layout)
                # still leaves the global and CLI suggestions.
                if exc.code != ErrorCode.TOOL_FAILED:
                    raise
        return await detect_identities(self.git, args.cwd or ctx.cwd, repo)

    # -- writes -------------------------------------------------------------------------

    async def git_stage(self, ctx: ToolContext, args: StageArgs) -> dict[str, Any]:
        """Stage paths (`git add`) or a patch (`git apply --cached`); returns the status."""
        repo = await require_repo(self.git, ctx, args.cwd)
        return await changes.stage(repo, self.locks, args.paths, args.patch)

    async def git_unstage(self, ctx: ToolContext, args: UnstageArgs) -> dict[str, Any]:
        """Unstage paths or a patch, keeping the files as they are; returns the status."""
        repo = await require_repo(self.git, ctx, args.cwd)
        return await changes.unstage(repo, self.locks, args.paths, args.patch)

    async def git_commit(self, ctx: ToolContext, args: CommitArgs) -> Any:
        """Commit what is staged, as the active identity profile (settings `git`) when one is
        set; returns git's output and the status."""
        settings = git_settings(ctx.settings)
        repo = await require_repo(self.git, ctx, args.cwd)
        done = await changes.commit(repo, self.locks, args.message, settings)
        return with_notice(done, skipped_hooks(repo, COMMIT_HOOKS, settings.runHooks))

    async def git_branch(self, ctx: ToolContext, args: BranchArgs) -> Any:
        """List local branches, create one (from startPoint) or switch to one; returns the
        branch list."""
        settings = git_settings(ctx.settings)
        repo = await require_repo(self.git, ctx, args.cwd)
        listed = await branches.branch(
            repo, self.locks, args.action, args.name, args.startPoint, settings.runHooks
        )
        if args.action != "switch":
            return listed
        return with_notice(listed, skipped_hooks(repo, CHECKOUT_HOOKS, settings.runHooks))

    async def git_worktree(self, ctx: ToolContext, args: WorktreeArgs) -> Any:
        """List linked worktrees, create one next to the repository, or remove one (confirm
        true); returns the worktree list."""
        settings = git_settings(ctx.settings)
        repo = await require_repo(self.git, ctx, args.cwd)
        listed = await worktrees.worktree(
            ctx,
            repo,
            self.locks,
            action=args.action,
            path=args.path,
            branch=args.branch,
            start_point=args.startPoint,
            force=args.force,
            confirm=args.confirm,
            run_hooks=settings.runHooks,
        )
        if args.action != "create":
            return listed
        return with_notice(listed, skipped_hooks(repo, CHECKOUT_HOOKS, settings.runHooks))

    async def git_restore(self, ctx: ToolContext, args: RestoreArgs) -> dict[str, Any]:
        """Discard changes to paths or a patch in the work tree, the index or both (untracked
        paths are deleted); requires confirm true. Returns the status."""
        repo = await require_repo(self.git, ctx, args.cwd)
        return await changes.restore(repo, self.locks, args.paths, args.patch, args.target)

    # -- checkpoints --------------------------------------------------------------------

    async def git_checkpoint_create(
        self, ctx: ToolContext, args: CheckpointCreateArgs
    ) -> dict[str, Any]:
        """Snapshot the work tree and the index as a hidden commit under
        refs/meith/checkpoints/<id>, without touching the index, files, HEAD or branch."""
        repo = await require_repo(self.git, ctx, args.cwd)
        return await checkpoints.create(
            repo,
            self.locks,
            label=args.label,
            source=args.source,
            session_id=args.sessionId,
            tool_call_id=args.toolCallId,
        )

    async def git_checkpoint_list(
        self, ctx: ToolContext, args: CheckpointListArgs
    ) -> list[dict[str, Any]]:
        """Checkpoints of this repository, newest first (entries whose ref is gone are
        dropped)."""
        repo = await require_repo(self.git, ctx, args.cwd)
        return await checkpoints.list_checkpoints(repo)

    async def git_checkpoint_compare(
        self, ctx: ToolContext, args: CheckpointCompareArgs
    ) -> dict[str, Any]:
        """Diff a checkpoint (or any ref) against another (default HEAD): stat, per-file
        counts and optionally the patch."""
        repo = await require_repo(self.git, ctx, args.cwd)
        return await checkpoints.compare(repo, args.left, args.right, args.includePatch)

    async def git_checkpoint_restore(
        self, ctx: ToolContext, args: CheckpointRestoreArgs
    ) -> dict[str, Any]:
        """Bring files and the index back to a checkpoint without moving HEAD; refuses when
        HEAD moved since, unless force. Requires confirm true."""
        repo = await require_repo(self.git, ctx, args.cwd)
        return await checkpoints.restore(repo, self.locks, args.id, force=args.force)


def _names(entry: dict[str, Any], path: str) -> bool:
    """Whether a file of a diff is `path` (root-relative), or beneath it, either side of a
    rename."""
    under = path.rstrip("/") + "/"
    sides = (entry.get("path"), entry.get("originalPath"))
    return any(isinstance(p, str) and (p == path or p.startswith(under)) for p in sides)
