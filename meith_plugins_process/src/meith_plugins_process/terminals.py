"""Terminals: the user's shell on a real pseudo-terminal.

The shell gets the PTY's slave side as stdin/stdout/stderr and as its controlling terminal (so
job control, Ctrl-C and SIGWINCH work); the runtime keeps the master side, non-blocking, read
through the event loop. Raw output is kept as chunks (stream `pty`) in the ring buffer.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import fcntl
import os
import shutil
import signal
import struct
import termios
from collections.abc import Mapping
from typing import Any, Final, Literal

from meith_core import (
    CallerInfo,
    ConfinedSpawn,
    ErrorCode,
    PlantedGitReport,
    ToolError,
    new_id,
    spawn_confined,
)
from meith_plugins_process.devservers import signal_name
from meith_plugins_process.killer import MARKER_ENV, KillTarget
from meith_plugins_process.logbuffer import LogBuffer, now_ms
from meith_plugins_process.owners import OwnedRegistry, Owner
from meith_plugins_process.supervisor import Supervisor

#: kill_terminal's default, as a terminal window closing sends (an interactive shell ignores
#: SIGTERM, but exits on SIGHUP and passes it on to its jobs).
DEFAULT_KILL_SIGNAL: Final = signal.SIGHUP
KILL_GRACE_S: Final = 3.0
_READ_SIZE: Final = 65536
_SHELL_FALLBACKS: Final = ("/bin/bash", "/bin/sh")


def _take_controlling_tty() -> None:
    # Runs in the child between fork and exec, after setsid(): make the PTY (already on fd 0)
    # the new session's controlling terminal. subprocess has no option for this.
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def _set_winsize(fd: int, cols: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def resolve_shell(requested: str | None) -> str:
    """The requested shell, else $SHELL, /bin/bash, /bin/sh. Bare names are looked up on PATH;
    an explicitly requested shell that does not exist is an error, not silently replaced."""
    if requested:
        found = _usable(requested.strip())
        if found is None:
            raise ToolError(
                ErrorCode.VALIDATION_ERROR, f"Shell not found or not executable: {requested}"
            )
        return found
    for candidate in (os.environ.get("SHELL", ""), *_SHELL_FALLBACKS):
        found = _usable(candidate) if candidate else None
        if found is not None:
            return found
    raise ToolError(ErrorCode.TOOL_FAILED, "No usable shell: tried $SHELL, /bin/bash and /bin/sh")


def _usable(shell: str) -> str | None:
    if os.sep in shell:
        return shell if os.path.isfile(shell) and os.access(shell, os.X_OK) else None
    return shutil.which(shell)


def resolve_terminal_cwd(raw: str | None, base: str) -> tuple[str, str | None]:
    """`(cwd, warning)`: trimmed, `~` expanded, relative to `base`; a directory that does not
    exist falls back to the home directory, then the runtime's."""
    home = os.path.expanduser("~")
    if raw is None or not raw.strip():
        return home, None
    path = os.path.realpath(os.path.join(base, os.path.expanduser(raw.strip())))
    if os.path.isdir(path):
        return path, None
    fallback = home if os.path.isdir(home) else os.getcwd()
    return fallback, f"cwd {raw!r} is not a directory; the terminal starts in {fallback}"


