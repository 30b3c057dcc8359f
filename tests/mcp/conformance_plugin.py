"""`conformance`: the fixture tools the MCP conformance suite's server scenarios call, as a meith
plugin (loaded into a real `meith serve` through an entry point on PYTHONPATH, see `install`).

Each is an ordinary meith tool: its result reaches the suite through meith's own pipeline and
bridge, so what the suite checks is meith's behaviour, not the fixture's. `confirm_delete` is
privileged, so that calling it waits for an approval (an MCP task's input request);
`test_trigger_tool_change` touches plugins.json, which the runtime watches for tool-list
changes.
"""

from __future__ import annotations

import asyncio
import base64
import os
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from meith_core import ErrorCode, ToolContext, ToolDefinition, ToolError, hookimpl, tool

#: A 1x1 transparent PNG and a few samples of silent WAV: small real media.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
WAV = (
    b"RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00@\x1f\x00\x00@\x1f\x00\x00"
    b"\x01\x00\x08\x00data\x00\x00\x00\x00"
)


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NoArgs(_Args):
    pass


class GreetArgs(_Args):
    name: str = "World"


class ComputeArgs(_Args):
    seconds: float = Field(default=1.0, ge=0, le=60)
    label: str | None = None


class DeleteArgs(_Args):
    filename: str = "file.txt"


def _text(value: Any) -> str:
    return str(value)


async def test_simple_text(ctx: ToolContext, args: NoArgs) -> str:
    """A text answer."""
    return "This is a simple text response for testing."


async def test_image_content(ctx: ToolContext, args: NoArgs) -> str:
    """An image artifact (image content)."""
    ctx.artifact("image/png", name="pixel.png", data=PNG)
    return "an image"


async def test_audio_content(ctx: ToolContext, args: NoArgs) -> str:
    """An audio artifact (audio content)."""
    ctx.artifact("audio/wav", name="silence.wav", data=WAV)
    return "a sound"


async def test_embedded_resource(ctx: ToolContext, args: NoArgs) -> str:
    """A text artifact (an embedded resource)."""
    ctx.artifact("text/plain", name="note.txt", data=b"This is an embedded resource content.")
    return "a resource"


async def test_multiple_content_types(ctx: ToolContext, args: NoArgs) -> str:
    """Text, an image and a resource."""
    ctx.artifact("image/png", name="pixel.png", data=PNG)
    ctx.artifact("application/json", name="data.json", data=b'{"test": "data", "value": 123}')
    return "Multiple content types test:"


async def test_error_handling(ctx: ToolContext, args: NoArgs) -> str:
    """Always fails (a tool error)."""
    raise ToolError(ErrorCode.TOOL_FAILED, "This tool intentionally returns an error for testing")


async def test_tool_with_progress(ctx: ToolContext, args: NoArgs) -> str:
    """Three progress steps."""
    for step in range(3):
        ctx.progress(f"step {step + 1}", step / 2)
        await asyncio.sleep(0.05)
    return "Progress test completed"


async def test_logging_tool(ctx: ToolContext, args: NoArgs) -> str:
    """Logs three lines (as log events: log notifications where the client asks for them)."""
    for line in ("Tool execution started", "Tool processing data", "Tool execution completed"):
        ctx.log("info", line)
        await asyncio.sleep(0.05)
    return "Logging test completed"


async def test_tool_with_logging(ctx: ToolContext, args: NoArgs) -> str:
    """The handshake era's name of the same fixture."""
    return await test_logging_tool(ctx, args)


async def test_streaming_elicitation(ctx: ToolContext, args: NoArgs) -> str:
    """Privileged: a call waits for an approval, which never becomes a request on the stream."""
    return "approved"


async def test_trigger_tool_change(ctx: ToolContext, args: NoArgs) -> str:
    """Touches plugins.json, which the runtime watches: the tool list counts as changed."""
    os.utime(ctx.home.plugins_path)
    return "tool list changed"


async def greet(ctx: ToolContext, args: GreetArgs) -> str:
    """Hello, {name}!"""
    return f"Hello, {args.name}!"


async def slow_compute(ctx: ToolContext, args: ComputeArgs) -> str:
    """Sleeps `seconds` (a task when longer than the bridge's threshold); stops when cancelled."""
    try:
        await asyncio.wait_for(ctx.wait_cancelled(), timeout=args.seconds)
    except TimeoutError:
        return f"computed {args.label or ''} in {args.seconds:g}s".strip()
    raise ToolError(ErrorCode.CANCELLED, "cancelled")


async def failing_job(ctx: ToolContext, args: NoArgs) -> str:
    """A tool error after a second."""
    await asyncio.sleep(1.0)
    raise ToolError(ErrorCode.TOOL_FAILED, "the job failed")


async def confirm_delete(ctx: ToolContext, args: DeleteArgs) -> str:
    """Privileged (destructive): waits for the user's approval."""
    return f"deleted {args.filename}"


class ConformancePlugin:
    @hookimpl
    def meith_tools(self) -> list[ToolDefinition]:
        plain = [
            test_simple_text,
            test_image_content,
            test_audio_content,
            test_embedded_resource,
            test_multiple_content_types,
            test_error_handling,
            test_tool_with_progress,
            test_logging_tool,
            test_tool_with_logging,
            test_trigger_tool_change,
            greet,
            slow_compute,
            failing_job,
        ]
        return [
            *(tool(f, capabilities=["read-only"], render=_text) for f in plain),
            tool(test_streaming_elicitation, capabilities=["writes-files"], render=_text),
            tool(confirm_delete, capabilities=["destructive"], render=_text),
        ]


def install(target: Any) -> Any:
    """Make `conformance` discoverable by entry points in a directory for PYTHONPATH."""
    from pathlib import Path

    from tests.harness import install_plugin_module

    return install_plugin_module(
        target, "conformance", Path(__file__).read_text(), "ConformancePlugin"
    )
