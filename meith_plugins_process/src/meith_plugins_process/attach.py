"""`attach_process_logs`: a dev server's lines to one caller as `log` events, at its pace.

A `log` event carries one line, or several consecutive lines of one stream joined by newlines
when they were read together (see `emit_lines`).

Lines go out synchronously as the dev server's output is read (no queue, no task switch) while
the caller keeps up. When it falls behind (`ctx.events_congested`: the socket client reads
slower than the server writes), new batches wait in a small backlog and the dev server's pipes
stop being read, so the dev server itself slows down, as it would writing into `| less`:
nothing is lost and the runtime's memory stays bounded. A caller that stays congested for
STALL_S (a suspended terminal) stops holding the dev server back; from then on it lags with a
bounded backlog, and is told how many lines it skipped when it catches up.

Only the process's owner (see `owners.py`) may hold it back at all: any other attachment lags
from the start, so a reader that never reads (and re-attaches over and over) cannot freeze
another session's dev server.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Final

import anyio

from meith_core import ToolContext
from meith_plugins_process.devservers import DevServer
from meith_plugins_process.logbuffer import MAX_ENTRIES, Entry

#: How long one congested caller may hold a dev server's output back.
STALL_S: Final = 5.0
#: Entries a lagging (stalled) caller may have queued; older ones are skipped.
MAX_BACKLOG: Final = MAX_ENTRIES
#: Text per coalesced `log` event, far below the 8 MiB frame limit.
EVENT_TEXT_MAX: Final = 256 * 1024


def level_and_prefix(stream: str) -> tuple[str, str]:
    """The attach format: stderr as warn; a `[stream] ` prefix except stdout/pty."""
    level = "warn" if stream == "stderr" else "info"
    prefix = "" if stream in ("stdout", "pty") else f"[{stream}] "
    return level, prefix


def emit_lines(log: Callable[[str, str], None], stream: str, lines: list[str]) -> None:
    """Send consecutive lines of one stream as few `log` events as possible.

    They travel in one event, joined by newlines (at most EVENT_TEXT_MAX characters each): one
    frame per read of a process's output instead of one per line is what lets a client keep up
    with a fast producer. A process printing a line at a time still produces one event per line.
    """
    if not lines:
        return
    level, prefix = level_and_prefix(stream)
    if len(lines) == 1:
        log(level, prefix + lines[0])
        return
    # The usual case, one read's worth, is joined without a Python step per line.
    if sum(map(len, lines)) + len(lines) * (len(prefix) + 1) <= EVENT_TEXT_MAX:
        log(level, prefix + ("\n" + prefix).join(lines) if prefix else "\n".join(lines))
        return
    chunk: list[str] = []
    size = 0
    for line in lines:
        text = prefix + line if prefix else line
        if size + len(text) > EVENT_TEXT_MAX and chunk:
            log(level, "\n".join(chunk))
            chunk, size = [], 0
        chunk.append(text)
        size += len(text) + 1
    log(level, "\n".join(chunk))


class LogForwarder:
    """A subscriber of one dev server's log buffer, forwarding to one call's events."""

    def __init__(self, ctx: ToolContext, server: DevServer) -> None:
        self.ctx = ctx
        self.server = server
        self._log = ctx.log
        self._backlog: deque[list[Entry]] = deque()
        self._pending = 0
        self._skipped = 0
        self._holding = False
        #: Whether this caller may pause the dev server's output while it catches up.
        self._may_hold = server.owner.is_owner(ctx.caller)
        self._stalled = not self._may_hold
        self._wake = asyncio.Event()

    # -- the subscriber (called by the log buffer, on the event loop) ------------------

    def __call__(self, batch: list[Entry]) -> None:
        if not self._backlog and not self.ctx.events_congested:
            self._emit(batch)
            return
        self._backlog.append(batch)
        self._pending += len(batch)
        if self._stalled:
            while self._pending > MAX_BACKLOG and len(self._backlog) > 1:
                dropped = self._backlog.popleft()
                self._pending -= len(dropped)
                self._skipped += len(dropped)
        elif not self._holding:
            self._holding = True
            self.server.pause_output(self)
        self._wake.set()

    def replay(self, entries: list[Entry]) -> None:
        """Send buffered entries first, one batch per run of one stream."""
        start = 0
        while start < len(entries):
            stream = entries[start][1]
            end = start
            while end < len(entries) and entries[end][1] == stream:
                end += 1
            self(entries[start:end])
            start = end

    def _emit(self, batch: list[Entry]) -> None:
        """Send one batch (one stream) as few `log` events as possible (see `emit_lines`)."""
        if len(batch) == 1:
            level, prefix = level_and_prefix(batch[0][1])
            self._log(level, prefix + batch[0][2])
            return
        emit_lines(self._log, batch[0][1], [e[2] for e in batch])

    # -- the drain task -----------------------------------------------------------------

    async def run(self) -> None:
        """Send the backlog as the caller catches up; runs until cancelled."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._backlog:
                if self.ctx.events_congested:
                    await self._wait_for_caller()
                    continue
                if self._skipped:
                    skipped, self._skipped = self._skipped, 0
                    self._log("warn", f"[system] skipped {skipped} lines: this client fell behind")
                batch = self._backlog.popleft()
                while self._backlog and self._backlog[0][0][1] == batch[0][1] and len(batch) < 5000:
                    batch = batch + self._backlog.popleft()  # one stream: one event for all
                self._pending -= len(batch)
                self._emit(batch)
                await asyncio.sleep(0)  # let the transport write and other callers run
            self._stalled = not self._may_hold
            self.release()

    async def _wait_for_caller(self) -> None:
        if self._stalled:
            await self.ctx.wait_events_flowing()
            return
        try:
            with anyio.fail_after(STALL_S):
                await self.ctx.wait_events_flowing()
        except TimeoutError:
            # A caller that does not read must not stall the dev server: lag instead.
            self._stalled = True
            self.release()

    def release(self) -> None:
        if self._holding:
            self._holding = False
            self.server.resume_output(self)
