"""git_log and git_blame."""

from __future__ import annotations

import pytest

from tests.git.support import call_err, call_ok

pytestmark = pytest.mark.anyio


async def test_log_lists_commits_newest_first_with_the_original_fields(git_rt, make_repo, sh):
    repo = make_repo(files={"a.txt": "a\n"})
    (repo / "b.txt").write_text("b\n")
    sh(repo, "add", "b.txt")
    sh(repo, "commit", "-q", "-m", "second: with a subject")
    sh(repo, "tag", "v1")
    entries = await call_ok(git_rt, "git_log", {"cwd": str(repo)})
    assert [e["subject"] for e in entries] == ["second: with a subject", "initial"]
    head = entries[0]
    assert set(head) == {
        "hash",
        "shortHash",
        "authorName",
        "authorEmail",
        "date",
        "subject",
        "refs",
    }
    assert head["hash"] == sh(repo, "rev-parse", "HEAD").strip()
    assert head["hash"].startswith(head["shortHash"])
    assert head["authorName"] == "Global User"
    assert head["authorEmail"] == "global@example.com"
    assert "T" in head["date"]
    assert head["date"][-6] in "+-"
    assert "HEAD -> main" in head["refs"]
    assert "tag: v1" in head["refs"]


async def test_log_limit_and_path(git_rt, make_repo, sh):
    repo = make_repo(files={"a.txt": "a\n", "b.txt": "b\n"})
    for i in range(3):
        (repo / "a.txt").write_text(f"a{i}\n")
        sh(repo, "commit", "-q", "-am", f"a {i}")
    (repo / "b.txt").write_text("b2\n")
    sh(repo, "commit", "-q", "-am", "b")
    assert len(await call_ok(git_rt, "git_log", {"cwd": str(repo), "limit": 2})) == 2
    only_b = await call_ok(git_rt, "git_log", {"cwd": str(repo), "path": "b.txt"})
    assert [e["subject"] for e in only_b] == ["b", "initial"]


async def test_log_limit_is_bounded(git_rt, make_repo):
    repo = make_repo()
    code, _ = await call_err(git_rt, "git_log", {"cwd": str(repo), "limit": 201})
    assert code == "VALIDATION_ERROR"


async def test_log_of_a_repository_without_commits_is_empty(git_rt, make_repo):
    repo = make_repo(commit=False)
    assert await call_ok(git_rt, "git_log", {"cwd": str(repo)}) == []


async def test_log_outside_a_repository_fails(git_rt, tmp_path):
    code, message = await call_err(git_rt, "git_log", {"cwd": str(tmp_path)})
    assert code == "TOOL_FAILED"
    assert message.startswith(f"Not inside a git repository: {tmp_path} (nor any directory")
    assert "Pass cwd: a directory inside a repository, or run git init there" in message


async def test_blame_lines_and_range(git_rt, make_repo, sh):
    repo = make_repo(files={"f.txt": "one\ntwo\nthree\n"})
    (repo / "f.txt").write_text("one\nTWO\nthree\n")
    sh(repo, "commit", "-q", "-am", "change two")
    result = await call_ok(git_rt, "git_blame", {"cwd": str(repo), "path": "f.txt"})
    assert result["path"] == "f.txt"
    lines = result["lines"]
    assert [ln["text"] for ln in lines] == ["one", "TWO", "three"]
    assert [ln["line"] for ln in lines] == [1, 2, 3]
    assert lines[1]["summary"] == "change two"
    assert lines[0]["summary"] == "initial"
    assert lines[0]["author"] == "Global User"
    assert isinstance(lines[0]["authorTime"], int)
    assert lines[0]["authorTime"] > 0
    assert len(lines[0]["hash"]) == 40
    ranged = await call_ok(
        git_rt, "git_blame", {"cwd": str(repo), "path": "f.txt", "startLine": 2, "endLine": 3}
    )
    assert [ln["line"] for ln in ranged["lines"]] == [2, 3]


async def test_blame_rejects_an_inverted_range(git_rt, make_repo):
    repo = make_repo(files={"f.txt": "1\n2\n"})
    code, _ = await call_err(
        git_rt, "git_blame", {"cwd": str(repo), "path": "f.txt", "startLine": 2, "endLine": 1}
    )
    assert code == "VALIDATION_ERROR"
