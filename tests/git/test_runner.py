"""The one argv builder and runner: argv shape, environment, version gate, process control."""

from __future__ import annotations

import os
import signal

import pytest

from meith_core import ToolError
from meith_plugins_git.plugin import Plugin
from meith_plugins_git.runner import (
    NO_HOOKS,
    READ_ONLY,
    WRITE,
    WRITE_WITH_HOOKS,
    Git,
    GitUnavailable,
    hardened_environment,
    parse_version,
)
from tests.git.support import call_ok


@pytest.fixture
def git(git_home):
    return Git.locate()


def test_git_path_is_absolute_and_resolved_once(git):
    assert os.path.isabs(git.path)
    assert git.version >= (2, 24, 0)


def test_caller_values_go_after_end_of_options_and_paths_after_double_dash(git):
    argv = git.argv(
        ["diff"], ["--numstat"], operands=["--output=x"], paths=["-p"], profile=READ_ONLY
    )
    assert argv[0] == git.path
    sub = argv.index("diff")
    assert argv[sub:] == ["diff", "--numstat", "--end-of-options", "--output=x", "--", "-p"]
    assert "--literal-pathspecs" in argv[:sub]
    assert "--no-pager" in argv[:sub]


def test_every_command_carries_the_neutralising_config(git):
    argv = git.argv(["status"], profile=READ_ONLY)
    settings = {argv[i + 1] for i, a in enumerate(argv) if a == "-c"}
    for expected in (
        "core.fsmonitor=false",
        "core.pager=cat",
        "diff.external=",
        "credential.helper=",
        "protocol.allow=never",
        "maintenance.auto=false",
        "gc.auto=0",
        f"core.hooksPath={NO_HOOKS}",
    ):
        assert expected in settings


def test_hooks_run_only_when_the_profile_and_the_caller_both_allow_them(git):
    cases = [(READ_ONLY, True, True), (WRITE, True, True), (WRITE_WITH_HOOKS, False, True)]
    cases += [(WRITE_WITH_HOOKS, True, False)]
    for profile, hooks, off in cases:
        # The repository's own hooksPath override comes first; "no hooks" is set after it.
        argv = git.argv(["commit"], profile=profile, hooks=hooks, config=[("core.hooksPath", "/x")])
        settings = [argv[i + 1] for i, a in enumerate(argv) if a == "-c"]
        assert (settings[-1] == f"core.hooksPath={NO_HOOKS}") is off


def test_optional_locks_are_off_for_read_only_commands(git):
    assert git.environment(READ_ONLY)["GIT_OPTIONAL_LOCKS"] == "0"
    assert "GIT_OPTIONAL_LOCKS" not in git.environment(WRITE)


def test_nul_bytes_never_reach_argv(git):
    with pytest.raises(ToolError) as err:
        git.argv(["log"], paths=["a\0b"], profile=READ_ONLY)
    assert err.value.code == "VALIDATION_ERROR"


def test_commands_without_end_of_options_refuse_dashed_operands(git):
    with pytest.raises(ToolError) as err:
        git.argv(
            ["check-ref-format"],
            ["--branch"],
            operands=["-x"],
            profile=READ_ONLY,
            end_of_options=False,
        )
    assert err.value.code == "VALIDATION_ERROR"


def test_the_environment_drops_inherited_git_variables():
    env = hardened_environment(
        {
            "PATH": "/usr/bin",
            "HOME": "/h",
            "GIT_DIR": "/elsewhere",
            "GIT_EXTERNAL_DIFF": "evil",
            "GIT_CONFIG_PARAMETERS": "'core.fsmonitor'='evil'",
            "GIT_SSH_COMMAND": "evil",
            "GIT_CEILING_DIRECTORIES": "/c",
            "LC_ALL": "de_DE.UTF-8",
        }
    )
    assert not {"GIT_DIR", "GIT_EXTERNAL_DIFF", "GIT_CONFIG_PARAMETERS", "GIT_SSH_COMMAND"} & set(
        env
    )
    assert env["GIT_CEILING_DIRECTORIES"] == "/c"
    assert env["GIT_TERMINAL_PROMPT"] == "0"
    assert env["GIT_NO_LAZY_FETCH"] == "1"
    assert env["LC_MESSAGES"] == "C"
    assert "LC_ALL" not in env
    assert env["LANG"] == "de_DE.UTF-8"


@pytest.mark.anyio
async def test_inherited_git_dir_and_external_diff_do_not_redirect_the_tools(
    runtime, git_home, make_repo, tmp_path, monkeypatch
):
    repo = make_repo(files={"a.txt": "a\n"})
    other = make_repo("other")
    canary = tmp_path / "CANARY"
    script = tmp_path / "ext.sh"
    script.write_text(f"#!/bin/sh\ntouch '{canary}'\n")
    script.chmod(0o755)
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", str(script))
    runtime.load_plugin("git", Plugin)
    (repo / "a.txt").write_text("b\n")
    diff = await call_ok(runtime, "git_diff", {"cwd": str(repo)})
    assert diff["root"] == str(repo)
    assert [f["path"] for f in diff["files"]] == ["a.txt"]
    assert not canary.exists()


def test_version_parsing():
    assert parse_version("git version 2.39.5\n") == (2, 39, 5)
    assert parse_version("git version 2.24.0.windows.1") == (2, 24, 0)
    assert parse_version("git version 2.45") == (2, 45, 0)
    with pytest.raises(GitUnavailable):
        parse_version("not git")


@pytest.mark.anyio
async def test_git_older_than_2_24_makes_the_plugin_refuse_to_load(runtime, tmp_path, monkeypatch):
    # No git < 2.24 is installed here: a stand-in that reports 2.23 plays it.
    fake_bin = tmp_path / "old-git"
    fake_bin.mkdir()
    (fake_bin / "git").write_text("#!/bin/sh\necho 'git version 2.23.4'\n")
    (fake_bin / "git").chmod(0o755)
    monkeypatch.setenv("PATH", str(fake_bin))
    record = runtime.load_plugin("git", Plugin)
    assert record.status == "failed"
    assert "older than 2.24" in record.reason
    assert "git_status" not in {t["name"] for t in runtime.describe()}


@pytest.mark.anyio
async def test_missing_git_makes_the_plugin_refuse_to_load(runtime, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    record = runtime.load_plugin("git", Plugin)
    assert record.status == "failed"
    assert "not found" in record.reason


def test_signals_used_exist():
    assert signal.SIGTERM
    assert signal.SIGKILL


def test_relative_path_entries_are_not_searched_for_git(tmp_path, monkeypatch):
    planted = tmp_path / "git"
    planted.write_text("#!/bin/sh\necho 'git version 9.9.9'\n")
    planted.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    g = Git.locate({"PATH": f".{os.pathsep}/usr/bin{os.pathsep}/bin", "HOME": str(tmp_path)})
    assert g.path != str(planted)
    assert g.version != (9, 9, 9)
