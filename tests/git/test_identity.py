"""git_identity_detect: git config sources and the gh / glab account lines.

`gh` and `glab` are not installed here; the tests that need them put small stand-in scripts
on PATH that print what the real CLIs print (that is the only thing mocked).
"""

from __future__ import annotations

import os

import pytest

from meith_plugins_git.identity import parse_gh_status, parse_glab_status
from meith_plugins_git.plugin import Plugin
from tests.git.support import call_ok

pytestmark = pytest.mark.anyio


async def test_detects_the_global_and_the_current_repository_identity(git_rt, make_repo, sh):
    repo = make_repo()
    sh(repo, "config", "user.name", "Repo User")
    sh(repo, "config", "user.email", "repo@example.com")
    result = await call_ok(git_rt, "git_identity_detect", {"cwd": str(repo / ".")})
    assert result["root"] == os.path.realpath(repo)
    by_source = {s["source"]: s for s in result["suggestions"]}
    assert by_source["global"]["name"] == "Global User"
    assert by_source["global"]["label"] == "Global Git config"
    assert by_source["repo"] == {
        "source": "repo",
        "label": "Current repository",
        "name": "Repo User",
        "email": "repo@example.com",
        "detail": f"git config in {repo}",
    }


async def test_suggestions_are_deduplicated_case_insensitively(git_rt, make_repo, sh):
    repo = make_repo()
    sh(repo, "config", "user.name", "GLOBAL user")
    sh(repo, "config", "user.email", "Global@Example.com")
    result = await call_ok(git_rt, "git_identity_detect", {"cwd": str(repo)})
    assert [s["source"] for s in result["suggestions"]] == ["global"]


async def test_outside_a_repository_root_is_null(git_rt, tmp_path):
    result = await call_ok(git_rt, "git_identity_detect", {"cwd": str(tmp_path)})
    assert result["root"] is None
    assert [s["source"] for s in result["suggestions"]] == ["global"]


def test_parse_gh_auth_status_both_layouts():
    new = (
        "github.com\n"
        "  ✓ Logged in to github.com account octocat (keyring)\n"
        "  - Active account: true\n"
        "  - Token: gho_************************************\n"
    )
    old = "github.example.com\n  ✓ Logged in to github.example.com as hubot (oauth_token)\n"
    assert parse_gh_status(new) == [("github.com", "octocat")]
    assert parse_gh_status(old) == [("github.example.com", "hubot")]


def test_parse_glab_auth_status_both_layouts():
    a = "gitlab.com\n  ✓ Logged in to gitlab.com as tanuki (/home/u/.config/glab-cli/config.yml)\n"
    b = "gitlab.example.com: api call successful\n✓ Logged in to gitlab.example.com as fox\n"
    assert parse_glab_status(a) == [("gitlab.com", "tanuki")]
    assert ("gitlab.example.com", "fox") in parse_glab_status(b)


async def test_gh_and_glab_accounts_become_noreply_suggestions(
    runtime, git_home, tmp_path, monkeypatch
):
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    (bin_dir / "gh").write_text(
        "#!/bin/sh\necho 'github.com' >&2\n"
        "echo '  ✓ Logged in to github.com account octocat (keyring)' >&2\n"
        "echo '  - Token: gho_SECRET' >&2\n"
    )
    (bin_dir / "glab").write_text(
        "#!/bin/sh\necho 'gitlab.com'\necho '  ✓ Logged in to gitlab.com as tanuki (config)'\n"
    )
    for name in ("gh", "glab"):
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    runtime.load_plugin("git", Plugin)
    result = await call_ok(runtime, "git_identity_detect", {"cwd": str(tmp_path)})
    by_source = {s["source"]: s for s in result["suggestions"]}
    assert by_source["github-cli"] == {
        "source": "github-cli",
        "label": "GitHub: octocat",
        "name": "octocat",
        "email": "octocat@users.noreply.github.com",
        "username": "octocat",
        "host": "github.com",
        "detail": "gh auth status (github.com)",
    }
    assert by_source["gitlab-cli"]["email"] == "tanuki@users.noreply.gitlab.com"
    assert "SECRET" not in repr(result)


@pytest.mark.slow
async def test_a_hanging_cli_is_abandoned_after_its_time_limit(
    runtime, git_home, tmp_path, monkeypatch
):
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    pid_file = tmp_path / "gh.pid"
    (bin_dir / "gh").write_text(f"#!/bin/sh\necho $$ > '{pid_file}'\nexec sleep 60\n")
    (bin_dir / "gh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    runtime.load_plugin("git", Plugin)
    result = await call_ok(runtime, "git_identity_detect", {"cwd": str(tmp_path)})
    assert [s["source"] for s in result["suggestions"]] == ["global"]
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_a_refused_or_missing_directory_still_gives_the_global_identity(git_rt, tmp_path):
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / ".git").write_text(f"gitdir: {tmp_path / 'nowhere'}\n")
    for cwd in (planted, tmp_path / "missing"):
        result = await call_ok(git_rt, "git_identity_detect", {"cwd": str(cwd)})
        assert result["root"] is None
        assert [s["source"] for s in result["suggestions"]] == ["global"]
