"""Privileged calls are recorded before they run, so a crash mid-call leaves a trace that
`meith audit` shows as interrupted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from meith_core import ErrorCode, Runtime, ToolContext
from meith_core.audit.follow import collect
from tests.core.support import NoArgs, TextArgs, make_tool
from tests.harness import MEITH, base_env


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


_CRASHING_HOST = """
import asyncio, os, sys
from pathlib import Path
from pydantic import BaseModel, ConfigDict
from meith_core import tool
from meith_core.base.home import MeithHome
from meith_core.host.runtime import Runtime

class NoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

async def deploy(ctx, args: NoArgs) -> None:
    os._exit(9)  # the host dies mid-call: no outcome record can follow

async def main() -> None:
    rt = Runtime(MeithHome(Path(sys.argv[1])), load_plugins=False)
    await rt.start()
    rt.register(tool(deploy, capabilities=["destructive"], input=NoArgs, description="deploy"))
    await rt.call("deploy", request_id="req_crash")

asyncio.run(main())
"""


@pytest.mark.slow
def test_a_crash_mid_call_shows_as_interrupted(tmp_path: Path) -> None:
    home = tmp_path / "home"
    crashed = subprocess.run(
        [sys.executable, "-c", _CRASHING_HOST, str(home)], timeout=120, check=False
    )
    assert crashed.returncode == 9
    env = base_env(home)
    done = subprocess.run(
        [MEITH, "audit", "--interrupted", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    [record] = [json.loads(line) for line in done.stdout.splitlines()]
    assert (record["requestId"], record["toolName"]) == ("req_crash", "deploy")
    assert record["outcome"] == "interrupted"
    table = subprocess.run(
        [MEITH, "audit"], env=env, capture_output=True, text=True, timeout=60
    ).stdout
    assert "deploy" in table
    assert "interrupted" in table
    assert subprocess.run([MEITH, "audit", "verify"], env=env, timeout=60).returncode == 0


def test_an_intent_with_its_outcome_is_not_shown_twice() -> None:
    records = [
        {"id": "1", "ts": 1, "kind": "intent", "sessionId": "s", "requestId": "r", "pid": 1},
        {"id": "2", "ts": 2, "sessionId": "s", "requestId": "r", "outcome": "ok"},
        # The same request id from another session does not close this one's intent.
        {"id": "3", "ts": 3, "kind": "intent", "sessionId": "s", "requestId": "q", "pid": 7},
        {"id": "4", "ts": 4, "sessionId": "other", "requestId": "q", "outcome": "ok"},
    ]
    shown = collect(iter(records), 10, lambda r: True, live_pids={7})
    assert [(r["id"], r["outcome"]) for r in shown] == [("2", "ok"), ("3", "running"), ("4", "ok")]
