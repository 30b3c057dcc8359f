"""The one table of risky git keys (`confine.planted_keys`), as the planted-git scan applies it.

Issue 32, case 3: a planted nested repository with `protocol.allow=always` and an `ext::`
remote URL runs a command at the user's next `git fetch`; the scan used to remove only
program-valued keys. Each transport-valued key is planted here in a real repository and must be
gone after the scan; the same key with a harmless value stays. Real git.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from meith_core import GIT_RISKY_KEYS, GitMetadataWatch, git_key_risk

GIT = shutil.which("git") or "git"


pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(cwd),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    return subprocess.run(
        [GIT, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=True
    )


def _config(repo: Path) -> list[tuple[str, str]]:
    listed = _git(repo, "config", "--file", ".git/config", "--null", "--list").stdout
    out = []
    for item in listed.split("\0"):
        if item:
            key, _, value = item.partition("\n")
            out.append((key, value))
    return out


def _watched(tmp_path: Path) -> tuple[GitMetadataWatch, Path]:
    ws = tmp_path / "ws"
    ws.mkdir()
    watch = GitMetadataWatch((str(ws),), (str(ws),))
    watch.snapshot()
    return watch, ws


RISKY = [
    ("protocol.allow", "always"),
    ("protocol.ext.allow", "always"),
    ("protocol.fd.allow", "user"),
    ("remote.origin.url", "ext::sh -c touch% /tmp/x"),
    ("remote.origin.url", "fd::3,4"),
    ("remote.origin.pushurl", "ext::sh -c touch% /tmp/x"),
    ("url.ext::sh -c touch% /tmp/x.insteadOf", "https://example.org/"),
    ("url.ext::sh -c touch% /tmp/x.pushInsteadOf", "https://example.org/"),
    ("submodule.m.url", "ext::sh -c touch% /tmp/x"),
    ("core.worktree", "OUTSIDE"),
]


HARMLESS = [
    ("protocol.file.allow", "never"),
    ("remote.origin.url", "https://example.org/r.git"),
    ("remote.origin.pushurl", "git@example.org:r.git"),
    ("url.https://mirror.example.org/.insteadOf", "https://example.org/"),
    ("submodule.m.url", "../m.git"),
    ("core.worktree", "INSIDE"),
]


def _value(value: str, tmp_path: Path, ws: Path) -> str:
    if value == "OUTSIDE":
        (tmp_path / "elsewhere").mkdir(exist_ok=True)
        return str(tmp_path / "elsewhere")
    if value == "INSIDE":
        (ws / "sub" / "tree").mkdir(exist_ok=True)
        return "../tree"
    return value


@pytest.mark.parametrize(("key", "value"), RISKY)
def test_each_transport_valued_key_planted_is_removed(tmp_path: Path, key: str, value: str) -> None:
    watch, ws = _watched(tmp_path)
    _git(ws, "init", "-q", "sub")
    planted = _value(value, tmp_path, ws)
    _git(ws / "sub", "config", key, planted)
    assert (key.lower(), planted) in [(k.lower(), v) for k, v in _config(ws / "sub")]

    report = watch.scan()

    assert (key.lower(), planted) not in [(k.lower(), v) for k, v in _config(ws / "sub")]
    [finding] = report.neutralised
    assert any(key.lower() in change.lower() for change in finding.changes), finding.changes


@pytest.mark.parametrize(("key", "value"), HARMLESS)
def test_the_same_keys_with_harmless_values_stay(tmp_path: Path, key: str, value: str) -> None:
    watch, ws = _watched(tmp_path)
    _git(ws, "init", "-q", "sub")
    planted = _value(value, tmp_path, ws)
    _git(ws / "sub", "config", key, planted)
    watch.scan()
    assert (key.lower(), planted) in [(k.lower(), v) for k, v in _config(ws / "sub")]


def test_every_key_of_the_table_is_judged_and_only_as_the_table_says() -> None:
    kinds = {entry.kind for entry in GIT_RISKY_KEYS}
    assert kinds == {"program", "transport", "include", "command", "worktree"}
    assert git_key_risk("core.fsmonitor", "x") is not None
    assert git_key_risk("Protocol.Allow", "ALWAYS") is not None
    assert git_key_risk("protocol.allow", "never") is None
    assert git_key_risk("remote.o.url", "  ext::sh") is not None
    assert git_key_risk("remote.o.url", "https://x") is None
    # Where a work tree lies is judged only where the scan knows the gitdir and the walls.
    assert git_key_risk("core.worktree", "/x") is None
    assert git_key_risk("core.worktree", "/x", gitdir="/w/r/.git", inside=("/w",)) is not None
    assert git_key_risk("core.worktree", "..", gitdir="/w/r/.git", inside=("/w",)) is None


def test_a_planted_ext_remote_no_longer_runs_at_the_users_next_fetch(tmp_path: Path) -> None:
    """The attack end to end: `protocol.allow=always` and an `ext::` URL in a repository the
    process planted; the user's own `git fetch` later, outside every wall. The control is the
    same repository planted outside the watched directory: its fetch runs the command."""
    watch, ws = _watched(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    ran = {name: tmp_path / f"ran-{name}" for name in ("control", "planted")}
    for name, parent in (("control", tmp_path), ("planted", ws)):
        _git(parent, "init", "-q", name)
        _git(parent / name, "config", "protocol.allow", "always")
        _git(parent / name, "config", "remote.origin.url", f"ext::sh -c touch% {ran[name]}")
        _git(parent / name, "config", "remote.origin.fetch", "+refs/heads/*:refs/remotes/o/*")

    watch.scan()

    def users_fetch(repo: Path) -> None:
        env = {"PATH": os.environ["PATH"], "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"}
        subprocess.run(
            [GIT, "fetch", "-q", "origin"],
            cwd=repo,
            env=env,
            capture_output=True,
            timeout=60,
            check=False,
        )

    users_fetch(tmp_path / "control")
    assert ran["control"].exists(), "control: an unscanned planted repository runs the command"
    users_fetch(ws / "planted")
    assert not ran["planted"].exists()


@pytest.mark.parametrize(
    ("key", "value", "program"),
    [
        ("core.fsmonitor", "x", True),
        ("core.sshCommand", "x", True),
        ("filter.Weird.Clean", "x", True),
        ("includeIf.gitdir:/x/.path", "/tmp/c", True),
        ("alias.st", "!sh -c x", True),
        ("alias.co", "checkout", False),
        ("submodule.m.update", "!x", True),
        ("submodule.m.update", "rebase", False),
        ("uploadpack.packObjectsHook", "x", True),
        ("core.worktree", "/x", False),
        ("user.name", "x", False),
    ],
)
def test_which_keys_are_program_valued(key: str, value: str, program: bool) -> None:
    assert (git_key_risk(key, value) is not None) is program
