"""A privileged call never runs unaudited: its intent is recorded before it runs (a denied call
writes none), and one refused because the trail cannot be written consumes no grant."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict

from meith_core import ErrorCode, Runtime, ToolContext, tool
from tests.core.support import NoArgs, TextArgs, make_tool

pytestmark = pytest.mark.anyio


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


@tool(capabilities=["writes-files"])
async def privileged_write(ctx: ToolContext, args: _Args) -> str:
    """A privileged tool."""
    return "written"


async def test_an_unauditable_call_does_not_use_up_a_one_use_grant(runtime) -> None:
    runtime.register(privileged_write)
    agent = runtime.open_session("agent")
    runtime.grant(agent, ["writes-files"], uses=1)
    runtime.audit.close()
    runtime.home.audit_path.unlink(missing_ok=True)
    runtime.home.audit_path.mkdir()  # the trail cannot be written
    refused = await runtime.call("privileged_write", {}, caller=agent)
    assert refused.error is not None
    assert refused.error.code == "PERMISSION_DENIED"
    assert "audit trail unavailable" in refused.error.message
    runtime.home.audit_path.rmdir()
    allowed = await runtime.call("privileged_write", {}, caller=agent)
    assert allowed.content == "written"  # the grant was still there
    again = await runtime.call("privileged_write", {}, caller=agent)
    assert again.error is not None
    assert again.error.code == "PERMISSION_DENIED"


@pytest.mark.anyio
async def test_a_privileged_call_writes_an_intent_before_it_runs(runtime: Runtime) -> None:
    seen: list[list[str | None]] = []

    async def write(ctx: ToolContext, args: TextArgs) -> str:
        # While the tool runs, its intent is already on disk.
        seen.append([r.get("kind") for r in runtime.audit.read()])
        return "written"

    async def read(ctx: ToolContext, args: NoArgs) -> str:
        return "read"

    runtime.register([make_tool(write, "writes-files", input=TextArgs), make_tool(read)])
    cli = runtime.open_session("cli")
    runtime.grant(cli, ["writes-files"])
    assert (await runtime.call("write", {"text": "x"}, caller=cli, request_id="req_w")).ok
    assert (await runtime.call("read", request_id="req_r")).ok
    assert seen == [["intent"]]
    records = list(runtime.audit.read())
    assert [(r["requestId"], r.get("kind")) for r in records] == [
        ("req_w", "intent"),
        ("req_w", None),
        ("req_r", None),  # read-only calls pay for no intent record
    ]
    intent = records[0]
    assert intent["sessionId"] == cli.session_id
    assert intent["capabilities"] == ["writes-files"]
    assert intent["reason"] == records[1]["reason"]
    assert intent["argsSummary"] == '{"text":"[REDACTED_TEXT 1 chars]"}'


@pytest.mark.anyio
async def test_denied_calls_write_no_intent(runtime: Runtime) -> None:
    async def write(ctx: ToolContext, args: NoArgs) -> str:
        return "written"

    runtime.register(make_tool(write, "writes-files"))
    result = await runtime.call("write", caller=runtime.open_session("agent"))
    assert result.error.code is ErrorCode.PERMISSION_DENIED
    assert [r.get("kind") for r in runtime.audit.read()] == [None]
