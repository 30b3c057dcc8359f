"""Hostile trees: `..`, absolute paths and symbolic links that lead out, names with line
breaks, git metadata, a worktree's gitdir and MEITH_HOME, none of which a write reaches."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from meith_core import ErrorCode
from meith_core.testing import MeithHarness
from tests.files.conftest import fails, ok

pytestmark = pytest.mark.meith_plugin("files")

TOOLS_ON_A_PATH = [
    ("workspace_read_file", {}),
    ("workspace_write_file", {"content": "x"}),
    ("workspace_apply_patch", {"edits": [{"oldText": "s", "newText": "x"}]}),
    ("workspace_undo", {}),
]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text("s\n")
    return out


@pytest.mark.parametrize(("tool", "extra"), TOOLS_ON_A_PATH)
@pytest.mark.parametrize("how", ["dotdot", "absolute", "file-link", "dir-link"])
def test_paths_leading_out_of_the_workspace_are_refused(
    files: MeithHarness, ws: Path, outside: Path, tool: str, extra: dict, how: str
) -> None:
    (ws / "file-link").symlink_to(outside / "secret.txt")
    (ws / "dir-link").symlink_to(outside)
    path = {
        "dotdot": "../outside/secret.txt",
        "absolute": str(outside / "secret.txt"),
        "file-link": "file-link",
        "dir-link": "dir-link/secret.txt",
    }[how]
    err = fails(files, tool, {"cwd": str(ws), "path": path, **extra})
    assert err.code == ErrorCode.VALIDATION_ERROR
    assert err.details["reason"] == "path outside workspace"
    assert (outside / "secret.txt").read_text() == "s\n"


def test_a_dotdot_that_stays_inside_is_fine(files: MeithHarness, ws: Path) -> None:
    (ws / "sub").mkdir()
    (ws / "a.txt").write_text("a\n")
    assert (
        ok(files, "workspace_read_file", {"cwd": str(ws), "path": "sub/../a.txt"})["path"]
        == "a.txt"
    )


def test_listing_and_search_do_not_follow_links(
    files: MeithHarness, ws: Path, outside: Path
) -> None:
    (ws / "real.txt").write_text("needle\n")
    (ws / "dir-link").symlink_to(outside)
    (ws / "file-link").symlink_to(ws / "real.txt")
    (outside / "secret.txt").write_text("needle\n")
    listed = ok(files, "workspace_list_files", {"cwd": str(ws)})
    assert listed["files"] == ["real.txt"]
    found = ok(files, "workspace_search", {"cwd": str(ws), "query": "needle"})
    assert [m["path"] for m in found["matches"]] == ["real.txt"]


def test_names_with_line_breaks_are_read_written_listed_and_searched(
    files: MeithHarness, ws: Path
) -> None:
    name = "two\nlines.txt"
    ok(files, "workspace_write_file", {"cwd": str(ws), "path": name, "content": "needle\n"})
    assert (ws / name).read_text() == "needle\n"
    assert ok(files, "workspace_read_file", {"cwd": str(ws), "path": name})["content"] == "needle\n"
    assert ok(files, "workspace_list_files", {"cwd": str(ws)})["files"] == [name]
    found = ok(files, "workspace_search", {"cwd": str(ws), "query": "needle"})
    assert [m["path"] for m in found["matches"]] == [name]


@pytest.mark.parametrize("path", [".git/config", ".git/hooks/pre-commit", "sub/.GIT/HEAD"])
def test_git_metadata_is_never_written(files: MeithHarness, ws: Path, path: str) -> None:
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / "sub").mkdir()
    before = (ws / ".git" / "config").read_bytes()
    err = fails(
        files,
        "workspace_write_file",
        {
            "cwd": str(ws),
            "path": path,
            "content": "[core]\n\thooksPath = /tmp\n",
            "createDirs": True,
        },
    )
    assert err.code == ErrorCode.PERMISSION_DENIED
    assert err.details["reason"] == "git metadata"
    assert (ws / ".git" / "config").read_bytes() == before
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()


def test_a_worktrees_gitdir_inside_the_workspace_is_never_written(
    files: MeithHarness, ws: Path
) -> None:
    # A work tree whose .git file names a git directory kept elsewhere in the workspace.
    subprocess.run(
        ["git", "init", "-q", "--separate-git-dir", str(ws / "meta"), str(ws / "tree")], check=True
    )
    assert (ws / "tree" / ".git").is_file()
    err = fails(
        files,
        "workspace_write_file",
        {"cwd": str(ws), "path": "meta/config", "content": "x"},
    )
    assert err.details["reason"] == "git metadata"
    assert err.details["gitdir"] == str(ws / "meta")
    ok(files, "workspace_write_file", {"cwd": str(ws), "path": "tree/ok.txt", "content": "x"})


def test_meith_home_is_never_written(files: MeithHarness, ws: Path) -> None:
    home = files.home.root
    grants = home / "grants.json"
    err = fails(
        files, "workspace_write_file", {"cwd": str(home), "path": "grants.json", "content": "{}"}
    )
    assert err.code == ErrorCode.PERMISSION_DENIED
    assert err.details["reason"] == "meith home"
    assert "gitdir" not in err.details
    assert not grants.exists() or grants.read_text() != "{}"


def test_a_symlink_planted_in_a_parent_after_resolution_is_not_followed(
    files: MeithHarness, ws: Path, outside: Path
) -> None:
    # The writers act in a directory opened through the workspace's descriptor (the core's
    # Beneath), following no link: a write to sub/x.txt where sub is (now) a link out is
    # refused rather than landing outside.
    from meith_core import Beneath, LinkOnTheWay

    (ws / "sub").symlink_to(outside)
    with Beneath(ws) as base, pytest.raises(LinkOnTheWay, match="symbolic link"):
        base.parent("sub/x.txt", create=True)
    assert not (outside / "x.txt").exists()


def test_a_cwd_that_is_not_a_directory_is_a_validation_error(files: MeithHarness, ws: Path) -> None:
    err = fails(files, "workspace_list_files", {"cwd": str(ws / "nope")})
    assert err.code == ErrorCode.VALIDATION_ERROR
    assert os.path.basename(err.details["cwd"]) == "nope"


def test_another_registered_home_beneath_the_workspace_is_never_written(
    files: MeithHarness, ws: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The rule confinement keeps processes out by is the files tools' rule too: not only the
    runtime's own home, every meith home of the user (an agent with `writes-files --cwd ws`
    must not rewrite `ws/other-home/grants.json`, another runtime's trust root)."""
    from meith_core.base.home_registry import register_home

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    other = ws / "other-home"
    other.mkdir()
    register_home(other)
    # Even the trusted in-process caller: the rule is not a grant's, no caller writes there.
    err = fails(
        files,
        "workspace_write_file",
        {"cwd": str(ws), "path": "other-home/grants.json", "content": "[]"},
    )
    assert err.code == ErrorCode.PERMISSION_DENIED
    assert err.details["reason"] == "meith home"
    assert not (other / "grants.json").exists()
    ok(files, "workspace_write_file", {"cwd": str(ws), "path": "mine.txt", "content": "x"})


def test_a_cwd_with_a_nul_byte_is_a_validation_error(files: MeithHarness, ws: Path) -> None:
    err = fails(files, "workspace_list_files", {"cwd": str(ws) + "\0x"})
    assert err.code == ErrorCode.VALIDATION_ERROR
    assert "NUL" in err.message


def test_a_path_renamed_while_it_is_resolved_is_said_so_not_a_crash(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """realpath reads links one by one: a component that stops being a link between its
    lstat and its readlink raises EINVAL (seen in a rename race); the tools' one resolver
    says what happened instead of letting it through as a crash."""
    import errno

    from meith_core import ToolError
    from meith_core.base import paths
    from meith_plugins_files.scope import resolve

    def racing(path: str) -> str:
        raise OSError(errno.EINVAL, "Invalid argument", path)

    monkeypatch.setattr(paths.os.path, "realpath", racing)
    with pytest.raises(ToolError) as caught:
        resolve(ws, "sub/x.txt")
    monkeypatch.undo()
    assert caught.value.code == ErrorCode.TOOL_FAILED
    assert caught.value.details["reason"] == "path changed"
    assert "Invalid argument" in caught.value.message
