"""Who is asked for a call approval no grant covers, in order, through the `meith_approve` hook:
what each answer means, the first answer wins, nonsense and failures deny, and a call cancelled
or a session revoked while its prompt is open is denied."""

from __future__ import annotations

import asyncio
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
    hookimpl,
)
from meith_core.protocol import call_approval_desk
from meith_core.protocol.call_approval import APPROVED
from tests.core.support import reason_of


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
async def test_the_approver_sees_the_call_whole_with_only_the_secret_masked(
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
    assert token not in request.view.text
    assert request.view.text == "text: push with [REDACTED]"


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
        assert said == [
            f"waiting for approval in the meith ui console: denied after "
            f"{call_approval_desk.CALL_APPROVAL_TIMEOUT_S:g} s without an answer",
            APPROVED,
        ]
    else:
        assert result.error.code is ErrorCode.PERMISSION_DENIED
        assert (person, said) == ([], [])
