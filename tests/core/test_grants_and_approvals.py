"""Grants (standing, session, expiry, tool, cwd prefix, uses) and the `meith_approve` hook."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from meith_core import (
    ApprovalAnswer,
    ApprovalRequest,
    CallerInfo,
    CallerKind,
    CancelToken,
    ErrorCode,
    Runtime,
    ToolContext,
    hookimpl,
)
from meith_core.policy.grants import StandingGrants, new_grant
from meith_core.protocol.call_approval import APPROVED, WAITING_FOR_APPROVAL
from tests.core.support import CwdArgs, NoArgs, TextArgs, make_tool


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@pytest.fixture
def scoped(runtime: Runtime) -> Runtime:
    """App tools: write_a / write_b (writes-files), wipe (writes-files + destructive), read;
    each returns the grant scope it ran under."""

    async def write_a(ctx: ToolContext, args: TextArgs) -> Any:
        return {"scope": ctx.grant_scope}

    async def write_b(ctx: ToolContext, args: TextArgs) -> Any:
        return {"scope": ctx.grant_scope}

    async def write_in(ctx: ToolContext, args: CwdArgs) -> Any:
        return {"scope": ctx.grant_scope}

    async def wipe(ctx: ToolContext, args: NoArgs) -> str:
        return "wiped"

    async def read(ctx: ToolContext, args: NoArgs) -> str:
        return "read"

    runtime.register(
        [
            make_tool(write_a, "writes-files", input=TextArgs),
            make_tool(write_b, "writes-files", input=TextArgs),
            make_tool(write_in, "writes-files", input=CwdArgs, acts_on="path:cwd"),
            make_tool(wipe, "writes-files", "destructive"),
            make_tool(read),
        ]
    )
    return runtime


def standing(runtime: Runtime) -> StandingGrants:
    """A separate editor of grants.json, as the `meith grants` CLI is."""
    return StandingGrants(runtime.home.grants_path)


def reason_of(runtime: Runtime) -> str:
    return str(list(runtime.audit.read())[-1]["reason"])


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


def test_grants_are_only_for_cli_and_agent_callers() -> None:
    for kind in ("renderer", "internal", "plugin"):
        with pytest.raises(ValueError, match="grants are for cli and agent"):
            new_grant(kind, ["writes-files"])
    with pytest.raises(ValueError, match="at least one capability"):
        new_grant("cli", [])
    with pytest.raises(ValueError, match="uses"):
        new_grant("cli", ["writes-files"], uses=0)
    with pytest.raises(ValueError, match="unknown capability"):
        new_grant("cli", ["everything"])


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


# -- the meith_approve hook -------------------------------------------------------------


class Approver:
    """A plugin implementing `meith_approve` with scripted answers."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.requests: list[ApprovalRequest] = []

    @hookimpl
    def meith_approve(self, request: ApprovalRequest) -> Any:
        self.requests.append(request)
        return self.answers.pop(0) if self.answers else None


def with_approver(runtime: Runtime, approver: Any, plugin_id: str = "approver") -> Any:
    runtime.load_plugin(plugin_id, approver)
    return approver


@pytest.mark.anyio
async def test_allow_once_allows_this_call_and_asks_again_next_time(scoped: Runtime) -> None:
    approver = with_approver(scoped, Approver(ApprovalAnswer.ALLOW_ONCE))
    cli = scoped.open_session("cli")
    assert (await scoped.call("write_a", caller=cli)).ok
    assert reason_of(scoped) == "approved once at prompt"
    assert (await scoped.call("write_a", caller=cli)).error.code is ErrorCode.PERMISSION_DENIED
    assert len(approver.requests) == 2


@pytest.mark.anyio
async def test_allow_session_is_remembered_per_tool(scoped: Runtime) -> None:
    approver = with_approver(scoped, Approver(ApprovalAnswer.ALLOW_SESSION))
    agent = scoped.open_session("agent")
    assert (await scoped.call("write_a", caller=agent)).ok
    assert reason_of(scoped) == "approved for this session at prompt"
    assert (await scoped.call("write_a", caller=agent)).ok  # not asked again
    assert len(approver.requests) == 1
    assert reason_of(scoped).startswith("session grant g_")
    # Another tool of the same capability is asked about again (and denied: no answer left).
    assert (await scoped.call("write_b", caller=agent)).error.code is ErrorCode.PERMISSION_DENIED
    assert len(approver.requests) == 2
    # Another session of the same kind is not covered.
    other = scoped.open_session("agent")
    assert (await scoped.call("write_a", caller=other)).error.code is ErrorCode.PERMISSION_DENIED


