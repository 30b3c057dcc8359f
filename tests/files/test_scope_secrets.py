"""Secret paths stay hidden through every files tool, not only the readers: the write tools'
diffs, undo results, dry runs and "not found" answers would show what is in a file, so the
secret-path rule is the shared scope's, applied to the file a tool touches before it reads
(every caller but the local user). Names handed to ripgrep are literal globs."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from meith_core import ErrorCode
from meith_core.testing import MeithHarness
from tests.files.conftest import fails, ok

pytestmark = pytest.mark.meith_plugin("files")

KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nsecret material\n"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's home (HOME) holding an ssh key, the workspace an agent was given."""
    home = tmp_path / "user"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(KEY)
    (home / "code.py").write_text("print(1)\n")
    monkeypatch.setenv("HOME", str(home))
    return home.resolve()


@pytest.mark.parametrize(
    ("tool", "extra"),
    [
        ("workspace_write_file", {"content": "replaced\n"}),
        (
            "workspace_apply_patch",
            {"edits": [{"oldText": "secret", "newText": "x"}], "dryRun": True},
        ),
        ("workspace_apply_patch", {"edits": [{"oldText": "a wrong guess", "newText": "x"}]}),
        ("workspace_undo", {"force": True}),
    ],
)
def test_the_write_tools_never_show_or_probe_a_secret_file(
    files: MeithHarness, home: Path, tool: str, extra: dict
) -> None:
    agent = files.grant(["writes-files"], caller="agent", confine_to=home)
    err = fails(files, tool, {"cwd": str(home), "path": ".ssh/id_rsa", **extra}, caller=agent)
    assert err.code == ErrorCode.PERMISSION_DENIED
    assert err.details["reason"] == "secret path"
    assert "secret material" not in err.message
    assert (home / ".ssh" / "id_rsa").read_text() == KEY


def test_the_local_user_still_edits_a_secret_file(files: MeithHarness, home: Path) -> None:
    cli = files.grant(["writes-files"], caller="cli", confine_to=home)
    done = ok(
        files,
        "workspace_apply_patch",
        {
            "cwd": str(home),
            "path": ".ssh/id_rsa",
            "edits": [{"oldText": "material", "newText": "x"}],
        },
        caller=cli,
    )
    assert done["applied"] == 1


def test_a_secret_name_with_glob_characters_is_hidden_and_nothing_else(
    files: MeithHarness, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    (ws / "vault[1]").mkdir(parents=True)
    (ws / "vault[1]" / "token.txt").write_text("hunter2 token\n")
    (ws / "vault1").mkdir()
    (ws / "vault1" / "notes.txt").write_text("token notes\n")
    files.set_settings("confinement", {"secretPaths": [str(ws / "vault[1]")]})
    agent = files.session("agent", cwd=ws)
    listed = ok(files, "workspace_list_files", {"cwd": str(ws)}, caller=agent)["files"]
    assert listed == ["vault1/notes.txt"]
    found = ok(files, "workspace_search", {"cwd": str(ws), "query": "token"}, caller=agent)
    assert [m["path"] for m in found["matches"]] == ["vault1/notes.txt"]


def test_secret_file_names_inside_the_workspace_are_hidden_from_agents(
    files: MeithHarness, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    (ws / "app").mkdir(parents=True)
    (ws / "app" / ".env").write_text("API_TOKEN=abc\n")
    (ws / "app" / ".env.example").write_text("API_TOKEN=\n")
    (ws / "app" / ".env.local").write_text("API_TOKEN=local\n")
    (ws / "app" / "server.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    (ws / "app" / "main.py").write_text("API_TOKEN = env()\n")
    agent = files.session("agent", cwd=ws)
    err = fails(files, "workspace_read_file", {"cwd": str(ws), "path": "app/.env"}, caller=agent)
    assert err.details["reason"] == "secret path"
    listed = ok(files, "workspace_list_files", {"cwd": str(ws)}, caller=agent)["files"]
    assert listed == ["app/.env.example", "app/main.py"]
    found = ok(files, "workspace_search", {"cwd": str(ws), "query": "API_TOKEN"}, caller=agent)
    assert sorted(m["path"] for m in found["matches"]) == ["app/.env.example", "app/main.py"]
    cli = files.session("cli", cwd=ws)
    assert ok(files, "workspace_read_file", {"cwd": str(ws), "path": "app/.env"}, caller=cli)
    # The local user lists and searches everything (the user's own files).
    everything = ok(files, "workspace_list_files", {"cwd": str(ws)}, caller=cli)["files"]
    assert everything == sorted(
        ["app/.env", "app/.env.example", "app/.env.local", "app/main.py", "app/server.pem"]
    )


def test_a_secret_path_that_is_a_link_is_secret_where_it_leads(
    files: MeithHarness, home: Path
) -> None:
    """`~/.aws -> ~/dotfiles/aws`: the setting names the link, the files live where it leads."""
    real = home / "dotfiles" / "aws"
    real.mkdir(parents=True)
    (real / "credentials").write_text("aws_secret_access_key = X\n")
    (home / ".aws").symlink_to(real)
    agent = files.session("agent", cwd=home)
    err = fails(
        files,
        "workspace_read_file",
        {"cwd": str(home), "path": "dotfiles/aws/credentials"},
        caller=agent,
    )
    assert err.details["reason"] == "secret path"
    listed = ok(
        files, "workspace_list_files", {"cwd": str(home), "includeIgnored": True}, caller=agent
    )
    assert not [f for f in listed["files"] if "credentials" in f or "id_rsa" in f]


def test_a_symlinked_workspace_root_works_and_still_hides_secrets(
    files: MeithHarness, home: Path, tmp_path: Path
) -> None:
    link = tmp_path / "home-link"
    link.symlink_to(home)
    agent = files.session("agent", cwd=link)
    assert ok(files, "workspace_read_file", {"cwd": str(link), "path": "code.py"}, caller=agent)
    err = fails(
        files, "workspace_read_file", {"cwd": str(link), "path": ".ssh/id_rsa"}, caller=agent
    )
    assert err.details["reason"] == "secret path"


def test_a_hook_in_a_separate_git_directory_named_by_a_git_file_is_never_written(
    files: MeithHarness, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    gitdir = tmp_path / "ws" / "meta"
    subprocess.run(
        ["git", "init", "-q", "--separate-git-dir", str(gitdir), str(ws / "repo")], check=True
    )
    assert (ws / "repo" / ".git").is_file()
    agent = files.grant(["writes-files"], caller="agent", confine_to=ws)
    err = fails(
        files,
        "workspace_write_file",
        {"cwd": str(ws), "path": "meta/hooks/pre-commit", "content": "#!/bin/sh\nid\n"},
        caller=agent,
    )
    assert err.details["reason"] == "git metadata"
    assert not (gitdir / "hooks" / "pre-commit").exists()


def test_a_read_covered_by_a_grant_outside_the_workspace_hides_secrets_too(
    files: MeithHarness, home: Path, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    agent = files.grant(["read-only"], caller="agent", confine_to=home)
    agent = agent.with_cwd(str(ws))
    assert ok(files, "workspace_read_file", {"cwd": str(home), "path": "code.py"}, caller=agent)
    err = fails(
        files, "workspace_read_file", {"cwd": str(home), "path": ".ssh/id_rsa"}, caller=agent
    )
    assert err.details["reason"] == "secret path"
    assert os.path.exists(home / ".ssh" / "id_rsa")