class Terminal:
    def __init__(
        self,
        *,
        cwd: str,
        shell: str,
        cols: int,
        rows: int,
        owner: Owner,
        confined: ConfinedSpawn | None = None,
    ) -> None:
        self.id = new_id("term")
        self.owner = owner
        self.confined = confined
        self.cwd = cwd
        self.shell = shell
        self.cols = cols
        self.rows = rows
        self.pid: int | None = None
        self.create_time: float | None = None
        self.status: Literal["running", "exited"] = "running"
        self.created_at = now_ms()
        self.exit_code: int | None = None
        self.signal: str | None = None
        self.logs = LogBuffer()
        self.exited = asyncio.Event()
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._master: int | None = None
        self._transport: asyncio.SubprocessTransport | None = None
        self._loop = asyncio.get_running_loop()
        #: The planted-git watch of a confined one; its result is the scan at exit.
        self.git_watch: asyncio.Task[PlantedGitReport] | None = None

    def record(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "cwd": self.cwd,
            "shell": self.shell,
            "pid": self.pid,
            "cols": self.cols,
            "rows": self.rows,
            "status": self.status,
            "createdAt": self.created_at,
            "exitCode": self.exit_code,
            "signal": self.signal,
            "confinedTo": self.confined.scope if self.confined else None,
            **self.owner.record(),
        }

    def target(self, sig: signal.Signals) -> KillTarget:
        contained = self.confined is not None and self.confined.pid_namespace
        return KillTarget(self.id, self.pid, self.create_time, sig, namespace=contained)

    def subject(self) -> dict[str, Any]:
        """Who a planted-git report is about."""
        return {
            "processId": self.id,
            "kind": "terminal",
            "cwd": self.cwd,
            "confinedTo": self.confined.scope if self.confined else None,
            "caller": self.owner.kind.value,
            "sessionId": self.owner.session_id,
            "tool": "create_terminal",
        }

    # -- the PTY ------------------------------------------------------------------------

    def _attach(self, master: int, transport: asyncio.SubprocessTransport) -> None:
        self._master = master
        self._transport = transport
        os.set_blocking(master, False)
        self._loop.add_reader(master, self._on_readable)

    def _on_readable(self) -> None:
        assert self._master is not None
        try:
            data = os.read(self._master, _READ_SIZE)
        except BlockingIOError:
            return
        except OSError:
            data = b""  # EIO: every process holding the slave side has closed it
        if not data:
            self._close_master()
            return
        text = self._decoder.decode(data)
        if text:
            self.logs.append("pty", [text])

    def _close_master(self) -> None:
        if self._master is None:
            return
        self._loop.remove_reader(self._master)
        self._loop.remove_writer(self._master)
        rest = self._decoder.decode(b"", final=True)
        if rest:
            self.logs.append("pty", [rest])
        with contextlib.suppress(OSError):
            os.close(self._master)
        self._master = None

    def _on_exit(self, returncode: int | None) -> None:
        self.status = "exited"
        self.signal = signal_name(returncode)
        self.exit_code = returncode if returncode is not None and returncode >= 0 else None
        self.exited.set()

    def _require_pty(self) -> int:
        if self.status != "running" or self._master is None:
            raise ToolError(ErrorCode.TOOL_FAILED, f"Terminal {self.id} has exited")
        return self._master

    async def write(self, data: bytes) -> None:
        master = self._require_pty()
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(master, view) :]
            except BlockingIOError:
                # The shell is not reading (a full PTY input queue): wait until it drains.
                ready: asyncio.Future[None] = self._loop.create_future()

                def writable(f: asyncio.Future[None] = ready) -> None:
                    if not f.done():
                        f.set_result(None)

                self._loop.add_writer(master, writable)
                try:
                    await ready
                finally:
                    if self._master is not None:
                        self._loop.remove_writer(self._master)
                master = self._require_pty()

    def resize(self, cols: int, rows: int) -> None:
        master = self._require_pty()
        _set_winsize(master, cols, rows)  # the kernel sends SIGWINCH to the foreground job
        self.cols, self.rows = cols, rows

    def close(self) -> None:
        self._close_master()
        if self._transport is not None:
            self._transport.close()
        if self.confined is not None:
            self.confined.cleanup()


class _Protocol(asyncio.SubprocessProtocol):
    def __init__(self, terminal: Terminal) -> None:
        self.terminal = terminal
        self.transport: asyncio.SubprocessTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def process_exited(self) -> None:
        assert self.transport is not None
        self.terminal._on_exit(self.transport.get_returncode())


