"""git_status: GitStatusResult on real repositories."""

from __future__ import annotations

import os

import pytest

from tests.git.support import call_ok

pytestmark = pytest.mark.anyio


async def test_a_directory_that_is_not_a_repository_is_an_error_with_the_way_out(git_rt, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    result = await git_rt.call("git_status", {"cwd": str(plain)})
    assert result.error.code == "TOOL_FAILED"
    assert result.error.message == (
        f"Not inside a git repository: {plain} (nor any directory above it). Pass cwd: a "
        "directory inside a repository, or run git init there to start one."
    )


async def test_clean_repository_reports_branch_and_clean(git_rt, make_repo):
    repo = make_repo()
    status = await call_ok(git_rt, "git_status", {"cwd": str(repo)})
    assert status["isRepo"] is True
    assert status["root"] == str(repo)
    assert status["branch"] == "main"
    assert status["upstream"] is None
    assert (status["ahead"], status["behind"]) == (0, 0)
    assert status["clean"] is True


async def test_cwd_may_be_any_directory_inside_the_work_tree(git_rt, make_repo):
    repo = make_repo(files={"src/deep/a.txt": "a\n"})
    status = await call_ok(git_rt, "git_status", {"cwd": str(repo / "src" / "deep")})
    assert status["root"] == str(repo)


async def test_staged_unstaged_and_untracked_are_sorted_into_their_lists(git_rt, make_repo, sh):
    repo = make_repo(files={"a.txt": "a\n", "b.txt": "b\n"})
    (repo / "a.txt").write_text("changed\n")
    (repo / "b.txt").write_text("staged\n")
    sh(repo, "add", "b.txt")
    (repo / "b.txt").write_text("staged then changed\n")
    (repo / "new.txt").write_text("new\n")
    status = await call_ok(git_rt, "git_status", {"cwd": str(repo)})
    by_path = {f["path"]: f for f in status["files"]}
    assert by_path["a.txt"] == {
        "path": "a.txt",
        "status": "modified",
        "indexStatus": " ",
        "worktreeStatus": "M",
        "staged": False,
        "unstaged": True,
        "untracked": False,
    }
    assert by_path["b.txt"]["indexStatus"] == "M"
    assert by_path["b.txt"]["worktreeStatus"] == "M"
    assert by_path["b.txt"]["staged"]
    assert by_path["b.txt"]["unstaged"]
    assert by_path["new.txt"]["status"] == "untracked"
    assert by_path["new.txt"]["indexStatus"] == "?"
    assert by_path["new.txt"]["untracked"]
    assert [f["path"] for f in status["staged"]] == ["b.txt"]
    assert sorted(f["path"] for f in status["unstaged"]) == ["a.txt", "b.txt"]
    assert [f["path"] for f in status["untracked"]] == ["new.txt"]
    assert status["clean"] is False


async def test_a_rename_carries_its_original_path(git_rt, make_repo, sh):
    repo = make_repo(files={"old name.txt": "content that is long enough to be a rename\n"})
    sh(repo, "mv", "old name.txt", "new name.txt")
    status = await call_ok(git_rt, "git_status", {"cwd": str(repo)})
    (entry,) = status["files"]
    assert entry["path"] == "new name.txt"
    assert entry["originalPath"] == "old name.txt"
    assert entry["status"] == "renamed"
    assert entry["indexStatus"] == "R"


async def test_detached_head_reports_a_short_sha(git_rt, make_repo, sh):
    repo = make_repo()
    sha = sh(repo, "rev-parse", "HEAD").strip()
    sh(repo, "checkout", "-q", "--detach")
    status = await call_ok(git_rt, "git_status", {"cwd": str(repo)})
    assert status["branch"] == sha[:12]


async def test_upstream_with_ahead_and_behind(git_rt, make_repo, sh, tmp_path):
    origin = make_repo("origin")
    clone = tmp_path / "clone"
    sh(tmp_path, "clone", "-q", str(origin), str(clone))
    (origin / "o.txt").write_text("o\n")
    sh(origin, "add", "o.txt")
    sh(origin, "commit", "-q", "-m", "upstream work")
    sh(clone, "fetch", "-q")
    (clone / "c.txt").write_text("c\n")
    sh(clone, "add", "c.txt")
    sh(clone, "commit", "-q", "-m", "local 1")
    sh(clone, "commit", "-q", "--allow-empty", "-m", "local 2")
    status = await call_ok(git_rt, "git_status", {"cwd": str(clone)})
    assert status["upstream"] == "origin/main"
    assert (status["ahead"], status["behind"]) == (2, 1)


async def test_repository_without_commits(git_rt, make_repo):
    repo = make_repo(files={"a.txt": "a\n"}, commit=False)
    status = await call_ok(git_rt, "git_status", {"cwd": str(repo)})
    assert status["branch"] == "main"
    assert [f["path"] for f in status["untracked"]] == ["a.txt"]


async def test_status_takes_no_index_lock_and_does_not_rewrite_the_index(git_rt, make_repo):
    repo = make_repo(files={"a.txt": "a\n"})
    index = repo / ".git" / "index"
    before = index.stat().st_mtime_ns
    # A stat change that a plain `git status` would refresh into the index.
    os.utime(repo / "a.txt", ns=(before + 10**9, before + 10**9))
    await call_ok(git_rt, "git_status", {"cwd": str(repo)})
    assert index.stat().st_mtime_ns == before


async def test_a_cwd_that_does_not_exist_fails_clearly(git_rt, tmp_path):
    res = await git_rt.call("git_status", {"cwd": str(tmp_path / "missing")})
    assert res.error is not None
    assert res.error.code == "TOOL_FAILED"
    assert "does not exist" in res.error.message
