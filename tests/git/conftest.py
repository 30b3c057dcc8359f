"""Fixtures for the git plugin tests: real repositories in temporary directories.

`git_home` gives every test its own HOME (a global gitconfig with a known identity), so the
machine's own git config never leaks in; the plugin reads HOME when it loads.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from meith_core import Runtime
from meith_plugins_git.plugin import Plugin

GLOBAL_NAME = "Global User"
GLOBAL_EMAIL = "global@example.com"


def git_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1", LC_ALL="C")
    return env


@pytest.fixture
def git_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "user-home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        f"[user]\n\tname = {GLOBAL_NAME}\n\temail = {GLOBAL_EMAIL}\n"
        "[init]\n\tdefaultBranch = main\n"
        '[protocol "file"]\n\tallow = always\n'
    )
    monkeypatch.setenv("HOME", str(home))
    for var in [k for k in os.environ if k.startswith("GIT_")]:
        monkeypatch.delenv(var, raising=False)
    return home


GitCmd = Callable[..., str]


@pytest.fixture
def sh(git_home: Path) -> GitCmd:
    """`sh(repo, "commit", "-m", "x")`: raw git for setting up and inspecting test repos."""

    def run(cwd: Path | str, *args: str, check: bool = True, input: str | None = None) -> str:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=git_env(git_home),
            capture_output=True,
            text=True,
            input=input,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
        return done.stdout

    return run


@pytest.fixture
def make_repo(tmp_path: Path, sh: GitCmd) -> Callable[..., Path]:
    """`make_repo("name", files={"a.txt": "a\\n"}, commit=True)` -> the repository path."""

    def make(name: str = "repo", files: dict[str, str] | None = None, commit: bool = True) -> Path:
        repo = tmp_path / name
        repo.mkdir(parents=True)
        sh(repo, "init", "-q")
        for rel, text in (files if files is not None else {"README.md": "hello\n"}).items():
            path = repo / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        if commit:
            sh(repo, "add", "-A")
            sh(repo, "commit", "-q", "-m", "initial")
        return repo.resolve()

    return make


@pytest.fixture
async def git_rt(runtime: Runtime, git_home: Path) -> AsyncIterator[Runtime]:
    """The runtime with the git plugin loaded and approved."""
    record = runtime.load_plugin("git", Plugin)
    assert record.status == "loaded", record.reason
    runtime.approve_plugin("git")
    return runtime
