"""A privileged call refused because the audit trail is unavailable consumes nothing."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict

from meith_core import ToolContext, tool

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
