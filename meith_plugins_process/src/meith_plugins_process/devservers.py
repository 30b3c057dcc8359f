"""Dev servers: long-running commands in their own session, output split into log lines.

Output is read through an asyncio subprocess protocol: the loop hands each chunk (up to 256 KiB)
straight to `_on_output`, which splits it in bulk and appends the lines to the ring buffer, which
hands the batch to attached clients. No task switch and no model per line on that path.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import subprocess
from collections.abc import Mapping
from typing import Any, Final, Literal

import anyio.to_thread

from meith_core import (
    CallerInfo,
    ConfinedSpawn,
    ErrorCode,
    PlantedGitReport,
    ToolError,
    new_id,
    spawn_confined,
)
from meith_plugins_process.killer import MARKER_ENV, KillTarget, Outcome
from meith_plugins_process.lines import LineSplitter
from meith_plugins_process.logbuffer import LogBuffer, now_ms
from meith_plugins_process.owners import OwnedRegistry, Owner
from meith_plugins_process.ports import port_in_chunk
from meith_plugins_process.supervisor import Supervisor
from meith_plugins_process.tree import subtree_ports

Status = Literal["starting", "running", "exited", "errored", "stopped"]
ACTIVE: Final = frozenset({"starting", "running"})

#: stop_dev_server: SIGTERM (or the signal asked for), then SIGKILL after this long.
STOP_GRACE_S: Final = 3.0
#: After the process exits, how long its pipes may stay open (a grandchild holding them)
#: before the exit line is written anyway.
EXIT_LINGER_S: Final = 0.25
#: Exit statuses with which `/bin/sh -c` reports that the command itself could not run.
_SHELL_FAILURES: Final = {126: "command not executable", 127: "command not found"}
_STREAMS: Final = {1: "stdout", 2: "stderr"}
#: Output is searched for an announced port only in its first lines (servers announce early;
#: later, the listening sockets of the process tree tell): a chatty server that never names a
#: port must not pay a regex scan per chunk forever.
SNIFF_LINES: Final = 2000


def signal_name(returncode: int | None) -> str | None:
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"SIG{-returncode}"


class DevServer:
    def __init__(
        self,
        *,
        cwd: str,
        command: str,
        args: list[str],
        name: str | None,
        env_extra: Mapping[str, str] | None,
        owner: Owner,
        confined: ConfinedSpawn | None = None,
        ports: list[int] | None = None,
    ) -> None:
        self.id = new_id("dev")
        #: The ports the call named (opened on the host once it runs, when it is confined).
        self.asked_ports = list(ports or [])
        self.owner = owner
        self.confined = confined
        self.name = name
        self.cwd = cwd
        self.command = command
        self.args = args
        self.env_extra = dict(env_extra or {})
        #: `command` alone runs through the shell; `command` with `args` runs without one.
        self.via_shell = not args
        self.argv = ["/bin/sh", "-c", command] if self.via_shell else [command, *args]
        self.status: Status = "starting"
        self.pid: int | None = None
        self.create_time: float | None = None
        self.port: int | None = None
        self.exit_code: int | None = None
        self.signal: str | None = None
        self.started_at = now_ms()
        self.logs = LogBuffer()
        self.exited = asyncio.Event()
        self._splitters = {1: LineSplitter(), 2: LineSplitter()}
        self._open_pipes = {1, 2}
        self._transport: asyncio.SubprocessTransport | None = None
        self._finalized = False
        self._linger: asyncio.TimerHandle | None = None
        #: Attached callers that cannot keep up: while any, its pipes are not read.
        self._output_holds: set[object] = set()
        #: The planted-git watch of a confined one; its result is the scan at exit.
        self.git_watch: asyncio.Task[PlantedGitReport] | None = None

    # -- the record ---------------------------------------------------------------------

    def record(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "cwd": self.cwd,
            "command": self.command,
            "args": list(self.args),
            "status": self.status,
            "pid": self.pid,
            "port": self.port,
            "exitCode": self.exit_code,
            "signal": self.signal,
            "startedAt": self.started_at,
            "confinedTo": self.confined.scope if self.confined else None,
            **self.owner.record(),
            "hostPorts": self.confined.host_ports() if self.confined else [],
            "walls": self.confined.walls_report() if self.confined else None,
        }

    def forward(self, port: int) -> str | None:
        """Open `port` on the host for a confined server in a namespace of its own (named by
        the call, or the one it was found to serve on); None when it is, else why not."""
        if self.confined is None or not self.active:
            return None
        return self.confined.forward(port)

    def _detected(self, port: int | None) -> None:
        if port is not None and self.port is None:
            self.port = port
            if self.confined is not None:
                self.forward(port)

    @property
    def active(self) -> bool:
        return self.status in ACTIVE

    @property
    def display_command(self) -> str:
        return self.command if self.via_shell else shlex.join(self.argv)

    def target(self, sig: signal.Signals) -> KillTarget:
        contained = self.confined is not None and self.confined.pid_namespace
        return KillTarget(self.id, self.pid, self.create_time, sig, namespace=contained)

    def system(self, text: str) -> None:
        self.logs.append("system", [text])

    def subject(self) -> dict[str, Any]:
        """Who a planted-git report is about."""
        return {
            "processId": self.id,
            "kind": "dev-server",
            "cwd": self.cwd,
            "confinedTo": self.confined.scope if self.confined else None,
            "caller": self.owner.kind.value,
            "sessionId": self.owner.session_id,
            "tool": "start_dev_server",
        }

    def planted_git(self, report: PlantedGitReport) -> None:
        """Say in its log what was found planted and neutralised."""
        self.logs.append("system", [d["message"] for d in report.diagnostics()])

    def same_as(self, cwd: str, command: str, args: list[str]) -> bool:
        return self.cwd == cwd and self.command == command and self.args == args

    # -- flow control -------------------------------------------------------------------

    def pause_output(self, holder: object) -> None:
        """Stop reading its output (it blocks writing once the pipe is full) until every
        holder resumed it."""
        if not self._output_holds:
            self._set_reading(False)
        self._output_holds.add(holder)

    def resume_output(self, holder: object) -> None:
        self._output_holds.discard(holder)
        if not self._output_holds:
            self._set_reading(True)

    def _set_reading(self, on: bool) -> None:
        if self._transport is None:
            return
        for fd in self._open_pipes:
            pipe = self._transport.get_pipe_transport(fd)
            if isinstance(pipe, asyncio.ReadTransport) and not pipe.is_closing():
                if on:
                    pipe.resume_reading()
                else:
                    pipe.pause_reading()

    # -- process events (on the event loop) ---------------------------------------------

    def _on_output(self, fd: int, data: bytes) -> None:
        lines = self._splitters[fd].feed(data)
        if lines:
            if self.port is None and self.logs.next_seq < SNIFF_LINES:
                self._detected(port_in_chunk(lines))
            self.logs.append(_STREAMS[fd], lines)

    def _on_pipe_closed(self, fd: int) -> None:
        if fd not in self._open_pipes:
            return
        rest = self._splitters[fd].flush()
        if rest:
            if self.port is None and self.logs.next_seq < SNIFF_LINES:
                self._detected(port_in_chunk(rest))
            self.logs.append(_STREAMS[fd], rest)
        self._open_pipes.discard(fd)
        if not self._open_pipes and self.exited.is_set():
            self._finalize()

    def _on_exit(self, returncode: int | None) -> None:
        self.signal = signal_name(returncode)
        self.exit_code = returncode if returncode is not None and returncode >= 0 else None
        if self.status != "stopped":
            failure = _SHELL_FAILURES.get(self.exit_code or 0) if self.via_shell else None
            self.status = "errored" if failure else "exited"
        self.exited.set()
        if not self._open_pipes:
            self._finalize()
        else:
            self._linger = asyncio.get_running_loop().call_later(EXIT_LINGER_S, self._finalize)

    def _finalize(self) -> None:
        if self._finalized:
            return
        self._finalized = True
        if self.confined is not None:
            self.confined.cleanup()
        if self._linger is not None:
            self._linger.cancel()
        code = "null" if self.exit_code is None else str(self.exit_code)
        line = f"exited with code {code}"
        if self.signal:
            line += f" (signal {self.signal})"
        failure = _SHELL_FAILURES.get(self.exit_code or 0) if self.via_shell else None
        if failure and self.status == "errored":
            line += f": {failure}"
        self.system(line)

    def _on_connection_lost(self) -> None:
        if self._transport is not None:
            self._transport.close()

    def close(self) -> None:
        """Release the transport (the process is gone or being killed)."""
        if self._linger is not None:
            self._linger.cancel()
        if self._transport is not None:
            self._transport.close()
        if self.confined is not None:
            self.confined.cleanup()


class _Protocol(asyncio.SubprocessProtocol):
    def __init__(self, server: DevServer) -> None:
        self.server = server
        self.transport: asyncio.SubprocessTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        self.server._on_output(fd, data if isinstance(data, bytes) else data.encode())

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self.server._on_pipe_closed(fd)

    def process_exited(self) -> None:
        assert self.transport is not None
        self.server._on_exit(self.transport.get_returncode())

    def connection_lost(self, exc: Exception | None) -> None:
        self.server._on_connection_lost()


class DevServerManager(OwnedRegistry[DevServer]):
    def __init__(self, supervisor: Supervisor) -> None:
        super().__init__("Dev server", "start_dev_server")
        self.sup = supervisor

    def newest_in(self, cwd: str, caller: CallerInfo) -> DevServer | None:
        found = [s for s in self.visible(caller) if s.cwd == cwd]
        return max(found, key=lambda s: s.started_at) if found else None

    def find_running(
        self, cwd: str, command: str, args: list[str], caller: CallerInfo
    ) -> DevServer | None:
        for server in self.visible(caller):
            if server.active and server.same_as(cwd, command, args):
                return server
        return None

    async def start(
        self,
        *,
        cwd: str,
        command: str,
        args: list[str],
        name: str | None,
        env: Mapping[str, str] | None,
        owner: Owner,
        confined: ConfinedSpawn | None = None,
        session_callback: Mapping[str, str] | None = None,
        ports: list[int] | None = None,
    ) -> DevServer:
        server = DevServer(
            cwd=cwd,
            command=command,
            args=args,
            name=name,
            env_extra=env,
            owner=owner,
            confined=confined,
            ports=ports,
        )
        # Registered before the first await, so a concurrent duplicate start finds it.
        self.by_id[server.id] = server
        loop = asyncio.get_running_loop()
        child_env = self.sup.child_env(
            server.id,
            extra=server.env_extra,
            defaults={"PYTHONUNBUFFERED": "1"},
            confined=confined,
            calls_back=owner.user,
            session_callback=session_callback,
        )
        try:
            transport, _ = await spawn_confined(
                confined,
                server.argv,
                child_env,
                markers={MARKER_ENV: server.id},
                start=lambda argv, spawn_env, fds: loop.subprocess_exec(
                    lambda: _Protocol(server),
                    *argv,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    cwd=cwd,
                    env=spawn_env,
                    start_new_session=True,
                    pass_fds=fds,
                ),
            )
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            server.status = "errored"
            server.system(f"failed to spawn: {exc}")
            server.exited.set()
            return server
        server._transport = transport
        server.pid = transport.get_pid()
        server.create_time = self.sup.track(
            server.id,
            "dev-server",
            server.pid,
            server.display_command,
            namespace=server.target(signal.SIGTERM).namespace,
        )
        # Git metadata it plants is neutralised while it runs and when it exits.
        server.git_watch = self.sup.watch_git(
            confined, server.subject(), server.exited, server.planted_git
        )
        if server.status == "starting":
            server.status = "running"
            for port in server.asked_ports:
                server.forward(port)
        elif server.status == "stopped":
            # stop_dev_server arrived while it was spawning.
            await self.sup.terminate([server.target(signal.SIGTERM)], grace_s=STOP_GRACE_S)
        return server

    async def stop(
        self, server: DevServer, sig: signal.Signals, grace_s: float = STOP_GRACE_S
    ) -> tuple[bool, str]:
        """`(stopped, message)`: False when it was not running (leftover processes of it are
        still ended, and the message says so)."""
        if not server.active:
            outcome = await self._end([server], sig, 0.2)
            message = f"Dev server {server.id} is not running (status {server.status})"
            if outcome[0].found:
                message += f"; ended {len(outcome[0].found)} leftover process(es) of it"
            return False, message
        server.status = "stopped"
        server.system(f"stopping ({sig.name})")
        await self._end([server], sig, grace_s)
        return True, f"Dev server {server.id} stopped"

    async def _end(
        self, servers: list[DevServer], sig: signal.Signals, grace_s: float
    ) -> list[Outcome]:
        outcomes = await self.sup.terminate([s.target(sig) for s in servers], grace_s=grace_s)
        for server in servers:
            if server.pid is not None:
                # The exit status arrives from the child watcher thread; give it a moment.
                try:
                    await asyncio.wait_for(server.exited.wait(), 1.0)
                except TimeoutError:
                    pass
            self.sup.untrack(server.id)
        return outcomes

    async def end_session(self, session_id: str) -> list[str]:
        """Stop what `session_id` started and did not detach (SIGTERM, SIGKILL after the
        grace); returns their ids."""
        ending = [s for s in self.by_id.values() if s.owner.ends_with(session_id) and s.active]
        for server in ending:
            server.status = "stopped"
            server.system("stopping (SIGTERM): the session that started it ended")
        if ending:
            await self._end(ending, signal.SIGTERM, STOP_GRACE_S)
        return [s.id for s in ending]

    def targets(self) -> list[KillTarget]:
        """Every managed dev server, running or not (an exited one may have left children)."""
        return [s.target(signal.SIGTERM) for s in self.by_id.values()]

    def mark_all_stopped(self) -> None:
        for server in self.by_id.values():
            if server.active:
                server.status = "stopped"

    async def refresh_port(self, server: DevServer) -> None:
        """Fill a missing port from the listening sockets of the server's process tree."""
        if server.port is None and server.active:
            ports = await anyio.to_thread.run_sync(subtree_ports, server.pid, server.create_time)
            if not ports and server.confined is not None and server.pid is not None:
                # In a network namespace of its own: what it listens on in there.
                ports = server.confined.listening_ports(server.pid)
            if ports and server.port is None:
                server._detected(ports[0])


def resolve_cwd(raw: str, base: str) -> str:
    """`~` expanded, relative to `base`, resolved; must be an existing directory."""
    path = os.path.realpath(os.path.join(base, os.path.expanduser(raw.strip())))
    if not os.path.isdir(path):
        raise ToolError(ErrorCode.VALIDATION_ERROR, f"cwd is not a directory: {raw}")
    return path
