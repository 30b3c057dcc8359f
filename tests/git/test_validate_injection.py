"""Option injection: caller values that look like git options are taken literally or refused.

`--output=<file>` makes `git diff`/`git log` write to a file: the canary. `-p`, `--help` and
`--orphan=x` would change what a command does.
"""

from __future__ import annotations

import pytest

from tests.git.support import call_err, call_ok

pytestmark = pytest.mark.anyio

EVIL = ["--output={canary}", "-p", "--help", "--orphan=x", "--exec=touch {canary}"]


def _values(canary):
    return [v.format(canary=canary) for v in EVIL]


@pytest.fixture
def repo(make_repo):
    repo = make_repo(files={"a.txt": "a\n"})
    (repo / "a.txt").write_text("changed\n")
    return repo


@pytest.fixture
def canary(tmp_path):
    path = tmp_path / "CANARY"
    yield path
    assert not path.exists(), "a caller value was read as a git option"


@pytest.mark.parametrize("index", range(len(EVIL)))
async def test_paths_are_literal_in_diff_log_and_blame(git_rt, repo, canary, index):
    value = _values(canary)[index]
    diff = await call_ok(git_rt, "git_diff", {"cwd": str(repo), "path": value})
    assert all(f["diff"] == "" for f in diff["files"])  # no such file: no patch at all
    assert await call_ok(git_rt, "git_log", {"cwd": str(repo), "path": value}) == []
    code, _ = await call_err(git_rt, "git_blame", {"cwd": str(repo), "path": value})
    assert code == "TOOL_FAILED"  # git: no such path


@pytest.mark.parametrize("index", range(len(EVIL)))
async def test_paths_are_literal_in_stage_unstage_and_restore(git_rt, repo, canary, index):
    value = _values(canary)[index]
    for tool, extra in (
        ("git_stage", {}),
        ("git_unstage", {}),
        ("git_restore", {"confirm": True}),
    ):
        res = await git_rt.call(tool, {"cwd": str(repo), "paths": [value], **extra})
        if not res.ok:
            assert res.error.code == "TOOL_FAILED"  # e.g. pathspec did not match
    assert (repo / "a.txt").read_text() == "changed\n"


async def test_a_file_named_like_an_option_is_staged_as_that_file(git_rt, make_repo):
    repo = make_repo()
    for name in ("-p", "--help", "--orphan=x"):
        (repo / name).write_text("x\n")
    status = await call_ok(
        git_rt, "git_stage", {"cwd": str(repo), "paths": ["-p", "--help", "--orphan=x"]}
    )
    assert sorted(f["path"] for f in status["staged"]) == ["--help", "--orphan=x", "-p"]


async def test_pathspec_magic_is_not_interpreted(git_rt, make_repo):
    repo = make_repo(files={"a.txt": "a\n", "b.txt": "b\n"})
    (repo / "a.txt").write_text("A\n")
    (repo / "b.txt").write_text("B\n")
    for magic in (":/", ":(glob)*.txt", "*.txt", ":!a.txt"):
        res = await git_rt.call("git_stage", {"cwd": str(repo), "paths": [magic]})
        assert not res.ok or res.content["staged"] == [], magic


@pytest.mark.parametrize("index", range(len(EVIL)))
async def test_branch_names_and_start_points_that_look_like_options_are_refused(
    git_rt, repo, canary, sh, index
):
    value = _values(canary)[index]
    for args in (
        {"action": "create", "name": value},
        {"action": "switch", "name": value},
        {"action": "create", "name": "ok", "startPoint": value},
    ):
        code, _ = await call_err(git_rt, "git_branch", {"cwd": str(repo), **args})
        assert code == "VALIDATION_ERROR", args
    code, _ = await call_err(
        git_rt,
        "git_worktree",
        {"cwd": str(repo), "action": "create", "path": "../wt", "branch": value},
    )
    assert code == "VALIDATION_ERROR"
    code, _ = await call_err(
        git_rt,
        "git_worktree",
        {"cwd": str(repo), "action": "create", "path": "../wt2", "startPoint": value},
    )
    assert code == "VALIDATION_ERROR"
    assert sh(repo, "for-each-ref", "--format=%(refname)", "refs/heads").split() == [
        "refs/heads/main"
    ]


@pytest.mark.parametrize("index", range(len(EVIL)))
async def test_checkpoint_refs_and_ids_that_look_like_options_are_refused(
    git_rt, repo, canary, index
):
    value = _values(canary)[index]
    for side in ("left", "right"):
        args = {"left": "HEAD", side: value}
        code, _ = await call_err(git_rt, "git_checkpoint_compare", {"cwd": str(repo), **args})
        assert code == "VALIDATION_ERROR"
    code, _ = await call_err(
        git_rt, "git_checkpoint_restore", {"cwd": str(repo), "id": value, "confirm": True}
    )
    assert code == "VALIDATION_ERROR"


async def test_labels_and_messages_never_reach_argv(git_rt, repo, canary, sh):
    meta = await call_ok(
        git_rt, "git_checkpoint_create", {"cwd": str(repo), "label": f"--output={canary}"}
    )
    assert sh(repo, "log", "-1", "--format=%s", meta["ref"]).strip() == f"--output={canary}"
    sh(repo, "add", "a.txt")
    await call_ok(git_rt, "git_commit", {"cwd": str(repo), "message": f"--output={canary}"})
    assert sh(repo, "log", "-1", "--format=%s").strip() == f"--output={canary}"


async def test_worktree_path_that_looks_like_an_option_is_a_path(git_rt, make_repo, canary):
    repo = make_repo()
    listed = await call_ok(
        git_rt,
        "git_worktree",
        {"cwd": str(repo), "action": "create", "path": "--orphan=x", "branch": "w"},
    )
    assert listed[1]["path"] == str(repo / "--orphan=x")
