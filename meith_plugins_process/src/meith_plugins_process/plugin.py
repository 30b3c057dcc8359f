"""The `process` plugin (entry point `process` in `meith.plugins`)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Final, Protocol

import anyio.to_thread
import structlog

from meith_core import PluginHost, ToolDefinition, hookimpl, landlock_status
from meith_plugins_process.command_tools import CommandTools
from meith_plugins_process.commands import CommandRunner
from meith_plugins_process.devserver_tools import DevServerTools
from meith_plugins_process.devservers import DevServerManager
from meith_plugins_process.supervisor import Supervisor
from meith_plugins_process.terminal_tools import TerminalTools
from meith_plugins_process.terminals import TerminalManager
from meith_plugins_process.watch_tools import WatchTools

_log = structlog.get_logger("meith.process")

#: The meith plugin API this plugin is built for.
MEITH_PLUGIN_API = ">=1,<2"

#: Shutdown hooks share one deadline (`host.shutdown_deadline`, 1.5 s away): SIGTERM/SIGHUP
#: every managed process at once, wait this long (less when the deadline is nearer) for all of
#: them in parallel, then SIGKILL the rest.
SHUTDOWN_GRACE_S: Final = 0.8
SHUTDOWN_KILL_WAIT_S: Final = 0.3


class SessionOwner(Protocol):
    """A manager of processes started for callers, as session ends see it."""

    def owned_by(self, session_id: str) -> Sequence[object]: ...

    async def end_session(self, session_id: str) -> list[str]: ...


class Plugin:
    """Terminals, dev servers, one-shot commands, process trees and live logs; one instance
    per runtime."""

    def __init__(self) -> None:
        self.supervisor = Supervisor()
        self.dev_servers = DevServerManager(self.supervisor)
        self.terminals = TerminalManager(self.supervisor)
        self.commands = CommandRunner(self.supervisor)
        #: Every manager of processes this plugin starts for a caller: when a session ends,
        #: each stops what that session started (`end_session`) and says what it holds
        #: (`owned_by`): dev servers, terminals, and the commands running now.
        self.session_owners: list[SessionOwner] = [
            self.dev_servers,
            self.terminals,
            self.commands,
        ]
        #: Stops of what ended sessions started, still under way (shutdown ends them all).
        self._session_stops: set[asyncio.Task[None]] = set()
        self.tools = (
            TerminalTools(self.supervisor, self.terminals),
            DevServerTools(self.supervisor, self.dev_servers),
            WatchTools(self.dev_servers, self.terminals),
            CommandTools(self.supervisor, self.commands),
        )

    @hookimpl
    def meith_tools(self) -> list[ToolDefinition]:
        return [d for tools in self.tools for d in tools.definitions()]

    @hookimpl
    async def meith_startup(self, host: PluginHost) -> None:
        self.supervisor.bind(host.home, host.socket_path)
        self.supervisor.report_planted = host.report_planted_git
        # Probing namespace support spawns a process: do it now, off the event loop, rather
        # than in the first confined start.
        await anyio.to_thread.run_sync(landlock_status)
        recovered = await self.supervisor.recover()
        ended = [r for r in recovered if r["terminated"]]
        if ended:
            _log.warning(
                "ended processes a previous runtime left running",
                count=len(ended),
                processes=[
                    {"id": r["id"], "command": r["command"], "pids": r["terminated"]} for r in ended
                ],
            )

    @hookimpl
    def meith_session_ended(self, host: PluginHost, session_id: str) -> None:
        """What the session started stops (dev servers SIGTERM, terminals SIGHUP, SIGKILL after
        the grace), except what it detached. In a task of its own: ending a session does not
        wait for slow processes, and shutdown, which ends everything, does not wait for it."""
        if not any(owner.owned_by(session_id) for owner in self.session_owners):
            return
        task = asyncio.get_running_loop().create_task(self._stop_session(session_id))
        self._session_stops.add(task)
        task.add_done_callback(self._session_stops.discard)

    async def _stop_session(self, session_id: str) -> None:
        stopped = await asyncio.gather(
            *(owner.end_session(session_id) for owner in self.session_owners),
            return_exceptions=True,
        )
        ids = [i for ended in stopped if isinstance(ended, list) for i in ended]
        for failure in (e for e in stopped if isinstance(e, BaseException)):
            _log.error("could not stop what an ended session started", error=repr(failure))
        if ids:
            _log.info("stopped what an ended session started", sessionId=session_id, ids=ids)

    @hookimpl
    def meith_session_objects(self, session_id: str) -> list[dict[str, Any]]:
        owned: list[dict[str, Any]] = [
            {
                "kind": "dev-server",
                "id": s.id,
                "detached": not s.owner.ends_with(session_id),
                "summary": f"{s.status} {s.display_command}"[:200],
            }
            for s in self.dev_servers.owned_by(session_id)
            if s.active
        ]
        owned.extend(
            {
                "kind": "terminal",
                "id": t.id,
                "detached": not t.owner.ends_with(session_id),
                "summary": f"{t.status} {t.shell}"[:200],
            }
            for t in self.terminals.owned_by(session_id)
            if t.status == "running"
        )
        owned.extend(
            {
                "kind": "command",
                "id": r.id,
                "detached": False,
                "summary": f"running {r.display}"[:200],
            }
            for r in self.commands.owned_by(session_id)
        )
        return owned

    @hookimpl
    async def meith_shutdown(self, host: PluginHost) -> None:
        for task in list(self._session_stops):
            task.cancel()
        self.dev_servers.mark_all_stopped()
        targets = self.dev_servers.targets() + self.terminals.targets() + self.commands.targets()
        remaining = host.remaining_s()
        grace = SHUTDOWN_GRACE_S
        if remaining is not None:
            grace = max(0.0, min(grace, remaining - SHUTDOWN_KILL_WAIT_S - 0.2))
        try:
            await self.supervisor.terminate(
                targets, grace_s=grace, kill_wait_s=SHUTDOWN_KILL_WAIT_S
            )
            # Let the child watcher deliver the exit statuses before the transports close.
            waits = [s.exited.wait() for s in self.dev_servers.by_id.values() if s.pid is not None]
            waits += [t.exited.wait() for t in self.terminals.by_id.values() if t.pid is not None]
            if waits:
                await asyncio.wait_for(asyncio.gather(*waits), 0.2)
        except (TimeoutError, asyncio.CancelledError):
            pass
        finally:
            self.dev_servers.close_all()
            self.terminals.close_all()
            self.supervisor.close()
