"""Run one child program with bounded output, and make sure it dies with the call.

The only place this plugin starts a process. The child gets its own session (process group),
so cancelling a call also ends what git started under it (hooks, filters, pagers): SIGTERM
first, which lets git remove its `*.lock` files, then SIGKILL after a grace period.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, TypeVar

import anyio
from anyio.abc import ByteReceiveStream, Process

from meith_core import CancelToken, ErrorCode, ToolError

T = TypeVar("T")

#: How long a child may take to exit after SIGTERM before it is killed.
TERM_GRACE_S: Final = 2.0
#: Standard error is diagnostics only: keep its tail, drop the rest.
MAX_STDERR_BYTES: Final = 64 * 1024
_CHUNK: Final = 64 * 1024


class OutputTooLarge(ToolError):
    """The child wrote more to stdout than the caller allowed; it was stopped."""

    def __init__(self, program: str, limit: int) -> None:
        super().__init__(
            ErrorCode.TOOL_FAILED,
            f"{program} produced more than {limit} bytes of output; stopped it",
            {"limitBytes": limit},
        )


@dataclass(frozen=True, slots=True)
class Completed:
    returncode: int
    stdout: bytes
    stderr: bytes

    @property
    def stderr_text(self) -> str:
        return self.stderr.decode("utf-8", "replace").strip()


def signal_group(pid: int, sig: int) -> None:
    """Signal the process group led by `pid` (every child runs in its own session)."""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


async def run_program(
    argv: Sequence[str],
    *,
    cwd: str | None,
    env: Mapping[str, str],
    stdin: bytes | None = None,
    max_stdout: int,
    cancel: CancelToken | None = None,
    on_kill: Callable[[], None] | None = None,
) -> Completed:
    """Run `argv` (no shell) and collect its output.

    Raises `OutputTooLarge` when stdout exceeds `max_stdout`, `ToolError(CANCELLED)` when
    `cancel` fires. When the call is cancelled from outside (the task is cancelled), the child
    is still terminated and reaped before the cancellation propagates. `on_kill` runs after a
    child had to be stopped (cleanup of what it may have left behind).
    """
    program = os.path.basename(argv[0])
    proc = await anyio.open_process(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    stopped = False

    def stop() -> None:
        nonlocal stopped
        stopped = True
        signal_group(proc.pid, signal.SIGTERM)

    remove_callback = cancel.add_callback(stop) if cancel is not None else (lambda: None)
    out = bytearray()
    err = bytearray()
    overflow = False
    try:
        async with anyio.create_task_group() as tg:
            if stdin is not None:
                tg.start_soon(_feed, proc, stdin)
            tg.start_soon(_drain_tail, proc.stderr, err)
            assert proc.stdout is not None
            async for chunk in proc.stdout:
                out += chunk
                if len(out) > max_stdout:
                    # Raised after the task group: an error raised inside would come out
                    # wrapped in an ExceptionGroup.
                    overflow = True
                    stop()
                    tg.cancel_scope.cancel()
                    break
        if overflow:
            raise OutputTooLarge(program, max_stdout)
        returncode = await proc.wait()
    finally:
        remove_callback()
        if proc.returncode is None:
            stopped = True
            with anyio.CancelScope(shield=True):
                await _terminate(proc)
        with anyio.CancelScope(shield=True):
            await proc.aclose()
        if stopped and on_kill is not None:
            on_kill()
    if cancel is not None and cancel.is_set():
        raise ToolError(ErrorCode.CANCELLED, f"{program} was stopped: the call was cancelled")
    return Completed(returncode, bytes(out), bytes(err))


async def gather(*funcs: Callable[[], Awaitable[T]]) -> list[T]:
    """Run `funcs` concurrently; the first failure is raised as itself (not as a group)."""
    results: list[T | None] = [None] * len(funcs)

    async def one(i: int, func: Callable[[], Awaitable[T]]) -> None:
        results[i] = await func()

    try:
        async with anyio.create_task_group() as tg:
            for i, func in enumerate(funcs):
                tg.start_soon(one, i, func)
    except BaseExceptionGroup as group:
        raise _first_error(group) from None
    return results  # type: ignore[return-value]


def _first_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    leaves: list[BaseException] = []

    def walk(exc: BaseException) -> None:
        if isinstance(exc, BaseExceptionGroup):
            for inner in exc.exceptions:
                walk(inner)
        else:
            leaves.append(exc)

    walk(group)
    for preferred in (ToolError, Exception):
        for leaf in leaves:
            if isinstance(leaf, preferred):
                return leaf
    return leaves[0] if leaves else group


async def _feed(proc: Process, data: bytes) -> None:
    assert proc.stdin is not None
    try:
        for start in range(0, len(data), _CHUNK):
            await proc.stdin.send(data[start : start + _CHUNK])
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, BrokenPipeError):
        pass  # the child stopped reading; its exit status tells what happened
    finally:
        try:
            await proc.stdin.aclose()
        except (anyio.BrokenResourceError, BrokenPipeError, OSError):
            pass


async def _drain_tail(stream: ByteReceiveStream | None, buf: bytearray) -> None:
    if stream is None:
        return
    async for chunk in stream:
        buf += chunk
        if len(buf) > MAX_STDERR_BYTES:
            del buf[: len(buf) - MAX_STDERR_BYTES]


async def _terminate(proc: Process) -> None:
    """SIGTERM the group, wait a little, then SIGKILL; always reap."""
    signal_group(proc.pid, signal.SIGTERM)
    with anyio.move_on_after(TERM_GRACE_S):
        await proc.wait()
        return
    signal_group(proc.pid, signal.SIGKILL)
    await proc.wait()
