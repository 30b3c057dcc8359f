"""`run_command`: one command run to completion, its output streamed while it runs and kept,
capped, for the answer.

The command runs as the leader of a session of its own, with the environment and the
confinement a dev server started by the same caller gets (`Supervisor.child_env`,
`Supervisor.confine`), and is in the crash record while it runs. Its output is read through a
subprocess protocol, as a dev server's is: each chunk goes to a head-and-tail cap per stream
(`OutputCap`) and, split into lines, out as `log` events. Nothing is queued for a caller that
does not keep up: its events are skipped, it is told how many, and the answer still has the
output.

No process of the command outlives the call. A confined command runs in a PID namespace of its
own (`meith_core.ConfinedSpawn.pid_namespace`): what it left running is ended when it exits,
before the wrapper the runtime waits for exits, whatever it did to leave its session. Otherwise
the one killer (`killer.py`) ends, at exit, whatever it left in its process group or carrying
its marker. At `timeoutMs` its processes get SIGTERM, then SIGKILL after a grace; a cancelled
call SIGKILLs them at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import signal
import subprocess
from collections.abc import Mapping
from typing import Any, Final

from meith_core import (
    ConfinedSpawn,
    Diagnostic,
    ErrorCode,
    ToolContext,
    ToolError,
    ToolResult,
    new_id,
    ok_result,
    spawn_confined,
)
from meith_plugins_process.attach import emit_lines
from meith_plugins_process.devservers import EXIT_LINGER_S, signal_name
from meith_plugins_process.diagnostics import confinement_notes
from meith_plugins_process.killer import MARKER_ENV, KillTarget
from meith_plugins_process.lines import LineSplitter
from meith_plugins_process.models import RunCommandArgs
from meith_plugins_process.outputcap import OutputCap
from meith_plugins_process.owners import Owner
from meith_plugins_process.supervisor import Supervisor

#: After `timeoutMs`: SIGTERM, then SIGKILL after this long.
TIMEOUT_GRACE_S: Final = 2.0
#: What a command left running after it exited gets between SIGTERM and SIGKILL.
LEFTOVER_GRACE_S: Final = 1.0
#: How long, once its processes are gone, output still in the pipes may take to arrive.
DRAIN_S: Final = 1.0
#: A command still running this long after its start goes into the crash record.
RECORD_AFTER_S: Final = 0.05
#: A progress event this often while it runs (clients that reset their timeout on progress).
PROGRESS_S: Final = 5.0
#: The tool's deadline: the longest `timeoutMs`, then the grace, then a margin. The call's own
#: deadline never cuts a command off before its `timeoutMs` has.
TOOL_TIMEOUT_MS: Final = 30 * 60 * 1000 + 30_000

_STREAMS: Final = {1: "stdout", 2: "stderr"}


class _Run:
    """One running command's output and exit, fed by the subprocess protocol."""

    def __init__(self, ctx: ToolContext, limit: int) -> None:
        self.ctx = ctx
        self.caps = {1: OutputCap(limit), 2: OutputCap(limit)}
        self._splitters = {1: LineSplitter(), 2: LineSplitter()}
        self.open_pipes = {1, 2}
        self.returncode: int | None = None
        self.exited = asyncio.Event()
        self.pipes_closed = asyncio.Event()
        self.exited_at: float | None = None
        #: Lines not sent to a caller that did not keep up.
        self._skipped = 0

    def on_output(self, fd: int, data: bytes) -> None:
        cap = self.caps.get(fd)
        if cap is None:
            return
        cap.feed(data)
        self._send(fd, self._splitters[fd].feed(data))

    def on_pipe_closed(self, fd: int) -> None:
        if fd not in self.open_pipes:
            return
        self.open_pipes.discard(fd)
        self._send(fd, self._splitters[fd].flush())
        if not self.open_pipes:
            self.pipes_closed.set()

    def on_exit(self, returncode: int | None) -> None:
        self.returncode = returncode
        self.exited_at = asyncio.get_running_loop().time()
        self.exited.set()

    def _send(self, fd: int, lines: list[str]) -> None:
        if not lines:
            return
        if self.ctx.events_congested:
            self._skipped += len(lines)
            return
        self.report_skipped()
        emit_lines(self.ctx.log, _STREAMS[fd], lines)

    def report_skipped(self) -> None:
        if self._skipped:
            skipped, self._skipped = self._skipped, 0
            self.ctx.log(
                "warn",
                f"[system] skipped {skipped} lines: this client fell behind "
                "(the result still has the output)",
            )


class _Protocol(asyncio.SubprocessProtocol):
    def __init__(self, run: _Run) -> None:
        self.run = run
        self.transport: asyncio.SubprocessTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        self.run.on_output(fd, data if isinstance(data, bytes) else data.encode())

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self.run.on_pipe_closed(fd)

    def process_exited(self) -> None:
        assert self.transport is not None
        self.run.on_exit(self.transport.get_returncode())


