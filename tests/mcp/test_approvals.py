"""Approval of an agent's privileged call when nobody answers the elicitation, and on the
`meith serve --approvals prompt` terminal for clients that cannot elicit: the SDK's Client over
a real `meith mcp` subprocess against a real `meith serve`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from tests.harness import wait_until
from tests.mcp.conftest import ERAS, audit_records, stdio_client

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

#: The runtime's approval wait, shortened through its tuning knob so the test does not sit
#: out the production 60 s.
SHORT_WAIT = {"MEITH_APPROVAL_TIMEOUT_S": "2"}


def _text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


def _writes(srv: Any) -> list[dict[str, Any]]:
    return [r for r in audit_records(srv) if r.get("toolName") == "mcptest_write"]


@pytest.mark.parametrize("era", ERAS)
async def test_an_unanswered_elicitation_is_a_denial_and_the_next_call_works(
    agent_server: Any, era: str, marks: Path
) -> None:
    srv = agent_server(env=SHORT_WAIT)
    srv.approve("mcptest")
    asked: list[str] = []

    async def answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        if len(asked) == 1:
            if era == "legacy":
                await anyio.sleep_forever()  # the person never answers
            # The 2026-07-28 era asks between two requests: the person "answers" only once
            # the runtime has given up, and that late yes must not count.
            await anyio.to_thread.run_sync(lambda: wait_until(lambda: _writes(srv), timeout=60))
        return types.ElicitResult(action="accept", content={"decision": "allow_once"})

    async with stdio_client(srv, mode=era, name="idle-agent", elicitation_callback=answer) as c:
        unanswered = await c.call_tool("mcptest_write", {"name": "never"})
        echo = await c.call_tool("mcptest_echo", {"value": "after"})
        answered = await c.call_tool("mcptest_write", {"name": "answered"})
    assert unanswered.is_error is True
    assert _text(unanswered).startswith("PERMISSION_DENIED")
    assert "no answer within 2s" in _text(unanswered)
    assert not (marks / "never").exists()
    assert echo.structured_content == {"value": "after", "caller": "agent"}
    assert answered.is_error is False, _text(answered)
    assert (marks / "answered").exists()
    assert len(asked) == 2
    denied, allowed = _writes(srv)
    assert (denied["decision"], denied["caller"], denied["label"]) == ("deny", "agent", "idle-agent")
    # Who (did not) answer: the calling agent's connection, named.
    assert "the calling agent connection 'idle-agent': no answer within 2s" in denied["reason"]
    assert allowed["decision"] == "allow"
    assert "MCP elicitation" in allowed["reason"]
