"""Writes are serialised per repository, leave no index.lock, and die with their call."""

from __future__ import annotations

import anyio
import pytest

from meith_core import CancelToken
from tests.git.support import alive, call_err, call_ok, wait_for

pytestmark = pytest.mark.anyio


@pytest.mark.slow
async def test_concurrent_writes_on_one_repository_all_succeed(git_rt, make_repo):
    repo = make_repo(files={f"f{i}.txt": "x\n" for i in range(16)})
    for i in range(16):
        (repo / f"f{i}.txt").write_text(f"changed {i}\n")
    results = [None] * 16

    async def stage(i: int) -> None:
        results[i] = await git_rt.call("git_stage", {"cwd": str(repo), "paths": [f"f{i}.txt"]})

    async with anyio.create_task_group() as tg:
        for i in range(16):
            tg.start_soon(stage, i)
        tg.start_soon(lambda: git_rt.call("git_checkpoint_create", {"cwd": str(repo)}))
    assert all(r.ok for r in results), [r.error for r in results if not r.ok]
    status = await call_ok(git_rt, "git_status", {"cwd": str(repo)})
    assert len(status["staged"]) == 16
    assert not (repo / ".git" / "index.lock").exists()


async def test_a_write_waits_for_a_running_write_instead_of_hitting_index_lock(
    git_rt, make_repo, sh
):
    """While a commit's pre-commit hook runs, a git_stage on the same repository waits: the
    hook never sees b.txt staged. (Unserialised, the stage would land in the middle of the
    commit; it is let go only once it waits for the repository's lock.)"""
    repo = make_repo()
    started = repo.parent / "hook-started"
    release = repo.parent / "hook-release"
    seen = repo.parent / "hook-saw-staged"
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(
        f"#!/bin/sh\ntouch '{started}'\nwhile [ ! -e '{release}' ]; do sleep 0.02; done\n"
        f"git diff --cached --name-only > '{seen}'\n"
    )
    hook.chmod(0o755)
    (repo / "a.txt").write_text("a\n")
    sh(repo, "add", "a.txt")
    (repo / "b.txt").write_text("b\n")
    outcome = {}

    async def commit() -> None:
        outcome["commit"] = await git_rt.call("git_commit", {"cwd": str(repo), "message": "m"})

    async def stage() -> None:
        outcome["stage"] = await git_rt.call("git_stage", {"cwd": str(repo), "paths": ["b.txt"]})

    async with anyio.create_task_group() as tg:
        tg.start_soon(commit)
        await wait_for(started.exists, "the pre-commit hook")
        tg.start_soon(stage)
        locks = git_rt.plugins.records["git"].obj.tools.locks._locks
        await wait_for(lambda: any(lock._waiters for lock in locks.values()), "the stage to queue")
        assert "stage" not in outcome  # queued behind the commit
        release.touch()
    assert outcome["commit"].ok, outcome["commit"].error
    assert seen.read_text().split() == ["a.txt"]
    assert outcome["stage"].ok, outcome["stage"].error
    assert [f["path"] for f in outcome["stage"].content["staged"]] == ["b.txt"]


async def test_a_stale_index_lock_is_reported_clearly(git_rt, make_repo):
    repo = make_repo()
    lock = repo / ".git" / "index.lock"
    lock.write_text("")
    (repo / "a.txt").write_text("a\n")
    code, message = await call_err(git_rt, "git_stage", {"cwd": str(repo), "paths": ["a.txt"]})
    assert code == "TOOL_FAILED"
    assert "index is locked" in message
    assert str(lock) in message
    res = await git_rt.call("git_stage", {"cwd": str(repo), "paths": ["a.txt"]})
    assert res.error.details["lockPath"] == str(lock)
    # Reads take no lock and still work.
    status = await call_ok(git_rt, "git_status", {"cwd": str(repo)})
    assert [f["path"] for f in status["untracked"]] == ["a.txt"]
    assert lock.exists()  # somebody else's lock is never removed


def slow_hook(repo, pid_file):
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\necho $$ > '{pid_file}'\nsleep 60\n")
    hook.chmod(0o755)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["cancel", "timeout"])
async def test_cancel_and_timeout_kill_git_and_its_hook_and_leave_no_index_lock(
    git_rt, make_repo, sh, how
):
    repo = make_repo()
    pid_file = repo.parent / "hook.pid"
    slow_hook(repo, pid_file)
    (repo / "a.txt").write_text("a\n")
    sh(repo, "add", "a.txt")
    token = CancelToken()
    result = {}

    async def commit() -> None:
        kwargs = {"cancel": token} if how == "cancel" else {"timeout_ms": 1500}
        result["r"] = await git_rt.call("git_commit", {"cwd": str(repo), "message": "m"}, **kwargs)

    async with anyio.create_task_group() as tg:
        tg.start_soon(commit)
        await wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), "the hook")
        if how == "cancel":
            token.cancel()
    assert result["r"].error.code == ("CANCELLED" if how == "cancel" else "TIMEOUT")
    hook_pid = int(pid_file.read_text())
    await wait_for(lambda: not alive(hook_pid), "the hook to die")
    await wait_for(lambda: not (repo / ".git" / "index.lock").exists(), "index.lock to go")
    assert sh(repo, "rev-list", "--count", "HEAD").strip() == "1"  # nothing was committed
    # The repository is usable right away.
    (repo / ".git" / "hooks" / "pre-commit").unlink()
    await call_ok(git_rt, "git_commit", {"cwd": str(repo), "message": "after"})


@pytest.mark.slow  # about 0.5-1 s alone: over the guard's limit on a loaded CI machine
async def test_a_cancelled_checkpoint_leaves_no_temporary_index(git_rt, make_repo, git_home):
    """A (user-configured, so allowed) clean filter that hangs holds checkpoint creation
    inside `git add -A` on the temporary index; cancelling there cleans up."""
    pid_file = git_home / "filter.pid"
    script = git_home / "slow-filter.sh"
    script.write_text(f"#!/bin/sh\necho $$ > '{pid_file}'\nsleep 60\n")
    script.chmod(0o755)
    with (git_home / ".gitconfig").open("a") as fh:
        fh.write(f'[filter "slow"]\n\tclean = {script}\n')
    repo = make_repo(files={".gitattributes": "*.dat filter=slow\n"})
    (repo / "x.dat").write_text("data\n")
    token = CancelToken()
    result = {}

    async def create() -> None:
        result["r"] = await git_rt.call("git_checkpoint_create", {"cwd": str(repo)}, cancel=token)

    async with anyio.create_task_group() as tg:
        tg.start_soon(create)
        await wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), "the filter")
        token.cancel()
    assert result["r"].error.code == "CANCELLED"
    filter_pid = int(pid_file.read_text())
    await wait_for(lambda: not alive(filter_pid), "the filter to die")
    meith_dir = repo / ".git" / "meith"
    await wait_for(lambda: not list(meith_dir.glob("tmp-*")), "temporary index files to go")
    assert not (repo / ".git" / "index.lock").exists()
    assert await call_ok(git_rt, "git_checkpoint_list", {"cwd": str(repo)}) == []
