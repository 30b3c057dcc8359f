"""Helpers for the process tests: polling instead of sleeps, "is this pid really gone", a
`meith serve` with the process plugin, and what the command tests share."""

from __future__ import annotations

import asyncio
import fcntl
import struct
import sys
import termios
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import psutil

from tests.process.conftest import Proc

T = TypeVar("T")

PY = sys.executable
DEADLINE_S = 20.0


def gone(pid: int | None) -> bool:
    """True when `pid` no longer runs. A zombie counts as gone: it has exited, and PID 1 in
    some containers (this one included) never reaps the orphans it inherits."""
    if pid is None:
        return True
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


async def eventually(
    check: Callable[[], Awaitable[T] | T], what: str, deadline_s: float = DEADLINE_S
) -> T:
    """Poll `check` until it returns something truthy (a generous deadline, not a timing test)."""
    end = time.monotonic() + deadline_s
    while True:
        value = check()
        if asyncio.iscoroutine(value) or isinstance(value, Awaitable):
            value = await value  # type: ignore[misc]
        if value:
            return value  # type: ignore[return-value]
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


def descendants(pid: int) -> list[int]:
    try:
        return [p.pid for p in psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def ok(result: Any) -> Any:
    assert result.ok, result.to_wire()
    return result.content


def serve(meith_server: Any, **grant: Any) -> Any:
    srv = meith_server(plugins="process")
    srv.approve("process")
    srv.grant("starts-process", **grant)
    return srv


#: A shell with two children: one in the background, one in the foreground.
TWO_SLEEPS = "sleep 100 & sleep 100"


def marker(elided: int) -> str:
    return f"\n[... {elided} bytes elided ...]\n"


async def the_running_command(p: Proc) -> tuple[int, list[int]]:
    """The leader of the one command running now and its children, once it has some."""

    def found() -> tuple[int, list[int]] | None:
        targets = p.plugin.commands.targets()
        if len(targets) != 1 or targets[0].pid is None:
            return None
        kids = descendants(targets[0].pid)
        return (targets[0].pid, kids) if kids else None

    return await eventually(found, "the command and its children")


async def start(
    p: Proc, cwd: Path | str, command: str | list[str], args: list[str] | None = None, **extra
) -> dict:
    payload = {"cwd": str(cwd), "command": command, **extra}
    if args is not None:
        payload["args"] = args
    return ok(await p.rt.call("start_dev_server", payload))


async def logs(p: Proc, pid: str) -> list[dict]:
    return ok(await p.rt.call("get_process_logs", {"processId": pid}))["logs"]


async def has_log(p: Proc, pid: str, text: str) -> list[dict]:
    async def check() -> list[dict] | None:
        entries = await logs(p, pid)
        return entries if any(text in e["text"] for e in entries) else None

    return await eventually(check, f"log line containing {text!r}")


def unread_bytes(fd: int) -> int:
    """Bytes waiting in a pipe for its reader (`FIONREAD`)."""
    (count,) = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0" * 4))
    return int(count)


def signal_pending(pid: int) -> bool:
    """Whether a signal waits to be handled by `pid` (Linux: /proc/PID/status)."""
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    masks = [line.split()[1] for line in status if line.startswith(("SigPnd:", "ShdPnd:"))]
    return any(int(mask, 16) for mask in masks)