def _group_alive(pgid: int) -> bool:
    """Whether any process is still in the group (a zombie counts; the killer sorts it out)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _find_program(argv: list[str], cwd: str, env: Mapping[str, str]) -> None:
    """Fail clearly, before spawning, for a program that cannot be run (confined or not)."""
    program = argv[0]
    if "/" in program:
        path = os.path.join(cwd, program)
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            what = "not executable" if os.path.exists(path) else "not found"
            raise ToolError(ErrorCode.TOOL_FAILED, f"command {what}: {program}")
    elif shutil.which(program, path=env.get("PATH", os.defpath)) is None:
        raise ToolError(
            ErrorCode.TOOL_FAILED,
            f"command not found: {program} (not on PATH; give a path, or use `shell`)",
        )


class _Running:
    """A command of the runner while it runs: what ending it needs, and whose it is."""

    __slots__ = (
        "create_time",
        "display",
        "ended_by_session",
        "id",
        "namespace",
        "owner",
        "pid",
        "run",
    )

    def __init__(
        self, run_id: str, pid: int, run: _Run, owner: Owner, display: str, namespace: bool
    ) -> None:
        self.id = run_id
        self.pid = pid
        self.run = run
        self.owner = owner
        self.display = display
        #: Its processes live in a PID namespace of their own (`KillTarget.namespace`).
        self.namespace = namespace
        self.create_time: float | None = None
        #: Its session ended while it ran: it was stopped, and its result says so.
        self.ended_by_session = False

    def target(self, sig: signal.Signals = signal.SIGTERM) -> KillTarget:
        """The killer's target. While the leader has not been reaped its pid is still ours;
        once it has, only the marker can tell the command's processes from a reused pid."""
        if self.run.returncode is not None:
            return KillTarget(self.id, None, None, sig)
        return KillTarget(self.id, self.pid, self.create_time, sig, namespace=self.namespace)


