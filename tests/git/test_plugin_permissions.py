"""Capabilities of every tool, and both permission gates on the privileged ones."""

from __future__ import annotations

import pytest

from meith_plugins_git.plugin import Plugin
from tests.git.support import call_ok

pytestmark = pytest.mark.anyio

CAPABILITIES = {
    "git_status": ["read-only"],
    "git_diff": ["read-only"],
    "git_log": ["read-only"],
    "git_blame": ["read-only"],
    "git_identity_detect": ["read-only"],
    "git_stage": ["writes-files"],
    "git_unstage": ["writes-files"],
    "git_commit": ["writes-files"],
    "git_branch": ["writes-files"],
    "git_worktree": ["writes-files"],
    "git_restore": ["destructive"],
    "git_checkpoint_create": ["writes-files"],
    "git_checkpoint_list": ["read-only"],
    "git_checkpoint_compare": ["read-only"],
    "git_checkpoint_restore": ["destructive"],
}


async def test_each_tool_declares_its_capability(runtime, git_home):
    runtime.load_plugin("git", Plugin)
    described = {t["name"]: t for t in runtime.describe() if t["plugin"] == "git"}
    assert {name: t["capabilities"] for name, t in described.items()} == CAPABILITIES
    for tool in described.values():
        assert tool["description"]
        assert tool["inputSchema"]["additionalProperties"] is False


def privileged_calls(repo, checkpoint_id):
    """A valid call of every privileged tool (each works once allowed)."""
    return {
        "git_stage": {"paths": ["new.txt"]},
        "git_unstage": {"paths": ["new.txt"]},
        "git_restore": {"paths": ["README.md"], "confirm": True},
        "git_commit": {"message": "allowed", "__stage__": True},
        "git_branch": {"action": "create", "name": "granted"},
        "git_worktree": {"action": "create", "path": "../granted-wt", "branch": "wt"},
        "git_checkpoint_create": {"label": "granted"},
        "git_checkpoint_restore": {"id": checkpoint_id, "confirm": True, "force": True},
    }


async def test_privileged_tools_are_denied_until_the_plugin_is_approved(
    runtime, git_home, make_repo
):
    runtime.load_plugin("git", Plugin)
    repo = make_repo()
    for name, args in privileged_calls(repo, "abc-12345678").items():
        args = {k: v for k, v in args.items() if not k.startswith("__")}
        res = await runtime.call(name, {"cwd": str(repo), **args})  # internal, trusted caller
        assert res.error is not None, name
        assert res.error.code == "PERMISSION_DENIED", name
        assert res.error.details["gate"] == "provider", name
    # Read-only tools need no approval.
    await call_ok(runtime, "git_status", {"cwd": str(repo)})


@pytest.mark.slow
async def test_cli_sessions_need_a_grant_and_then_every_privileged_tool_works(
    runtime, git_home, make_repo, sh
):
    runtime.load_plugin("git", Plugin)
    runtime.approve_plugin("git")
    repo = make_repo()
    (repo / "new.txt").write_text("new\n")
    cli = runtime.open_session("cli", cwd=str(repo))
    meta = await call_ok(runtime, "git_checkpoint_create", {"cwd": str(repo)})
    calls = privileged_calls(repo, meta["id"])
    for name, args in calls.items():
        args = {k: v for k, v in args.items() if not k.startswith("__")}
        res = await runtime.call(name, {"cwd": str(repo), **args}, caller=cli)
        assert res.error is not None, name
        assert res.error.code == "PERMISSION_DENIED", name
        assert res.error.details["gate"] == "caller", name
    for name in ("git_status", "git_diff", "git_log", "git_checkpoint_list"):
        await call_ok(runtime, name, {"cwd": str(repo)}, caller=cli)
    for name, args in calls.items():
        runtime.grant(cli, CAPABILITIES[name], tool=name)
        if args.pop("__stage__", False):
            (repo / "commit-me.txt").write_text("c\n")
            sh(repo, "add", "commit-me.txt")
        await call_ok(runtime, name, {"cwd": str(repo), **args}, caller=cli)
    assert sh(repo, "log", "-1", "--format=%s").strip() == "allowed"
    assert "granted" in sh(repo, "branch", "--list", "granted")


async def test_a_writes_files_grant_does_not_cover_destructive_tools(runtime, git_home, make_repo):
    runtime.load_plugin("git", Plugin)
    runtime.approve_plugin("git")
    repo = make_repo()
    cli = runtime.open_session("cli", cwd=str(repo))
    runtime.grant(cli, ["writes-files"])
    res = await runtime.call(
        "git_restore", {"cwd": str(repo), "paths": ["README.md"], "confirm": True}, caller=cli
    )
    assert res.error.code == "PERMISSION_DENIED"
