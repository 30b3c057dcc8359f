"""An in-process runtime never writes to its host's stdout (it may be a protocol stream)."""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = """
import asyncio, tempfile
from pathlib import Path
from pydantic import BaseModel, ConfigDict
from meith_core import MeithHome, Runtime, ToolContext, tool

class A(BaseModel):
    model_config = ConfigDict(extra="forbid")

@tool(capabilities=["read-only"])
async def boom(ctx: ToolContext, args: A) -> None:
    "Fails with a traceback the runtime logs."
    raise RuntimeError("kaboom")

async def main():
    async with Runtime(MeithHome(Path(tempfile.mkdtemp())), load_plugins=False) as rt:
        rt.register(boom)
        result = await rt.call("boom", {})
        print("RESULT", result.error.code)

asyncio.run(main())
"""


@pytest.mark.slow
def test_tool_failures_are_logged_to_stderr_not_stdout() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "RESULT TOOL_FAILED\n"
    assert "kaboom" in proc.stderr  # the traceback went to the log, on stderr
