"""git_stage, git_unstage, git_restore and git_commit (with identity profiles)."""

from __future__ import annotations

import pytest

from tests.git.support import call_err, call_ok

pytestmark = pytest.mark.anyio


def paths(files):
    return sorted(f["path"] for f in files)


async def test_stage_paths_and_unstage_them(git_rt, make_repo):
    repo = make_repo(files={"a.txt": "a\n", "b.txt": "b\n"})
    (repo / "a.txt").write_text("A\n")
    (repo / "b.txt").unlink()
    (repo / "c.txt").write_text("c\n")
    status = await call_ok(
        git_rt, "git_stage", {"cwd": str(repo), "paths": ["a.txt", "b.txt", "c.txt"]}
    )
    assert paths(status["staged"]) == ["a.txt", "b.txt", "c.txt"]
    assert status["unstaged"] == []
    status = await call_ok(git_rt, "git_unstage", {"cwd": str(repo), "paths": ["a.txt", "c.txt"]})
    assert paths(status["staged"]) == ["b.txt"]
    assert paths(status["untracked"]) == ["c.txt"]
    assert (repo / "a.txt").read_text() == "A\n"  # unstaging keeps the file


async def test_stage_accepts_absolute_paths_inside_the_repository(git_rt, make_repo):
    repo = make_repo(files={"d/a.txt": "a\n"})
    (repo / "d" / "a.txt").write_text("changed\n")
    status = await call_ok(
        git_rt, "git_stage", {"cwd": str(repo), "paths": [str(repo / "d" / "a.txt")]}
    )
    assert paths(status["staged"]) == ["d/a.txt"]


async def test_stage_and_unstage_a_patch(git_rt, make_repo, sh):
    lines = [f"{i}\n" for i in range(1, 21)]
    repo = make_repo(files={"f.txt": "".join(lines)})
    lines[0], lines[-1] = "1 changed\n", "20 changed\n"
    (repo / "f.txt").write_text("".join(lines))
    full = sh(repo, "diff")
    first_hunk = full[: full.index("@@ -17")]
    status = await call_ok(git_rt, "git_stage", {"cwd": str(repo), "patch": first_hunk})
    assert paths(status["staged"]) == ["f.txt"]
    assert paths(status["unstaged"]) == ["f.txt"]
    assert sh(repo, "diff", "--cached", "--numstat").split()[:2] == ["1", "1"]
    status = await call_ok(git_rt, "git_unstage", {"cwd": str(repo), "patch": first_hunk})
    assert status["staged"] == []


async def test_stage_needs_paths_or_patch(git_rt, make_repo):
    repo = make_repo()
    code, message = await call_err(git_rt, "git_stage", {"cwd": str(repo)})
    assert code == "VALIDATION_ERROR"
    assert message == "paths or patch is required."


async def test_unstage_works_before_the_first_commit(git_rt, make_repo, sh):
    repo = make_repo(files={"a.txt": "a\n"}, commit=False)
    sh(repo, "add", "a.txt")
    status = await call_ok(git_rt, "git_unstage", {"cwd": str(repo), "paths": ["a.txt"]})
    assert paths(status["untracked"]) == ["a.txt"]


async def test_restore_requires_confirm_true(git_rt, make_repo):
    repo = make_repo()
    for args in ({}, {"confirm": False}):
        code, _ = await call_err(
            git_rt, "git_restore", {"cwd": str(repo), "paths": ["README.md"], **args}
        )
        assert code == "VALIDATION_ERROR"


async def test_restore_worktree_discards_changes_and_deletes_untracked_paths(git_rt, make_repo, sh):
    repo = make_repo(files={"a.txt": "a\n", "keep.txt": "k\n"})
    (repo / "a.txt").write_text("changed\n")
    (repo / "keep.txt").write_text("keep this change\n")
    (repo / "junk.txt").write_text("junk\n")
    status = await call_ok(
        git_rt, "git_restore", {"cwd": str(repo), "paths": ["a.txt", "junk.txt"], "confirm": True}
    )
    assert (repo / "a.txt").read_text() == "a\n"
    assert not (repo / "junk.txt").exists()
    assert (repo / "keep.txt").read_text() == "keep this change\n"
    assert paths(status["files"]) == ["keep.txt"]


async def test_restore_staged_keeps_the_file_and_both_discards_everything(git_rt, make_repo, sh):
    repo = make_repo(files={"a.txt": "a\n"})
    (repo / "a.txt").write_text("staged\n")
    sh(repo, "add", "a.txt")
    status = await call_ok(
        git_rt,
        "git_restore",
        {"cwd": str(repo), "paths": ["a.txt"], "target": "staged", "confirm": True},
    )
    assert status["staged"] == []
    assert paths(status["unstaged"]) == ["a.txt"]
    assert (repo / "a.txt").read_text() == "staged\n"
    sh(repo, "add", "a.txt")
    (repo / "new.txt").write_text("new\n")
    sh(repo, "add", "new.txt")
    status = await call_ok(
        git_rt,
        "git_restore",
        {"cwd": str(repo), "paths": ["a.txt", "new.txt"], "target": "both", "confirm": True},
    )
    assert status["clean"] is True
    assert (repo / "a.txt").read_text() == "a\n"
    assert not (repo / "new.txt").exists()


