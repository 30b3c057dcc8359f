"""git_branch."""

from __future__ import annotations

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
