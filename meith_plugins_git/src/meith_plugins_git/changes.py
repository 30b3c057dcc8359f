"""`git_stage`, `git_unstage`, `git_restore`, `git_commit`: changes to the index and files."""

from __future__ import annotations

from typing import Any, Literal

from meith_core import ErrorCode, ToolError
from meith_plugins_git.hooks import profile_for
from meith_plugins_git.identity import GitSettings, commit_identity_env
from meith_plugins_git.locks import RepoLocks
from meith_plugins_git.repo import Repo
from meith_plugins_git.runner import READ_ONLY, WRITE
from meith_plugins_git.status import read_status
from meith_plugins_git.validate import repo_paths

ChangeSide = Literal["worktree", "staged", "both"]


def _need_paths_or_patch(paths: list[str] | None, patch: str | None) -> None:
    if not paths and not patch:
        raise ToolError(ErrorCode.VALIDATION_ERROR, "paths or patch is required.")


def _patch_bytes(patch: str) -> bytes:
    if "\0" in patch:
        raise ToolError(ErrorCode.VALIDATION_ERROR, "patch must not contain NUL bytes")
    return patch.encode("utf-8", "surrogateescape")


async def stage(
    repo: Repo, locks: RepoLocks, paths: list[str] | None, patch: str | None
) -> dict[str, Any]:
    _need_paths_or_patch(paths, patch)
    rel = repo_paths(repo, paths) if not patch and paths else []
    async with locks.hold(repo):
        if patch:
            # git apply refuses paths outside the tree and never writes through symlinks.
            await repo.run(
                ["apply"],
                ["--cached", "--whitespace=nowarn"],
                stdin=_patch_bytes(patch),
                profile=WRITE,
            )
        else:
            await repo.run(["add"], [], paths=rel, profile=WRITE)
        return await read_status(repo)


async def unstage(
    repo: Repo, locks: RepoLocks, paths: list[str] | None, patch: str | None
) -> dict[str, Any]:
    _need_paths_or_patch(paths, patch)
    rel = repo_paths(repo, paths) if not patch and paths else []
    async with locks.hold(repo):
        if patch:
            await repo.run(
                ["apply"],
                ["--cached", "--reverse", "--whitespace=nowarn"],
                stdin=_patch_bytes(patch),
                profile=WRITE,
            )
        else:
            # `reset -- paths` (rather than `restore --staged`) also works before the first
            # commit and does not fail on a path that has nothing staged.
            await repo.run(["reset"], ["-q"], paths=rel, profile=WRITE)
        return await read_status(repo)


async def restore(
    repo: Repo, locks: RepoLocks, paths: list[str] | None, patch: str | None, target: ChangeSide
) -> dict[str, Any]:
    _need_paths_or_patch(paths, patch)
    rel = repo_paths(repo, paths) if not patch and paths else []
    async with locks.hold(repo):
        if patch:
            where = {"worktree": [], "staged": ["--cached"], "both": ["--index"]}[target]
            await repo.run(
                ["apply"],
                ["--reverse", "--whitespace=nowarn", *where],
                stdin=_patch_bytes(patch),
                profile=WRITE,
            )
            return await read_status(repo)
        if target in ("staged", "both"):
            await repo.run(["reset"], ["-q"], paths=rel, profile=WRITE)
        if target in ("worktree", "both"):
            tracked = await _list_files(repo, ["--cached"], rel)
            untracked = await _list_files(repo, ["--others", "--exclude-standard"], rel)
            if tracked:
                await repo.run(
                    ["restore"],
                    ["--worktree", "--pathspec-from-file=-", "--pathspec-file-nul"],
                    stdin=b"\0".join(p.encode("utf-8", "surrogateescape") for p in tracked),
                    paths=[],
                    profile=WRITE,
                )
            if untracked:
                await repo.run(["clean"], ["-f", "-q"], paths=untracked, profile=WRITE)
        return await read_status(repo)


async def _list_files(repo: Repo, options: list[str], paths: list[str]) -> list[str]:
    done = await repo.run(["ls-files"], [*options, "-z"], paths=paths, profile=READ_ONLY)
    return [p.decode("utf-8", "surrogateescape") for p in done.stdout.split(b"\0") if p]


async def commit(
    repo: Repo, locks: RepoLocks, message: str, settings: GitSettings
) -> dict[str, Any]:
    if "\0" in message:
        raise ToolError(ErrorCode.VALIDATION_ERROR, "message must not contain NUL bytes")
    env = commit_identity_env(settings)
    profile = profile_for(settings.runHooks)
    async with locks.hold(repo):
        # The message goes through stdin: never an argv value git could read as an option.
        done = await repo.run(
            ["commit"],
            ["--file=-"],
            stdin=message.encode("utf-8", "surrogateescape"),
            env=env,
            profile=profile,
        )
        status = await read_status(repo)
    return {"output": done.stdout.decode("utf-8", "replace").strip(), "status": status}
