"""Reading the trail as it grows: an intent without its outcome (the host crashed mid-call) shows
as interrupted in `meith audit`, and one with its outcome is shown once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from meith_core.audit.follow import collect
from tests.harness import MEITH, base_env

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
