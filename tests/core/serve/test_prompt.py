"""The call-approval prompt on the `meith serve` terminal."""

from __future__ import annotations

import io
import os

import pytest

from meith_core import CallerInfo, CallerKind, Capability
from meith_core.protocol.call_approval import ApprovalAnswer, ApprovalRequest
from meith_core.serve.prompt import TerminalApprover


@pytest.mark.anyio
async def test_the_serve_prompt_says_plainly_that_a_process_runs_unconfined() -> None:
    read, write = os.pipe()
    os.write(write, b"d\n")
    out = io.StringIO()
    with open(read, closefd=True) as stdin:
        approver = TerminalApprover(stdin=stdin, out=out, timeout_s=10)
        request = ApprovalRequest(
            request_id="r",
            caller=CallerInfo(CallerKind.AGENT, session_id="agent:s"),
            tool_name="start_dev_server",
            plugin_id="process",
            capabilities=(Capability.STARTS_PROCESS,),
            privileged=(Capability.STARTS_PROCESS,),
            cwd="/src/app",
            arguments_summary="{}",
        )
        assert await approver(request) is ApprovalAnswer.DENY
    os.close(write)
    shown = out.getvalue()
    assert "NOT confined" in shown
    assert "it only starts in /src/app" in shown
