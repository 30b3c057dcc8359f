"""All fifteen git tools end to end: a real `meith serve` and the real `meith call` CLI against
real repositories, with the plugin approved and grants given through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.git.conftest import git_env

pytestmark = pytest.mark.slow


@pytest.fixture
def server(meith_server, git_home: Path):
    env = git_env(git_home)
    return meith_server(env={"HOME": env["HOME"]}, plugins="git")


def ok(srv, tool: str, args: dict) -> object:
    envelope = srv.call(tool, args)
    assert envelope["ok"], (tool, envelope)
    return envelope["content"]


PRIVILEGED = {
    "git_stage": {"paths": ["n.txt"]},
    "git_unstage": {"paths": ["n.txt"]},
    "git_commit": {"message": "m"},
    "git_branch": {"action": "create", "name": "x"},
    "git_worktree": {"action": "create", "path": "../wt", "branch": "wt"},
    "git_restore": {"paths": ["n.txt"], "confirm": True},
    "git_checkpoint_create": {},
    "git_checkpoint_restore": {"id": "abc-12345678", "confirm": True},
}


def test_privileged_tools_are_denied_until_approved_and_granted(server, make_repo, sh):
    srv = server
    repo = make_repo()
    tools = {t["name"]: t for t in json.loads(srv.cli("tools", "--json").stdout)}
    assert tools["git_commit"]["capabilities"] == ["writes-files"]
    assert tools["git_checkpoint_restore"]["capabilities"] == ["destructive"]
    (repo / "n.txt").write_text("n\n")
    refs_before = sh(repo, "for-each-ref")
    for name, args in PRIVILEGED.items():
        denied = srv.call(name, {"cwd": str(repo), **args})
        assert denied["error"]["code"] == "PERMISSION_DENIED", name  # plugin not approved
        assert denied["error"]["details"]["gate"] == "provider", name
    srv.approve("git")
    for name, args in PRIVILEGED.items():
        denied = srv.call(name, {"cwd": str(repo), **args})
        assert denied["error"]["code"] == "PERMISSION_DENIED", name  # no grant for the cli
        assert denied["error"]["details"]["gate"] == "caller", name
    assert sh(repo, "for-each-ref") == refs_before
    assert sh(repo, "status", "--porcelain") == "?? n.txt\n"
    ok(srv, "git_status", {"cwd": str(repo)})  # read-only needs neither
    srv.grant("writes-files", tool="git_stage")
    staged = ok(srv, "git_stage", {"cwd": str(repo), "paths": ["n.txt"]})
    assert [f["path"] for f in staged["staged"]] == ["n.txt"]


def test_all_fifteen_tools_through_meith_call(server, make_repo, sh):
    srv = server
    srv.approve("git")
    srv.grant("writes-files")
    srv.grant("destructive")
    repo = make_repo(files={"a.txt": "one\ntwo\n"})
    cwd = str(repo)

    status = ok(srv, "git_status", {"cwd": cwd})
    assert status["isRepo"] is True
    assert status["branch"] == "main"

    (repo / "a.txt").write_text("one\nTWO\n")
    (repo / "b.txt").write_text("b\n")
    diff = ok(srv, "git_diff", {"cwd": cwd, "includePatches": False})
    assert {f["path"]: f["status"] for f in diff["files"]} == {
        "a.txt": "modified",
        "b.txt": "untracked",
    }

    checkpoint = ok(srv, "git_checkpoint_create", {"cwd": cwd, "label": "before"})
    listed = ok(srv, "git_checkpoint_list", {"cwd": cwd})
    assert [c["id"] for c in listed] == [checkpoint["id"]]

    staged = ok(srv, "git_stage", {"cwd": cwd, "paths": ["a.txt", "b.txt"]})
    assert len(staged["staged"]) == 2
    unstaged = ok(srv, "git_unstage", {"cwd": cwd, "paths": ["b.txt"]})
    assert [f["path"] for f in unstaged["staged"]] == ["a.txt"]

    profile = {"id": "gitacct_e2e", "label": "E2E", "name": "E2E User", "email": "e2e@x.example"}
    proc = srv.cli(
        "settings",
        "set",
        "git",
        json.dumps({"identityProfiles": [profile], "activeIdentityProfileId": "gitacct_e2e"}),
    )
    assert proc.returncode == 0, proc.stderr
    bad = srv.cli("settings", "set", "git", json.dumps({"identityProfiles": [{"name": "x"}]}))
    assert bad.returncode != 0  # the section is validated with the plugin's model
    committed = ok(srv, "git_commit", {"cwd": cwd, "message": "second"})
    assert "second" in committed["output"]
    assert sh(repo, "log", "-1", "--format=%an|%cn").strip() == "E2E User|E2E User"

    log = ok(srv, "git_log", {"cwd": cwd, "limit": 5})
    assert [e["subject"] for e in log] == ["second", "initial"]
    blame = ok(srv, "git_blame", {"cwd": cwd, "path": "a.txt"})
    assert [ln["summary"] for ln in blame["lines"]] == ["initial", "second"]

    branches = ok(srv, "git_branch", {"cwd": cwd, "action": "create", "name": "topic"})
    assert [b["name"] for b in branches] == ["main", "topic"]
    branches = ok(srv, "git_branch", {"cwd": cwd, "action": "switch", "name": "topic"})
    assert [b["name"] for b in branches if b["current"]] == ["topic"]
    ok(srv, "git_branch", {"cwd": cwd, "action": "switch", "name": "main"})

    worktrees = ok(
        srv, "git_worktree", {"cwd": cwd, "action": "create", "path": "../e2e-wt", "branch": "wt"}
    )
    assert len(worktrees) == 2
    worktrees = ok(
        srv,
        "git_worktree",
        {"cwd": cwd, "action": "remove", "path": worktrees[1]["path"], "confirm": True},
    )
    assert len(worktrees) == 1

    compare = ok(srv, "git_checkpoint_compare", {"cwd": cwd, "left": checkpoint["id"]})
    assert compare["left"] == checkpoint["ref"]
    assert {f["path"] for f in compare["files"]} == {"b.txt"}

    (repo / "a.txt").write_text("scratch\n")
    restored = ok(srv, "git_restore", {"cwd": cwd, "paths": ["a.txt"], "confirm": True})
    assert (repo / "a.txt").read_text() == "one\nTWO\n"
    assert [f["path"] for f in restored["untracked"]] == ["b.txt"]

    back = ok(
        srv,
        "git_checkpoint_restore",
        {"cwd": cwd, "id": checkpoint["id"], "confirm": True, "force": True},
    )
    assert back["checkpoint"]["id"] == checkpoint["id"]
    assert sh(repo, "log", "-1", "--format=%s").strip() == "second"  # HEAD did not move

    identities = ok(srv, "git_identity_detect", {"cwd": cwd})
    assert identities["root"] == cwd
    assert {"source": "global", "name": "Global User"}.items() <= identities["suggestions"][
        0
    ].items()


def test_cwd_defaults_to_the_callers_directory(server, make_repo):
    srv = server
    repo = make_repo()
    proc = srv.cli("call", "git_status", "--json", cwd=str(repo))
    envelope = json.loads(proc.stdout)
    assert envelope["content"]["root"] == str(repo)
