"""`probe`: a plugin of test tools for the server, client and CLI tests.

Loaded in-process with `runtime.load_plugin("probe", ProbePlugin)`, or into a real `meith serve`
through a `.dist-info` entry point on PYTHONPATH (see `install_probe`). Markers go to
$PROBE_DIR so a test can see what ran, what was cancelled and whether shutdown hooks ran.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from meith_core import NO_TIMEOUT, ErrorCode, ToolContext, ToolDefinition, ToolError, hookimpl, tool


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EchoArgs(_Args):
    value: Any = None
    repeat: int = Field(default=1, ge=1, le=100)


class SleepArgs(_Args):
    seconds: float = 60.0
    marker: str | None = None


class StreamArgs(_Args):
    count: int = Field(default=5, ge=0, le=100_000)


class SpewArgs(_Args):
    size: int = Field(default=65536, ge=1, le=1 << 20)
    marker: str | None = None


class RecordArgs(_Args):
    name: str = "calls"


class WriteArgs(RecordArgs):
    #: Where it "writes" (the caller's directory by default): what a confined grant matches.
    cwd: str = ""


class FailArgs(_Args):
    code: str = "TOOL_FAILED"
    message: str = "probe failure"


def _probe_dir() -> Path | None:
    value = os.environ.get("PROBE_DIR")
    return Path(value) if value else None


def _mark(name: str, text: str = "") -> None:
    directory = _probe_dir()
    if directory is not None:
        with open(directory / name, "a") as fh:
            fh.write(text + "\n")


class ProbePlugin:
    @hookimpl
    def meith_tools(self) -> list[ToolDefinition]:
        return [
            tool(probe_echo, capabilities=["read-only"]),
            tool(probe_whoami, capabilities=["read-only"]),
            tool(probe_sleep, capabilities=["read-only"]),
            tool(probe_stream, capabilities=["read-only"]),
            tool(probe_spew, capabilities=["read-only"], timeout_ms=NO_TIMEOUT),
            tool(probe_record, capabilities=["read-only"]),
            tool(probe_fail, capabilities=["read-only"]),
            tool(probe_write, capabilities=["writes-files"], acts_on="path:cwd"),
            # A plugin that changed: one more tool, asking for one more capability.
            *(
                [tool(probe_spawn, capabilities=["starts-process"], acts_on="path:cwd")]
                if os.environ.get("PROBE_EXTRA_TOOL")
                else []
            ),
        ]

    @hookimpl
    async def meith_startup(self, host: Any) -> None:
        # A plugin that takes its time to start (readiness tests).
        delay = float(os.environ.get("PROBE_STARTUP_DELAY") or 0)
        if delay:
            await asyncio.sleep(delay)
        _mark("started", str(os.getpid()))

    @hookimpl
    def meith_shutdown(self, host: Any) -> None:
        _mark("shutdown", str(os.getpid()))


async def probe_echo(ctx: ToolContext, args: EchoArgs) -> Any:
    """Return the value it was given (`repeat` > 1: a list of that many copies)."""
    return args.value if args.repeat == 1 else [args.value] * args.repeat


async def probe_whoami(ctx: ToolContext, args: _Args) -> dict[str, Any]:
    """The caller identity the host built for this call."""
    c = ctx.caller
    return {
        "caller": c.caller.value,
        "sessionId": c.session_id,
        "cwd": c.cwd,
        "spaceId": c.space_id,
        "tabId": c.tab_id,
        "claimedCaller": c.claimed_caller,
        "label": c.label,
        "requestId": ctx.request_id,
    }


async def probe_sleep(ctx: ToolContext, args: SleepArgs) -> dict[str, Any]:
    """Sleep until cancelled (or `seconds`), marking the cancellation."""
    ctx.progress("sleeping", 0.0)
    try:
        with_timeout = asyncio.wait_for(ctx.wait_cancelled(), timeout=args.seconds)
        await with_timeout
    except TimeoutError:
        return {"slept": args.seconds}
    if args.marker:
        _mark(args.marker, ctx.request_id)
    return {"cancelled": True}


async def probe_stream(ctx: ToolContext, args: StreamArgs) -> str:
    """Emit every kind of event, then return."""
    for i in range(args.count):
        ctx.progress(f"step {i}", (i + 1) / max(args.count, 1))
        ctx.log("info", f"log {i}")
        ctx.partial_text(f"part{i};")
    ctx.artifact("text/plain", name="note.txt", data=b"hello")
    return "done"


async def probe_spew(ctx: ToolContext, args: SpewArgs) -> dict[str, Any]:
    """Emit large partial_text events as fast as possible until cancelled."""
    chunk = "x" * args.size
    sent = 0
    try:
        while not ctx.cancelled:
            ctx.partial_text(chunk)
            sent += 1
            await asyncio.sleep(0)
    finally:
        if args.marker:
            _mark(args.marker, str(sent))
    return {"sent": sent}


def probe_record(ctx: ToolContext, args: RecordArgs) -> dict[str, Any]:
    """Append the request id to a marker file (proves whether a call ran)."""
    _mark(args.name, ctx.request_id)
    return {"recorded": ctx.request_id, "at": time.time()}


async def probe_fail(ctx: ToolContext, args: FailArgs) -> None:
    """Fail with the given error code."""
    raise ToolError(ErrorCode(args.code), args.message)


async def probe_write(ctx: ToolContext, args: WriteArgs) -> dict[str, Any]:
    """A privileged tool (writes-files): marks that it ran."""
    _mark(args.name, ctx.request_id)
    return {"written": args.name}


async def probe_spawn(ctx: ToolContext, args: WriteArgs) -> dict[str, Any]:
    """Present only with PROBE_EXTRA_TOOL set (a new version's tool): marks that it ran."""
    _mark(args.name, ctx.request_id)
    return {"spawned": args.name}


def install_probe(target: Path) -> Path:
    """Make `probe` discoverable by entry points in a fresh directory for PYTHONPATH."""
    from tests.harness import install_plugin_module

    return install_plugin_module(target, "probe", Path(__file__).read_text(), "ProbePlugin")