@pytest.mark.anyio
async def test_deny_at_the_prompt_denies(scoped: Runtime) -> None:
    with_approver(scoped, Approver(ApprovalAnswer.DENY))
    cli = scoped.open_session("cli")
    result = await scoped.call("write_a", caller=cli)
    assert result.error.code is ErrorCode.PERMISSION_DENIED
    assert reason_of(scoped) == "denied at prompt"


@pytest.mark.anyio
async def test_no_answer_from_any_approver_denies(scoped: Runtime) -> None:
    approver = with_approver(scoped, Approver(None))
    cli = scoped.open_session("cli")
    assert (await scoped.call("write_a", caller=cli)).error.code is ErrorCode.PERMISSION_DENIED
    assert reason_of(scoped) == "no grant for writes-files"
    assert len(approver.requests) == 1


@pytest.mark.anyio
async def test_the_first_answer_that_is_not_none_wins(scoped: Runtime) -> None:
    silent = with_approver(scoped, Approver(None, None), "silent")
    deciding = with_approver(scoped, Approver(ApprovalAnswer.ALLOW_ONCE), "deciding")
    cli = scoped.open_session("cli")
    assert (await scoped.call("write_a", caller=cli)).ok
    assert len(silent.requests) + len(deciding.requests) >= 1
    assert len(deciding.requests) == 1


@pytest.mark.anyio
async def test_the_approver_sees_the_call_with_a_redacted_summary(
    scoped: Runtime, tmp_path: Path
) -> None:
    approver = with_approver(scoped, Approver(ApprovalAnswer.DENY))
    cli = scoped.open_session("cli", cwd=str(tmp_path))
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2
    await scoped.call("write_a", {"text": f"push with {token}"}, caller=cli, request_id="req_ask")
    [request] = approver.requests
    assert request.request_id == "req_ask"
    assert request.tool_name == "write_a"
    assert request.plugin_id == "app"
    assert request.caller.session_id == cli.session_id
    assert request.cwd == str(tmp_path)
    assert [c.value for c in request.privileged] == ["writes-files"]
    assert token not in request.arguments_summary
    assert request.arguments_summary == '{"text":"[REDACTED_TEXT 54 chars]"}'


@pytest.mark.anyio
async def test_the_approver_is_not_asked_when_no_prompt_is_needed(scoped: Runtime) -> None:
    approver = with_approver(scoped, Approver(ApprovalAnswer.DENY))
    cli = scoped.open_session("cli")
    await scoped.call("read", caller=cli)  # not privileged
    await scoped.call("write_a")  # internal: trusted
    scoped.grant(cli, ["writes-files"])
    assert (await scoped.call("write_a", caller=cli)).ok  # a grant matches
    assert (await scoped.call("write_a", caller=CallerInfo(CallerKind.AGENT))).error
    assert approver.requests == []


@pytest.mark.anyio
async def test_an_async_approver_hook_is_awaited(scoped: Runtime) -> None:
    class AsyncApprover:
        @hookimpl
        async def meith_approve(self, request: ApprovalRequest) -> ApprovalAnswer:
            await anyio.sleep(0)
            return ApprovalAnswer.ALLOW_ONCE

    scoped.load_plugin("async_approver", AsyncApprover())
    assert (await scoped.call("write_a", caller=scoped.open_session("cli"))).ok


@pytest.mark.anyio
async def test_an_approver_answering_with_the_string_value_is_understood(scoped: Runtime) -> None:
    with_approver(scoped, Approver("allow_once"))
    assert (await scoped.call("write_a", caller=scoped.open_session("cli"))).ok


@pytest.mark.anyio
@pytest.mark.parametrize("answer", ["yes", True, 1, {"allow": True}])
async def test_an_approver_with_a_nonsense_answer_denies(scoped: Runtime, answer: Any) -> None:
    with_approver(scoped, Approver(answer))
    result = await scoped.call("write_a", caller=scoped.open_session("cli"))
    assert result.error.code is ErrorCode.PERMISSION_DENIED


