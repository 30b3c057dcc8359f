"""Which grant covers a call: standing grants (picked up and dropped without a restart, per
caller kind, per tool, every privileged capability, one budget of uses, pinned to a session, an
invalid file), expiry, and grants confined to a directory."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from meith_core import CallerInfo, ErrorCode, Runtime, ToolContext
from meith_core.policy.grants import StandingGrants, new_grant
from meith_core.protocol.capabilities import parse_capabilities
from tests.core.support import NoArgs, make_tool, now_ms, reason_of


def standing(runtime: Runtime) -> StandingGrants:
    """A separate editor of grants.json, as the `meith grants` CLI is."""
    return StandingGrants(runtime.home.grants_path)


# -- standing grants --------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_standing_grant_is_picked_up_without_restart_and_dropped_when_revoked(
    scoped: Runtime,
) -> None:
    cli = scoped.open_session("cli")
    assert (await scoped.call("write_a", caller=cli)).error.code is ErrorCode.PERMISSION_DENIED
    grant = standing(scoped).add(new_grant("cli", ["writes-files"], source="cli"))
    assert (await scoped.call("write_a", caller=cli)).ok
    assert reason_of(scoped) == f"standing grant {grant.id}"
    assert standing(scoped).revoke(grant.id)
    assert (await scoped.call("write_a", caller=cli)).error.code is ErrorCode.PERMISSION_DENIED


@pytest.mark.anyio
async def test_standing_grants_apply_to_new_sessions_of_their_caller_kind_only(
    scoped: Runtime,
) -> None:
    standing(scoped).add(new_grant("cli", ["writes-files"]))
    for _ in range(3):
        assert (await scoped.call("write_a", caller=scoped.open_session("cli"))).ok
    agent = scoped.open_session("agent")
    assert (await scoped.call("write_a", caller=agent)).error.code is ErrorCode.PERMISSION_DENIED


@pytest.mark.anyio
async def test_the_grants_file_is_0600(scoped: Runtime) -> None:
    standing(scoped).add(new_grant("cli", ["writes-files"]))
    assert (scoped.home.grants_path.stat().st_mode & 0o777) == 0o600


@pytest.mark.anyio
async def test_a_standing_grant_for_one_tool_covers_only_that_tool(scoped: Runtime) -> None:
    standing(scoped).add(new_grant("cli", ["writes-files"], tool="write_a"))
    cli = scoped.open_session("cli")
    assert (await scoped.call("write_a", caller=cli)).ok
    assert (await scoped.call("write_b", caller=cli)).error.code is ErrorCode.PERMISSION_DENIED


@pytest.mark.anyio
async def test_a_grant_must_cover_every_privileged_capability(scoped: Runtime) -> None:
    cli = scoped.open_session("cli")
    scoped.grant(cli, ["writes-files"])
    denied = await scoped.call("wipe", caller=cli)
    assert denied.error.code is ErrorCode.PERMISSION_DENIED
    assert "writes-files, destructive" in denied.error.message
    scoped.grant(cli, ["writes-files", "destructive"])
    assert (await scoped.call("wipe", caller=cli)).ok


@pytest.mark.anyio
async def test_standing_grant_uses_are_one_budget_for_all_sessions(scoped: Runtime) -> None:
    grant = standing(scoped).add(new_grant("cli", ["writes-files"], uses=3))
    one, two = scoped.open_session("cli"), scoped.open_session("cli")
    assert [(await scoped.call("write_a", caller=one)).ok for _ in range(2)] == [True, True]
    assert [(await scoped.call("write_a", caller=two)).ok for _ in range(2)] == [True, False]
    # Spent in the file: a runtime started on this home later finds nothing left.
    assert all(g.id != grant.id for g in StandingGrants(scoped.home.grants_path).current())


@pytest.mark.anyio
async def test_a_standing_grant_pinned_to_a_session_applies_to_that_session_only(
    scoped: Runtime,
) -> None:
    cli, other = scoped.open_session("cli"), scoped.open_session("cli")
    standing(scoped).add(new_grant("cli", ["writes-files"], session=cli.session_id))
    assert (await scoped.call("write_a", caller=cli)).ok
    assert (await scoped.call("write_a", caller=other)).error.code is ErrorCode.PERMISSION_DENIED


@pytest.mark.anyio
async def test_an_invalid_grants_file_grants_nothing_and_says_so(scoped: Runtime) -> None:
    path = scoped.home.grants_path
    path.write_text("{not json")
    cli = scoped.open_session("cli")
    assert (await scoped.call("write_a", caller=cli)).error.code is ErrorCode.PERMISSION_DENIED
    assert scoped.permissions.standing.load_error
    path.write_text(
        json.dumps(
            {
                "version": 1,
                "grants": [
                    {"id": "g_bad", "caller": "cli", "capabilities": ["fly"]},
                    {"id": "g_renderer", "caller": "wizard", "capabilities": ["writes-files"]},
                    {
                        "id": "g_ok",
                        "caller": "cli",
                        "capabilities": ["writes-files"],
                        "tool": "write_b",
                    },
                ],
            }
        )
    )
    assert (await scoped.call("write_a", caller=cli)).error.code is ErrorCode.PERMISSION_DENIED
    assert (await scoped.call("write_b", caller=cli)).ok
    assert "g_bad" in (scoped.permissions.standing.load_error or "")


# -- expiry -----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_an_expired_grant_does_not_apply(scoped: Runtime) -> None:
    cli = scoped.open_session("cli")
    scoped.grant(cli, ["writes-files"], expires_at=now_ms() - 1)
    standing(scoped).add(new_grant("cli", ["writes-files"], expires_at=now_ms() - 1))
    assert (await scoped.call("write_a", caller=cli)).error.code is ErrorCode.PERMISSION_DENIED


@pytest.mark.anyio
async def test_a_grant_that_has_not_expired_applies(scoped: Runtime) -> None:
    cli = scoped.open_session("cli")
    scoped.grant(cli, ["writes-files"], expires_at=now_ms() + 3_600_000)
    assert (await scoped.call("write_a", caller=cli)).ok


# -- cwd prefix -------------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    evil = tmp_path / "repo-evil"
    evil.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / "link-out").symlink_to(outside)
    return {"repo": repo, "sub": repo / "sub", "evil": evil, "link": repo / "link-out"}


@pytest.mark.anyio
async def test_a_cwd_prefix_grant_applies_inside_its_directory_and_passes_its_scope(
    scoped: Runtime, tree: dict[str, Path]
) -> None:
    for where in ("repo", "sub"):
        cli = scoped.open_session("cli", cwd=str(tree[where]))
        scoped.grant(cli, ["writes-files"], cwd_prefix=str(tree["repo"]))
        result = await scoped.call("write_in", caller=cli)
        assert result.ok
        assert result.content == {"scope": os.path.realpath(tree["repo"])}


@pytest.mark.anyio
@pytest.mark.parametrize("where", ["evil", "link"])
async def test_a_cwd_prefix_grant_does_not_apply_outside_its_directory(
    scoped: Runtime, tree: dict[str, Path], where: str
) -> None:
    cli = scoped.open_session("cli", cwd=str(tree[where]))
    scoped.grant(cli, ["writes-files"], cwd_prefix=str(tree["repo"]))
    standing(scoped).add(new_grant("cli", ["writes-files"], cwd_prefix=str(tree["repo"])))
    assert (await scoped.call("write_a", caller=cli)).error.code is ErrorCode.PERMISSION_DENIED


@pytest.mark.anyio
async def test_a_grant_without_prefix_runs_without_a_scope(scoped: Runtime) -> None:
    cli = scoped.open_session("cli")
    scoped.grant(cli, ["writes-files"])
    assert (await scoped.call("write_a", caller=cli)).content == {"scope": None}


@pytest.mark.anyio
async def test_an_agent_name_grant_matches_that_agent_only(runtime: Runtime) -> None:
    async def write(ctx: ToolContext, args: NoArgs) -> str:
        return "written"

    runtime.register([make_tool(write, "writes-files")])
    StandingGrants(runtime.home.grants_path).add(
        new_grant("agent", ["writes-files"], agent="alice")
    )
    session = runtime.open_session("agent")
    alice = dataclasses.replace(session, label="alice")
    bob = dataclasses.replace(session, label="bob")
    unnamed: CallerInfo = session
    assert (await runtime.call("write", caller=alice)).ok
    for other in (bob, unnamed):
        denied = await runtime.call("write", caller=other)
        assert denied.error is not None
        assert denied.error.code is ErrorCode.PERMISSION_DENIED
    cli = runtime.open_session("cli")
    assert (await runtime.call("write", caller=cli)).error is not None


@pytest.mark.anyio
async def test_a_grant_for_a_named_agent_is_held_by_that_agent_only(
    scoped: Runtime, tmp_path: Path
) -> None:
    """What a tool learns of its caller's grants (`ctx.held_grant`: the git plugin's hooks)
    counts a `--agent NAME` grant for that agent, and for no other (it counted for none)."""
    standing(scoped).add(
        new_grant("agent", ["starts-process"], cwd_prefix=str(tmp_path), agent="named")
    )
    named = scoped.open_session("agent", cwd=str(tmp_path), label="named")
    other = scoped.open_session("agent", cwd=str(tmp_path), label="other")
    caps = parse_capabilities(["starts-process"])
    held = scoped.permissions.held(named, "git_commit", caps, str(tmp_path))
    assert held is not None
    assert held.scope == str(tmp_path)
    assert scoped.permissions.held(other, "git_commit", caps, str(tmp_path)) is None
