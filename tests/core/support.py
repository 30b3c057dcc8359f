"""Small builders shared by the core tests: argument models, plugins, event sinks, polling, the
`meith` command."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict

from meith_core import Runtime, ToolDefinition, hookimpl, tool
from tests.harness import MEITH, base_env


class NoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TextArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = ""


class CwdArgs(BaseModel):
    """A tool acting on a directory (its `cwd` defaults to the caller's)."""

    model_config = ConfigDict(extra="forbid")
    cwd: str


def make_tool(
    func: Callable[..., Any],
    *capabilities: str,
    name: str | None = None,
    input: type[BaseModel] = NoArgs,
    timeout_ms: int | None = None,
    acts_on: Any = None,
) -> ToolDefinition:
    return tool(
        func,
        name=name or func.__name__.strip("_"),
        capabilities=list(capabilities or ("read-only",)),
        input=input,
        description=func.__doc__ or f"{func.__name__} (test tool)",
        timeout_ms=timeout_ms,
        acts_on=acts_on,
    )


def plugin_class(*tools: ToolDefinition) -> type:
    """A plugin class whose `meith_tools` returns `tools`."""

    class Plugin:
        @hookimpl
        def meith_tools(self) -> list[ToolDefinition]:
            return list(tools)

    return Plugin


class Sink:
    """Collects the events of a call (the `on_event` / `emit` callback)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def __call__(self, event: dict[str, Any]) -> None:
        self.events.append(dict(event))

    def kinds(self) -> list[str]:
        return [e["kind"] for e in self.events]

    def texts(self) -> list[str]:
        return [e.get("message") or e.get("text") or "" for e in self.events]


async def wait_until(
    condition: Callable[[], bool], *, timeout_s: float = 30.0, what: str = "condition"
) -> None:
    """Poll `condition` (yielding to the loop) until true; fail after a generous deadline."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await anyio.sleep(0.005)


async def loop_caught_up() -> None:
    """Return once every callback already scheduled on this event loop has run, those a worker
    thread scheduled (`call_soon_threadsafe`) included: a sentinel scheduled now runs after
    them. What a tool emitted before it said it finished has then been delivered or dropped."""
    ran = asyncio.Event()
    asyncio.get_running_loop().call_soon(ran.set)
    await ran.wait()


def audit_lines(path: Path) -> list[dict[str, Any]]:
    """Every line of an audit file, each of which must be a JSON object."""
    if not path.exists():
        return []
    out = []
    for raw in path.read_bytes().splitlines():
        raw.decode("utf-8")  # valid UTF-8, or this raises
        record = json.loads(raw)
        assert isinstance(record, dict)
        out.append(record)
    return out


def records_for(path: Path, request_id: str) -> list[dict[str, Any]]:
    return [r for r in audit_lines(path) if r.get("requestId") == request_id]


def reason_of(runtime: Runtime) -> str:
    return str(list(runtime.audit.read())[-1]["reason"])


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def meith_cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The `meith` command on `home`, in an environment of its own (no MEITH_* of the tests')."""
    return subprocess.run(
        [MEITH, *args], env=base_env(home), capture_output=True, text=True, timeout=60, check=False
    )
