"""The git tools' text for a model: status as short-status lines, diffs as diffs, log as lines."""

from __future__ import annotations

import subprocess

import pytest

pytestmark = pytest.mark.anyio


async def _text(rt, name, args):
    res = await rt.call(name, args)
    assert res.ok, res.error
    assert res.text is not None
    return res.text


async def test_status_text_matches_git_short_status(git_rt, make_repo, sh):
    repo = make_repo(files={"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"})
    (repo / "a.txt").write_text("changed\n")
    (repo / "b.txt").write_text("staged\n")
    sh(repo, "add", "b.txt")
    sh(repo, "mv", "c.txt", "renamed.txt")
    (repo / "new.txt").write_text("new\n")
    text = await _text(git_rt, "git_status", {"cwd": str(repo)})
    lines = text.splitlines()
    assert lines[0] == "## main"
    assert sorted(lines[1:]) == sorted(
        [" M a.txt", "M  b.txt", "R  renamed.txt <- c.txt", "?? new.txt"]
    )
    short = sh(repo, "status", "--short", "--untracked-files=all")
    # Every path git itself lists is in the text (git spells renames `old -> new`).
    for line in short.splitlines():
        assert line.split(" -> ")[-1].split()[-1] in text


async def test_status_text_of_a_clean_and_a_non_repository(git_rt, make_repo, tmp_path):
    repo = make_repo()
    assert await _text(git_rt, "git_status", {"cwd": str(repo)}) == "## main\n(clean)"
    plain = tmp_path / "plain"
    plain.mkdir()
    assert await _text(git_rt, "git_diff", {"cwd": str(plain)}) == "not a git repository"


async def test_diff_text_is_a_diff_git_apply_accepts(git_rt, make_repo, sh):
    repo = make_repo(files={"a.txt": "one\ntwo\nthree\n", "bin.dat": "x"})
    (repo / "a.txt").write_text("one\n2\nthree\n")
    (repo / "bin.dat").write_bytes(b"\0\1\2binary")
    text = await _text(git_rt, "git_diff", {"cwd": str(repo), "scope": "unstaged"})
    assert text.splitlines()[0] == "2 files changed, +1 -1 (unstaged)"
    assert "--- a/a.txt\n+++ b/a.txt\n@@" in text
    assert "-two\n+2" in text
    assert "index " not in text
    # What the model read applies in reverse to the work tree: it is the change, exactly.
    patch = text.split("\n", 1)[1]
    patch = "\n".join(line for line in patch.splitlines() if "bin.dat" not in line) + "\n"
    done = subprocess.run(
        ["git", "apply", "--check", "-R", "--include=a.txt", "-"],
        cwd=repo,
        input=patch,
        text=True,
        capture_output=True,
    )
    assert done.returncode == 0, done.stderr


async def test_diff_text_without_patches_lists_files_with_counts(git_rt, make_repo):
    repo = make_repo(files={"a.txt": "one\n"})
    (repo / "a.txt").write_text("one\ntwo\n")
    text = await _text(git_rt, "git_diff", {"cwd": str(repo), "includePatches": False})
    assert text == "1 files changed, +1 -0 (all)\nmodified a.txt (+1 -0)"


async def test_log_text_is_one_line_per_commit(git_rt, make_repo, sh):
    repo = make_repo()
    (repo / "README.md").write_text("two\n")
    sh(repo, "commit", "-qam", "second commit")
    text = await _text(git_rt, "git_log", {"cwd": str(repo), "limit": 5})
    lines = text.splitlines()
    assert len(lines) == 2
    assert lines[0].endswith(": second commit (HEAD -> main)")
    assert lines[1].endswith(": initial")
    short = sh(repo, "log", "-1", "--format=%h").strip()
    assert lines[0].startswith(short + " ")
