"""`mcptest`: test tools for the MCP bridge tests, loaded into a real `meith serve` through an
entry point on PYTHONPATH (see `install`). Markers go to $MCPTEST_DIR."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from meith_core import ToolContext, ToolDefinition, hookimpl, tool


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EchoArgs(_Args):
    value: Any = None


class SleepArgs(_Args):
    seconds: float = Field(default=120.0, le=600)
    marker: str = "sleep"


class StepsArgs(_Args):
    count: int = Field(default=3, ge=1, le=50)


class PrintArgs(_Args):
    lines: int = Field(default=200, ge=1, le=10_000)


class WriteArgs(_Args):
    name: str = "written"


def _mark(name: str, text: str) -> None:
    directory = os.environ.get("MCPTEST_DIR")
    if directory:
        with open(Path(directory) / name, "a") as fh:
            fh.write(text + "\n")


async def mcptest_echo(ctx: ToolContext, args: EchoArgs) -> dict[str, Any]:
    """Return the value and who called."""
    return {"value": args.value, "caller": ctx.caller.caller.value}


async def mcptest_sleep(ctx: ToolContext, args: SleepArgs) -> dict[str, Any]:
    """Sleep until cancelled; marks the start and the cancellation."""
    _mark(args.marker + ".started", ctx.request_id)
    ctx.progress("sleeping", 0.0)
    try:
        await asyncio.wait_for(ctx.wait_cancelled(), timeout=args.seconds)
    except TimeoutError:
        return {"slept": args.seconds}
    _mark(args.marker + ".cancelled", ctx.request_id)
    return {"cancelled": True}


async def mcptest_steps(ctx: ToolContext, args: StepsArgs) -> dict[str, Any]:
    """Progress and a log line per step, and a text artifact."""
    for i in range(args.count):
        ctx.progress(f"step {i + 1}", (i + 1) / args.count)
        ctx.log("info", f"did step {i + 1}")
        await asyncio.sleep(0)
    ctx.artifact("text/plain", name="note.txt", data=b"hello from mcptest")
    return {"steps": args.count}


def mcptest_print(ctx: ToolContext, args: PrintArgs) -> dict[str, Any]:
    """Print to stdout and stderr (a badly behaved plugin), then answer."""
    for i in range(args.lines):
        print(f'{{"jsonrpc": "2.0", "id": {i}, "result": "not from the bridge"}}')
        print(f"stderr noise {i}", file=sys.stderr)
    sys.stdout.flush()
    return {"printed": args.lines}


async def mcptest_write(ctx: ToolContext, args: WriteArgs) -> dict[str, Any]:
    """A privileged tool (writes-files) that only marks that it ran."""
    _mark(args.name, ctx.request_id)
    return {"written": args.name}


class ConfigureArgs(_Args):
    value: str = "on"


async def mcptest_configure(ctx: ToolContext, args: ConfigureArgs) -> dict[str, Any]:
    """A privileged tool on global state (every session's configuration): marks that it ran."""
    _mark("configured", args.value)
    return {"configured": args.value}


class McpTestPlugin:
    @hookimpl
    def meith_tools(self) -> list[ToolDefinition]:
        return [
            tool(mcptest_echo, capabilities=["read-only"]),
            tool(mcptest_sleep, capabilities=["read-only"]),
            tool(mcptest_steps, capabilities=["read-only"]),
            tool(mcptest_print, capabilities=["read-only"]),
            tool(mcptest_write, capabilities=["writes-files"]),
            tool(mcptest_configure, capabilities=["writes-files"], acts_on="global:settings"),
        ]


def install(target: Path) -> Path:
    """Make `mcptest` discoverable by entry points in a directory for PYTHONPATH."""
    from tests.harness import install_plugin_module

    return install_plugin_module(target, "mcptest", Path(__file__).read_text(), "McpTestPlugin")