class TerminalManager(OwnedRegistry[Terminal]):
    def __init__(self, supervisor: Supervisor) -> None:
        super().__init__("Terminal", "create_terminal")
        self.sup = supervisor

    async def create(
        self,
        *,
        cwd: str,
        shell: str,
        cols: int,
        rows: int,
        env: Mapping[str, str] | None,
        owner: Owner,
        confined: ConfinedSpawn | None = None,
        session_callback: Mapping[str, str] | None = None,
    ) -> Terminal:
        term = Terminal(cwd=cwd, shell=shell, cols=cols, rows=rows, owner=owner, confined=confined)
        # TERM describes the terminal the output is rendered by, not the runtime's own.
        extra = {"TERM": "xterm-256color", **(env or {})}
        child_env = self.sup.child_env(
            term.id,
            extra=extra,
            confined=confined,
            calls_back=owner.user,
            session_callback=session_callback,
        )
        loop = asyncio.get_running_loop()
        master, slave = os.openpty()
        try:
            _set_winsize(slave, cols, rows)
            transport, _ = await spawn_confined(
                confined,
                [shell],
                child_env,
                markers={MARKER_ENV: term.id},
                tty=os.ttyname(slave),
                start=lambda argv, spawn_env, fds: loop.subprocess_exec(
                    lambda: _Protocol(term),
                    *argv,
                    stdin=slave,
                    stdout=slave,
                    stderr=slave,
                    cwd=cwd,
                    env=spawn_env,
                    start_new_session=True,
                    preexec_fn=_take_controlling_tty,
                    pass_fds=fds,
                ),
            )
        except BaseException as exc:
            os.close(master)
            if confined is not None:
                confined.cleanup()
            if isinstance(exc, OSError | ValueError):
                raise ToolError(
                    ErrorCode.TOOL_FAILED, f"Could not start shell {shell}: {exc}"
                ) from None
            raise
        finally:
            # The child has its own copy; holding ours would keep the PTY open after it exits.
            os.close(slave)
        term._attach(master, transport)
        term.pid = transport.get_pid()
        term.create_time = self.sup.track(
            term.id, "terminal", term.pid, shell, namespace=term.target(signal.SIGHUP).namespace
        )
        # Git metadata it plants is neutralised while it runs and when it exits.
        term.git_watch = self.sup.watch_git(confined, term.subject(), term.exited)
        self.by_id[term.id] = term
        return term

    async def kill(
        self, term: Terminal, sig: signal.Signals, grace_s: float = KILL_GRACE_S
    ) -> bool:
        """True when something was running; the session's processes are gone on return."""
        outcomes = await self.sup.terminate([term.target(sig)], grace_s=grace_s)
        if term.pid is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(term.exited.wait(), 1.0)
        if not outcomes[0].survivors:
            self.sup.untrack(term.id)
        return outcomes[0].was_running

    async def close(self, terminal_id: str, caller: CallerInfo) -> bool:
        if terminal_id not in self.by_id:
            return False
        term = self.get(terminal_id, caller)
        await self.kill(term, DEFAULT_KILL_SIGNAL)
        term.close()
        self.by_id.pop(terminal_id, None)
        self.sup.untrack(term.id)
        return True

    async def end_session(self, session_id: str) -> list[str]:
        """Hang up the terminals `session_id` started and did not detach (SIGKILL after the
        grace); returns their ids. Their records stay, exited, for the local user to read."""
        ending = [
            t for t in self.by_id.values() if t.owner.ends_with(session_id) and t.pid is not None
        ]
        if not ending:
            return []
        outcomes = await self.sup.terminate(
            [t.target(DEFAULT_KILL_SIGNAL) for t in ending], grace_s=KILL_GRACE_S
        )
        for term, outcome in zip(ending, outcomes, strict=True):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(term.exited.wait(), 1.0)
            if not outcome.survivors:
                self.sup.untrack(term.id)
        return [t.id for t in ending]

    def targets(self) -> list[KillTarget]:
        return [t.target(DEFAULT_KILL_SIGNAL) for t in self.by_id.values()]