class CommandRunner:
    """The commands running now, so that runtime shutdown ends them too, and so does the end
    of the session that started one (a `SessionOwner`: the call is usually ended first, with
    its connection; an in-process session closed mid-call is not)."""

    def __init__(self, supervisor: Supervisor) -> None:
        self.sup = supervisor
        self.running: dict[str, _Running] = {}

    def targets(self) -> list[KillTarget]:
        return [r.target() for r in self.running.values()]

    def owned_by(self, session_id: str) -> list[_Running]:
        """The commands `session_id` is running now."""
        return [r for r in self.running.values() if r.owner.session_id == session_id]

    async def end_session(self, session_id: str) -> list[str]:
        """Stop the commands `session_id` is running (SIGTERM, SIGKILL after the grace); each
        call then answers with how its command ended and why. Returns their ids."""
        ending = [r for r in self.running.values() if r.owner.ends_with(session_id)]
        for running in ending:
            running.ended_by_session = True
        if ending:
            await self.sup.terminate([r.target() for r in ending], grace_s=TIMEOUT_GRACE_S)
        return [r.id for r in ending]

    async def run(
        self,
        ctx: ToolContext,
        args: RunCommandArgs,
        *,
        cwd: str,
        owner: Owner,
        confined: ConfinedSpawn | None,
        session_callback: Mapping[str, str] | None,
        diagnostics: list[Diagnostic | dict[str, str]],
    ) -> ToolResult:
        try:
            notes = confinement_notes(confined)
            result = await self._run(
                ctx, args, cwd, owner, confined, session_callback, [*diagnostics, *notes]
            )
            if confined is not None and result.ok:
                # What the command planted (a `git init` with a program-valued key, a hook)
                # is neutralised before the caller's next git runs it, and said in the result.
                subject = {
                    "kind": "command",
                    "cwd": cwd,
                    "confinedTo": confined.scope,
                    "caller": owner.kind.value,
                    "sessionId": owner.session_id,
                    "tool": "run_command",
                }
                report = await asyncio.to_thread(self.sup.scan_git, confined, subject)
                if report:
                    found = [Diagnostic.model_validate(d) for d in report.diagnostics()]
                    result.diagnostics = [*(result.diagnostics or []), *found]
            return result
        finally:
            if confined is not None:
                confined.cleanup()

    def _record(self, running: _Running, display: str) -> None:
        if running.id in self.running:
            running.create_time = self.sup.track(
                running.id, "command", running.pid, display, namespace=running.namespace
            )

    async def _run(
        self,
        ctx: ToolContext,
        args: RunCommandArgs,
        cwd: str,
        owner: Owner,
        confined: ConfinedSpawn | None,
        session_callback: Mapping[str, str] | None,
        diagnostics: list[Diagnostic | dict[str, str]],
    ) -> ToolResult:
        run_id = new_id("run")
        if args.shell is not None:
            argv, display = ["/bin/sh", "-c", args.shell], args.shell
        else:
            argv = list(args.command or ())
            display = shlex.join(argv)
        env = self.sup.child_env(
            run_id,
            extra=args.env,
            defaults={"PYTHONUNBUFFERED": "1"},
            confined=confined,
            calls_back=owner.user,
            session_callback=session_callback,
        )
        if args.command is not None:
            _find_program(argv, cwd, env)
        run = _Run(ctx, args.maxOutputBytes)
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            # Confined: the caller's environment reaches only the final execve, after the
            # walls (`ConfinedSpawn.command`): a loader variable never acts in the wrapper.
            transport, _ = await spawn_confined(
                confined,
                argv,
                env,
                markers={MARKER_ENV: run_id},
                start=lambda spawn, spawn_env, fds: loop.subprocess_exec(
                    lambda: _Protocol(run),
                    *spawn,
                    stdin=subprocess.PIPE if args.stdin is not None else subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    cwd=cwd,
                    env=spawn_env,
                    start_new_session=True,
                    pass_fds=fds,
                ),
            )
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            raise ToolError(ErrorCode.TOOL_FAILED, f"could not start {argv[0]}: {exc}") from None
        contained = confined is not None and confined.pid_namespace
        running = _Running(run_id, transport.get_pid(), run, owner, display, contained)
        self.running[run_id] = running
        # Into the crash record only if it is still running a moment later: most commands an
        # agent runs are over sooner, and the record costs two synced writes.
        record = loop.call_later(RECORD_AFTER_S, self._record, running, display)
        ended = False
        outcome = "cancelled"
        try:
            if args.stdin is not None:
                pipe = transport.get_pipe_transport(0)
                if isinstance(pipe, asyncio.WriteTransport):
                    pipe.write(args.stdin.encode("utf-8"))
                    pipe.write_eof()
            outcome = await self._wait(ctx, run, started, args.timeoutMs / 1000)
            if outcome == "cancelled":
                await self.sup.terminate([running.target(signal.SIGKILL)], grace_s=0)
                ended = True
                raise ToolError(
                    ErrorCode.CANCELLED,
                    f'Tool "{ctx.tool_name}" was cancelled; the command and its processes were '
                    "ended",
                )
            if outcome == "timeout":
                await self.sup.terminate([running.target()], grace_s=TIMEOUT_GRACE_S)
                ended = True
                diagnostics.append(
                    {
                        "level": "warn",
                        "message": f"Timed out after {args.timeoutMs} ms: its processes were "
                        "ended (SIGTERM, then SIGKILL)",
                    }
                )
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(run.exited.wait(), DRAIN_S)
            else:
                # Exited. Its pipes close with it unless something it started holds them.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(run.pipes_closed.wait(), EXIT_LINGER_S)
                if run.open_pipes or _group_alive(running.pid):
                    left = await self.sup.terminate([running.target()], grace_s=LEFTOVER_GRACE_S)
                    if left[0].found:
                        diagnostics.append(
                            {
                                "level": "info",
                                "message": f"Ended {len(left[0].found)} process(es) the command "
                                "left running after it exited",
                            }
                        )
                ended = True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(run.pipes_closed.wait(), DRAIN_S)
        finally:
            record.cancel()
            # However the call ends (cancelled from outside included): none of it is left.
            if not ended:
                with contextlib.suppress(Exception):
                    await self.sup.terminate([running.target(signal.SIGKILL)], grace_s=0)
            del self.running[run_id]
            self.sup.untrack(run_id)
            transport.close()
        run.report_skipped()
        if running.ended_by_session:
            diagnostics.append(
                {
                    "level": "warn",
                    "message": "Its session ended while it ran: its processes were ended "
                    "(SIGTERM, then SIGKILL)",
                }
            )
        ended_at = run.exited_at if run.exited_at is not None else loop.time()
        stdout, out_elided = run.caps[1].render()
        stderr, err_elided = run.caps[2].render()
        code = run.returncode
        content: dict[str, Any] = {
            "exitCode": code if code is not None and code >= 0 else None,
            "signal": signal_name(code),
            "timedOut": outcome == "timeout",
            "stdout": stdout,
            "stderr": stderr,
            "truncated": bool(out_elided or err_elided),
            "durationMs": round((ended_at - started) * 1000),
            "confinedTo": confined.scope if confined is not None else None,
        }
        if confined is not None:
            # What the walls refused, and after a failure what they likely caused.
            await asyncio.to_thread(confined.settle)
            content["walls"] = confined.walls_report()
            diagnostics.extend(confined.diagnostics(outcome == "timeout" or code != 0, stderr))
        return ok_result(content, diagnostics=diagnostics or None)

    @staticmethod
    async def _wait(ctx: ToolContext, run: _Run, started: float, timeout_s: float) -> str:
        """ "exited", "timeout" or "cancelled", whichever comes first; progress meanwhile."""
        loop = asyncio.get_running_loop()
        wake = asyncio.Event()

        def on_cancel() -> None:
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits
                loop.call_soon_threadsafe(wake.set)

        remove = ctx.cancel_token.add_callback(on_cancel)
        waiter = asyncio.ensure_future(run.exited.wait())
        waiter.add_done_callback(lambda _: wake.set())
        deadline = started + timeout_s
        try:
            while True:
                if run.exited.is_set():
                    return "exited"
                if ctx.cancelled:
                    return "cancelled"
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return "timeout"
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), min(remaining, PROGRESS_S))
                if not wake.is_set() and loop.time() < deadline:
                    ctx.progress(f"running for {loop.time() - started:.0f} s")
        finally:
            remove()
            waiter.cancel()
