"""The built-in call approver of `meith serve --approvals prompt`: asks on the serve terminal."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from typing import TextIO

from meith_core.protocol.call_approval import (
    ApprovalAnswer,
    ApprovalRequest,
    waiting_for,
    where_it_runs,
)

#: An unanswered prompt denies after this long, so a forgotten terminal cannot hang callers.
PROMPT_TIMEOUT_S = 120.0

_ANSWERS = {
    "o": ApprovalAnswer.ALLOW_ONCE,
    "once": ApprovalAnswer.ALLOW_ONCE,
    "s": ApprovalAnswer.ALLOW_SESSION,
    "session": ApprovalAnswer.ALLOW_SESSION,
    "d": ApprovalAnswer.DENY,
    "deny": ApprovalAnswer.DENY,
    "n": ApprovalAnswer.DENY,
}


class TerminalApprover:
    """One prompt at a time; reads lines from the terminal without blocking the event loop."""

    def __init__(
        self,
        stdin: TextIO | None = None,
        out: TextIO | None = None,
        timeout_s: float = PROMPT_TIMEOUT_S,
    ) -> None:
        self.stdin = stdin or sys.stdin
        self.out = out or sys.stderr
        self.timeout_s = timeout_s
        self._lock = asyncio.Lock()

    async def __call__(self, request: ApprovalRequest) -> ApprovalAnswer | None:
        if request.notify is not None:
            # Said before queueing behind another open prompt: the caller's own terminal
            # otherwise shows nothing while it waits.
            where = f"in the meith serve terminal (pid {os.getpid()})"
            request.notify(waiting_for(where, self.timeout_s), awaiting=True)
        async with self._lock:
            caps = ", ".join(c.value for c in request.privileged)
            view = request.view
            self.out.write(
                "\n── meith: approval needed ──────────────────────────────\n"
                f"  caller        {request.caller.caller.value}  (session {request.caller.session_id})\n"
                f"  tool          {request.tool_name}  (plugin {request.plugin_id})\n"
                f"  capabilities  {caps}\n"
                f"  runs          {where_it_runs(request.capabilities, request.cwd)}\n"
                + (f"  command       {view.command}\n" if view.command is not None else "")
                + "  arguments     (shown whole; only secret values masked)\n"
                + "".join(f"    {line}\n" for line in view.text.split("\n") if view.text)
            )
            for _attempt in range(3):
                self.out.write("Allow? [o]nce / [s]ession (this tool, this session) / [d]eny: ")
                self.out.flush()
                line = await self._readline()
                if line is None:
                    self.out.write("\n(no answer: denied)\n")
                    self.out.flush()
                    return ApprovalAnswer.DENY
                answer = _ANSWERS.get(line.strip().lower())
                if answer is not None:
                    self.out.write(f"→ {answer.value.replace('_', ' ')}\n")
                    self.out.flush()
                    return answer
            return ApprovalAnswer.DENY

    async def _readline(self) -> str | None:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[str | None] = loop.create_future()
        fd = self.stdin.fileno()

        def readable() -> None:
            if fut.done():
                return
            line = self.stdin.readline()
            fut.set_result(line if line else None)

        loop.add_reader(fd, readable)
        try:
            return await asyncio.wait_for(fut, timeout=self.timeout_s)
        except TimeoutError:
            return None
        finally:
            with contextlib.suppress(Exception):
                loop.remove_reader(fd)
