"""git_worktree."""

from __future__ import annotations

import os

import pytest

from tests.git.support import call_err, call_ok

pytestmark = pytest.mark.anyio


async def test_worktree_list_create_and_remove(git_rt, make_repo, sh):
    repo = make_repo()
    listed = await call_ok(git_rt, "git_worktree", {"cwd": str(repo)})
    assert listed == [
        {"path": str(repo), "head": sh(repo, "rev-parse", "HEAD").strip(), "branch": "main"}
    ]
    target = repo.parent / "wt-feature"
    listed = await call_ok(
        git_rt,
        "git_worktree",
        {"cwd": str(repo), "action": "create", "path": "../wt-feature", "branch": "feature"},
    )
    assert [w["path"] for w in listed] == [str(repo), str(target)]
    assert listed[1]["branch"] == "feature"
    assert (target / "README.md").read_text() == "hello\n"
    _code, message = await call_err(
        git_rt, "git_worktree", {"cwd": str(repo), "action": "remove", "path": str(target)}
    )
    assert message == "confirm must be true to remove a worktree."
    listed = await call_ok(
        git_rt,
        "git_worktree",
        {"cwd": str(repo), "action": "remove", "path": str(target), "confirm": True},
    )
    assert [w["path"] for w in listed] == [str(repo)]
    assert not target.exists()


async def test_worktree_create_needs_a_path(git_rt, make_repo):
    repo = make_repo()
    _code, message = await call_err(git_rt, "git_worktree", {"cwd": str(repo), "action": "create"})
    assert message == "Worktree path is required."


async def test_worktree_remove_refuses_a_path_that_is_not_a_linked_worktree(git_rt, make_repo):
    repo = make_repo()
    other = repo.parent / "not-a-worktree"
    other.mkdir()
    code, _ = await call_err(
        git_rt,
        "git_worktree",
        {"cwd": str(repo), "action": "remove", "path": str(other), "confirm": True, "force": True},
    )
    assert code == "TOOL_FAILED"
    assert other.exists()


async def test_tools_work_inside_a_linked_worktree(git_rt, make_repo, sh):
    repo = make_repo()
    linked = repo.parent / "linked"
    sh(repo, "worktree", "add", "-q", "-b", "side", str(linked))
    (linked / "side.txt").write_text("side\n")
    status = await call_ok(git_rt, "git_stage", {"cwd": str(linked), "paths": ["side.txt"]})
    assert status["root"] == str(linked)
    assert status["branch"] == "side"
    assert [f["path"] for f in status["staged"]] == ["side.txt"]
    assert os.path.isfile(linked / ".git")
