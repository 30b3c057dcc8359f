"""`git_branch`: list, create and switch local branches."""

from __future__ import annotations

from typing import Any, Final, Literal

from meith_core import ErrorCode, ToolError
from meith_plugins_git.hooks import profile_for
from meith_plugins_git.locks import RepoLocks
from meith_plugins_git.repo import Repo
from meith_plugins_git.runner import READ_ONLY
from meith_plugins_git.validate import check_branch_name, check_revision

Action = Literal["list", "create", "switch"]

_FORMAT: Final = (
    "%(refname:short)%1f%(HEAD)%1f%(upstream:short)%1f%(objectname:short)%1f%(contents:subject)%1e"
)


async def list_branches(repo: Repo) -> list[dict[str, Any]]:
    done = await repo.run(
        ["for-each-ref"], [f"--format={_FORMAT}"], operands=["refs/heads"], profile=READ_ONLY
    )
    out = []
    for record in done.stdout.decode("utf-8", "replace").split("\x1e"):
        record = record.lstrip("\n")
        if not record:
            continue
        name, head, upstream, commit, subject = (record.split("\x1f", 4) + [""] * 5)[:5]
        out.append(
            {
                "name": name,
                "current": head == "*",
                "upstream": upstream or None,
                "commit": commit,
                "subject": subject,
            }
        )
    return out


async def branch(
    repo: Repo,
    locks: RepoLocks,
    action: Action,
    name: str | None,
    start_point: str | None,
    run_hooks: bool,
) -> list[dict[str, Any]]:
    if action == "list":
        return await list_branches(repo)
    if not name:
        raise ToolError(ErrorCode.VALIDATION_ERROR, "Branch name is required.")
    await check_branch_name(repo, name)
    profile = profile_for(run_hooks)
    async with locks.hold(repo):
        if action == "create":
            operands = [name]
            if start_point:
                operands.append(check_revision(start_point, "startPoint"))
            await repo.run(["branch"], [], operands=operands, profile=profile)
        else:
            if start_point:
                raise ToolError(ErrorCode.VALIDATION_ERROR, "startPoint is only used with create")
            await repo.run(["switch"], [], operands=[name], profile=profile)
        return await list_branches(repo)
