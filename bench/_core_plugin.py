"""A benchmark-only plugin with one trivial read-only tool, `bench_echo`.

Never installed: bench_core.py writes a `*.dist-info/entry_points.txt` naming this module into
a temporary directory on the `meith serve` process's PYTHONPATH, so ordinary entry-point
discovery loads it like any third-party plugin.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from meith_core import ToolContext, ToolDefinition, hookimpl, tool


class EchoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(default="", description="Returned unchanged")
    repeat: int = Field(
        default=1, ge=1, le=1 << 16, description="Return `text` this many times over"
    )


@tool(capabilities=["read-only"])
async def bench_echo(ctx: ToolContext, args: EchoArgs) -> dict[str, Any]:
    """Return the input unchanged, or `repeat` times over: a large answer to a small request
    (the bare round trip of a result as large as a read's) (benchmark tool)."""
    return {"text": args.text * args.repeat if args.repeat > 1 else args.text}


class BenchPlugin:
    @hookimpl
    def meith_tools(self) -> list[ToolDefinition]:
        return [bench_echo]