@pytest.mark.anyio
async def test_an_approver_that_raises_denies_and_the_runtime_goes_on(scoped: Runtime) -> None:
    class Broken:
        @hookimpl
        def meith_approve(self, request: ApprovalRequest) -> None:
            raise RuntimeError("prompt crashed")

    scoped.load_plugin("broken", Broken())

    async def raising(request: ApprovalRequest) -> ApprovalAnswer | None:
        raise OSError("no terminal")

    scoped.approvers.append(raising)
    cli = scoped.open_session("cli")
    result = await scoped.call("write_a", caller=cli)
    assert result.error.code is ErrorCode.PERMISSION_DENIED
    assert (await scoped.call("read", caller=cli)).ok


@pytest.mark.anyio
async def test_a_call_cancelled_while_its_prompt_is_open_is_denied(scoped: Runtime) -> None:
    asked = anyio.Event()
    prompt_ended = anyio.Event()

    async def slow_person(request: ApprovalRequest) -> ApprovalAnswer | None:
        asked.set()
        try:
            await anyio.sleep(3600)
        finally:
            prompt_ended.set()
        return ApprovalAnswer.ALLOW_ONCE

    scoped.approvers.append(slow_person)
    token = CancelToken()
    results: list[Any] = []
    async with anyio.create_task_group() as tg:

        async def run() -> None:
            results.append(
                await scoped.call("write_a", caller=scoped.open_session("cli"), cancel=token)
            )

        tg.start_soon(run)
        await asked.wait()
        token.cancel()
    assert results[0].error.code is ErrorCode.PERMISSION_DENIED
    assert reason_of(scoped) == "cancelled while waiting for approval"
    await prompt_ended.wait()  # the prompt itself was cancelled, not left behind


@pytest.mark.anyio
async def test_a_session_revoked_while_its_prompt_is_open_is_denied(scoped: Runtime) -> None:
    cli = scoped.open_session("cli")

    async def revoke_then_allow(request: ApprovalRequest) -> ApprovalAnswer:
        scoped.permissions.revoke_session(cli.session_id or "")
        return ApprovalAnswer.ALLOW_SESSION

    scoped.approvers.append(revoke_then_allow)
    assert (await scoped.call("write_a", caller=cli)).error.code is ErrorCode.PERMISSION_DENIED
    assert "revoked" in reason_of(scoped)


@pytest.mark.anyio
@pytest.mark.parametrize("shared", [False, True])
async def test_a_connection_that_shares_its_approvals_races_the_local_user(
    scoped: Runtime, shared: bool
) -> None:
    """An MCP task's approval: the calling connection is asked beside the others (the first
    answer wins, the loser is withdrawn) and the caller is told where the call waits; without
    sharing, the connection's answer is final and nobody else is asked."""
    agent = scoped.open_session("agent")
    withdrawn = asyncio.Event()

    async def connection(request: ApprovalRequest) -> Any:
        if not shared:
            return ApprovalAnswer.DENY
        try:
            await asyncio.Event().wait()
        finally:
            withdrawn.set()

    person = []

    async def console(request: ApprovalRequest) -> Any:
        person.append(request)
        return ApprovalAnswer.ALLOW_ONCE

    scoped.set_session_approver(agent.session_id or "", connection, shared=shared)
    scoped.set_console_approver(scoped.open_session("cli").session_id or "", console)
    said: list[str] = []
    result = await scoped.call(
        "write_a", caller=agent, on_event=lambda e: said.append(str(e.get("message")))
    )
    if shared:
        assert result.ok
        assert withdrawn.is_set()
        assert said == [WAITING_FOR_APPROVAL, APPROVED]
    else:
        assert result.error.code is ErrorCode.PERMISSION_DENIED
        assert (person, said) == ([], [])


def test_concurrent_processes_never_spend_more_uses_than_a_grant_has(tmp_path: Path) -> None:
    """Eight processes race for three uses through the file lock: exactly three win, and the
    spent grant is gone from the file."""
    import subprocess
    import sys

    path = tmp_path / "grants.json"
    grant = StandingGrants(path).add(new_grant("cli", ["writes-files"], uses=3))
    code = (
        "import sys; from pathlib import Path;"
        "from meith_core.policy.grants import StandingGrants;"
        "print(StandingGrants(Path(sys.argv[1])).consume_use(sys.argv[2]))"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(path), grant.id], stdout=subprocess.PIPE, text=True
        )
        for _ in range(8)
    ]
    answers = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert sorted(answers) == ["False"] * 5 + ["True"] * 3
    assert StandingGrants(path).current() == []