async def test_restore_a_patch_from_the_work_tree(git_rt, make_repo, sh):
    repo = make_repo(files={"f.txt": "1\n2\n"})
    (repo / "f.txt").write_text("1\n2\n3\n")
    patch = sh(repo, "diff")
    status = await call_ok(
        git_rt, "git_restore", {"cwd": str(repo), "patch": patch, "confirm": True}
    )
    assert status["clean"]
    assert (repo / "f.txt").read_text() == "1\n2\n"


async def test_commit_without_a_profile_uses_git_config(git_rt, make_repo, sh):
    repo = make_repo()
    (repo / "a.txt").write_text("a\n")
    sh(repo, "add", "a.txt")
    result = await call_ok(git_rt, "git_commit", {"cwd": str(repo), "message": "add a"})
    assert "add a" in result["output"]
    assert result["status"]["clean"] is True
    who = sh(repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%s").strip()
    assert who == "Global User <global@example.com>|Global User <global@example.com>|add a"


async def test_commit_uses_the_active_identity_profile_as_author_and_committer(
    git_rt, make_repo, sh
):
    git_rt.settings.merge(
        {
            "git": {
                "identityProfiles": [
                    {
                        "id": "gitacct_work",
                        "label": "Work",
                        "name": "Work User",
                        "email": "work@corp.example",
                    }
                ],
                "activeIdentityProfileId": "gitacct_work",
            }
        }
    )
    repo = make_repo()
    (repo / "a.txt").write_text("a\n")
    sh(repo, "add", "a.txt")
    await call_ok(git_rt, "git_commit", {"cwd": str(repo), "message": "as work"})
    who = sh(repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>").strip()
    assert who == "Work User <work@corp.example>|Work User <work@corp.example>"


async def test_commit_with_a_missing_or_incomplete_profile_fails_clearly(git_rt, make_repo, sh):
    repo = make_repo()
    (repo / "a.txt").write_text("a\n")
    sh(repo, "add", "a.txt")
    git_rt.settings.merge({"git": {"activeIdentityProfileId": "gitacct_gone"}})
    code, message = await call_err(git_rt, "git_commit", {"cwd": str(repo), "message": "m"})
    assert (code, message) == ("TOOL_FAILED", "Active git identity profile no longer exists.")
    git_rt.settings.merge(
        {
            "git": {
                "identityProfiles": [{"id": "gitacct_x", "label": "X", "name": "X", "email": ""}],
                "activeIdentityProfileId": "gitacct_x",
            }
        }
    )
    code, message = await call_err(git_rt, "git_commit", {"cwd": str(repo), "message": "m"})
    assert message == "Active git identity profile requires both a name and email."


async def test_the_git_settings_section_is_declared_and_validated(git_rt):
    from meith_core.host.settings import SettingsError

    assert "git" in git_rt.settings.sections
    with pytest.raises(SettingsError):
        git_rt.settings.merge({"git": {"identityProfiles": [{"id": "x", "name": "a <b>"}]}})


async def test_commit_with_nothing_staged_reports_gits_message(git_rt, make_repo):
    repo = make_repo()
    code, message = await call_err(git_rt, "git_commit", {"cwd": str(repo), "message": "m"})
    assert code == "TOOL_FAILED"
    assert "nothing to commit" in message


async def test_commit_message_that_looks_like_an_option_is_the_message(git_rt, make_repo, sh):
    repo = make_repo()
    (repo / "a.txt").write_text("a\n")
    sh(repo, "add", "a.txt")
    await call_ok(git_rt, "git_commit", {"cwd": str(repo), "message": "--amend"})
    assert sh(repo, "log", "-1", "--format=%s").strip() == "--amend"
    assert sh(repo, "rev-list", "--count", "HEAD").strip() == "2"


async def test_commit_runs_the_repositorys_hooks_unless_settings_say_no(git_rt, make_repo, sh):
    repo = make_repo()
    marker = repo.parent / "hook-ran"
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\necho ran >> '{marker}'\n")
    hook.chmod(0o755)
    (repo / "a.txt").write_text("a\n")
    sh(repo, "add", "a.txt")
    await call_ok(git_rt, "git_commit", {"cwd": str(repo), "message": "with hook"})
    assert marker.read_text() == "ran\n"
    git_rt.settings.merge({"git": {"runHooks": False}})
    (repo / "b.txt").write_text("b\n")
    sh(repo, "add", "b.txt")
    await call_ok(git_rt, "git_commit", {"cwd": str(repo), "message": "without hook"})
    assert marker.read_text() == "ran\n"
