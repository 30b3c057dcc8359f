"""Secrets a confined process cannot read, tried as an attacker would: the registries' and
cloud tools' tokens and the shell histories in the user's home (by default), and the secret
files inside its own directory (`.env`, `*.pem`, ssh keys, by `confinement.secretPatterns`).
The controls show the same reads work for a process that is not confined."""

from __future__ import annotations

import os
import shlex
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from meith_core import CallerInfo
from meith_core.confine import secret_files
from tests.core.confine.support import needs_namespaces, results
from tests.process.conftest import Proc
from tests.process.sealed import agent
from tests.process.support import ok

pytestmark = [pytest.mark.anyio, needs_namespaces, pytest.mark.slow]

TOKEN = "npm_ABCDEF123456"


def unconfined(proc: Proc, cwd: Path) -> CallerInfo:
    session = proc.rt.open_session("cli", cwd=str(cwd))
    proc.rt.grant(session, ["starts-process"])
    return session


def reads(files: dict[str, Path]) -> str:
    """`key:BYTES` for each file (what `cat` got out of it)."""
    return "; ".join(
        f"echo {k}:$(cat {shlex.quote(str(p))} 2>/dev/null | wc -c)" for k, p in files.items()
    )


async def run(proc: Proc, caller: CallerInfo, cwd: Path, line: str) -> dict[str, object]:
    result = await proc.rt.call("run_command", {"cwd": str(cwd), "shell": line}, caller=caller)
    return ok(result)  # type: ignore[no-any-return]


@pytest.fixture
def home_outside_tmp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A HOME outside /tmp (which is private to a confined process whatever it holds)."""
    if not os.access("/dev/shm", os.W_OK):
        pytest.skip("no writable directory outside /tmp for a home")
    home = Path(tempfile.mkdtemp(prefix="meith-test-home-", dir="/dev/shm"))
    monkeypatch.setenv("HOME", str(home))
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


async def test_registry_tokens_and_histories_are_secret_by_default(
    proc: Proc, tmp_path: Path, home_outside_tmp: Path
) -> None:
    home = home_outside_tmp
    files = {
        "npmrc": home / ".npmrc",
        "pypirc": home / ".pypirc",
        "cargo": home / ".cargo" / "credentials.toml",
        "docker": home / ".docker" / "daemon.json",
        "pip": home / ".config" / "pip" / "pip.conf",
        "vault": home / ".vault-token",
        "bash": home / ".bash_history",
        "fish": home / ".local" / "share" / "fish" / "fish_history",
    }
    for path in files.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"//registry.npmjs.org/:_authToken={TOKEN}\n")
    (home / ".bashrc").write_text("# not a secret\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    line = reads({**files, "bashrc": home / ".bashrc"})
    got = results(str((await run(proc, agent(proc, repo), repo, line))["stdout"]))
    for key in files:
        assert got[key] == "0", (key, got)
    assert got["bashrc"] != "0", got  # everything else of the home stays readable
    # Control: the local user's own process reads them.
    got = results(str((await run(proc, unconfined(proc, repo), repo, line))["stdout"]))
    assert all(got[key] != "0" for key in files), got


async def test_secret_files_inside_the_directory_are_covered(proc: Proc, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "config").mkdir(parents=True)
    secret = f"DATABASE_URL=postgres://app:{TOKEN}@db/app\n"
    files = {
        "env": repo / ".env",
        "prod": repo / ".env.production",
        "pem": repo / "config" / "server.pem",
        "key": repo / "config" / "server.key",
        "rsa": repo / "id_rsa",
    }
    for path in files.values():
        path.write_text(secret)
    (repo / ".env.example").write_text("DATABASE_URL=\n")
    line = reads({**files, "example": repo / ".env.example"})
    line += "; echo overwrite > .env; rm -f .env; echo rm:$?"
    done = await run(proc, agent(proc, repo), repo, line)
    got = results(str(done["stdout"]))
    for key in files:
        assert got[key] == "0", (key, done)
    assert got["example"] != "0", done  # `!.env.example`: the committed template stays readable
    assert (repo / ".env").read_text() == secret  # neither rewritten nor removed through it
    # Control: the local user's process reads the file.
    got = results(str((await run(proc, unconfined(proc, repo), repo, line))["stdout"]))
    assert got["env"] != "0", got


async def test_the_patterns_are_the_policys_an_empty_list_turns_them_off(
    proc: Proc, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".env").write_text("X=1\n")
    settings = proc.rt.settings.load().get("confinement") or {}
    proc.rt.settings.merge({"confinement": {**settings, "secretPatterns": []}})
    got = results(
        str((await run(proc, agent(proc, repo), repo, reads({"env": repo / ".env"})))["stdout"])
    )
    assert got["env"] != "0", got


async def test_a_walk_cut_short_is_said_in_the_result(
    proc: Proc, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    for i in range(5):
        (repo / f"d{i}").mkdir(parents=True)
    monkeypatch.setattr(secret_files, "MAX_WALK_ENTRIES", 2)
    result = await proc.rt.call(
        "run_command", {"cwd": str(repo), "shell": "true"}, caller=agent(proc, repo)
    )
    said = " ".join(d.message for d in result.diagnostics or [])
    assert "stopped after 2 entries" in said, said
    assert "NOT hidden" in said
