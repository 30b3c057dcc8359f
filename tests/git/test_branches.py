"""git_branch and git_worktree."""

from __future__ import annotations

import os

import pytest

from tests.git.support import call_err, call_ok

pytestmark = pytest.mark.anyio


async def test_branch_list_create_and_switch(git_rt, make_repo, sh):
    repo = make_repo()
    head = sh(repo, "rev-parse", "--short", "HEAD").strip()
    branches = await call_ok(git_rt, "git_branch", {"cwd": str(repo)})
    assert branches == [
        {"name": "main", "current": True, "upstream": None, "commit": head, "subject": "initial"}
    ]
    branches = await call_ok(
        git_rt, "git_branch", {"cwd": str(repo), "action": "create", "name": "feature/x"}
    )
    assert [b["name"] for b in branches] == ["feature/x", "main"]
    assert sh(repo, "branch", "--show-current").strip() == "main"  # create does not switch
    branches = await call_ok(
        git_rt, "git_branch", {"cwd": str(repo), "action": "switch", "name": "feature/x"}
    )
    assert [b["name"] for b in branches if b["current"]] == ["feature/x"]
    assert sh(repo, "branch", "--show-current").strip() == "feature/x"


async def test_branch_create_from_a_start_point(git_rt, make_repo, sh):
    repo = make_repo()
    first = sh(repo, "rev-parse", "HEAD").strip()
    sh(repo, "commit", "-q", "--allow-empty", "-m", "second")
    await call_ok(
        git_rt,
        "git_branch",
        {"cwd": str(repo), "action": "create", "name": "old", "startPoint": first[:10]},
    )
    assert sh(repo, "rev-parse", "old").strip() == first


async def test_branch_create_needs_a_name(git_rt, make_repo):
    repo = make_repo()
    code, message = await call_err(git_rt, "git_branch", {"cwd": str(repo), "action": "create"})
    assert code == "VALIDATION_ERROR"
    assert message == "Branch name is required."


@pytest.mark.parametrize(
    "name",
    [
        "-p",
        "--help",
        "--orphan=x",
        "@",
        "HEAD",
        "refs/heads/x",
        "a..b",
        "x@{1}",
        "bad name",
        "x.lock",
    ],
)
async def test_branch_names_outside_the_allow_list_are_rejected(git_rt, make_repo, sh, name):
    repo = make_repo()
    code, _ = await call_err(
        git_rt, "git_branch", {"cwd": str(repo), "action": "create", "name": name}
    )
    assert code == "VALIDATION_ERROR"
    assert sh(repo, "for-each-ref", "--format=%(refname)", "refs/heads").split() == [
        "refs/heads/main"
    ]


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
