"""What dev servers and terminals share: the children's environment, the crash record of
managed processes under `$MEITH_HOME/state/process/`, and ending processes (through the one
killer in `killer.py`).

The crash record is how a runtime that was SIGKILLed is cleaned up after: each runtime keeps
one file naming itself (pid and start time) and every process it started (id, pid, start time,
command). At start-up, a file whose runtime is gone lists survivors; those whose start time
still matches (so the pid was not reused), and anything carrying their marker, are terminated.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import anyio.to_thread
import psutil
import structlog

from meith_core import (
    CALLBACK_ENV,
    TOKEN_ENV,
    ConfinedSpawn,
    MeithHome,
    PlantedGitReport,
    ToolContext,
    add_meith_cli,
    ensure_private_dir,
    is_session_callback,
    read_json,
    write_json_atomic,
)
from meith_plugins_process.killer import (
    MARKER_ENV,
    KillTarget,
    Outcome,
    identity_matches,
    terminate,
)

_log = structlog.get_logger("meith.process")

#: How long crash survivors get between SIGTERM and SIGKILL at start-up.
RECOVERY_GRACE_S: Final = 1.0

KIND_SIGNAL: Final = {"dev-server": signal.SIGTERM, "terminal": signal.SIGHUP}

#: How often a running confined process's directory is scanned for planted git metadata
#: (besides the scan when it exits); `MEITH_PLANTED_GIT_SCAN_S` tunes it.
GIT_SCAN_INTERVAL_S: Final = 30.0


def _git_scan_interval() -> float:
    try:
        value = float(os.environ.get("MEITH_PLANTED_GIT_SCAN_S", ""))
    except ValueError:
        return GIT_SCAN_INTERVAL_S
    return value if 0 < value <= 86400 else GIT_SCAN_INTERVAL_S


def _create_time(pid: int) -> float | None:
    with contextlib.suppress(psutil.Error):
        return float(psutil.Process(pid).create_time())
    return None


class Supervisor:
    def __init__(self) -> None:
        self.home: MeithHome | None = None
        self.socket_path: str | None = None
        self._token = uuid.uuid4().hex[:8]
        self._managed: dict[str, dict[str, Any]] = {}
        self._record_path: Path | None = None
        self._self_time = _create_time(os.getpid())
        #: Where planted-git reports go (`PluginHost.report_planted_git`, bound at start-up).
        self.report_planted: Callable[[PlantedGitReport, Mapping[str, Any]], None] | None = None
        self._git_watches: set[asyncio.Task[PlantedGitReport]] = set()

    # -- runtime binding ----------------------------------------------------------------

    def bind(self, home: MeithHome, socket_path: str | None) -> None:
        self.home = home
        self.socket_path = socket_path

    def bind_home(self, home: MeithHome) -> None:
        """Tools may run before `meith_startup` (a plugin loaded into a started runtime)."""
        if self.home is None:
            self.home = home

    @property
    def state_dir(self) -> Path | None:
        return self.home.state_dir / "process" if self.home is not None else None

    # -- confinement --------------------------------------------------------------------

    def confine(
        self, ctx: ToolContext, session_callback: Mapping[str, str] | None = None
    ) -> ConfinedSpawn | None:
        """The confinement for a process a call starts under a grant limited to a directory
        (the runtime's socket covered, meith's home out of reach; the grant's network, sockets
        and the call's refusal records); None when the grant is not limited or the kernel has
        no Landlock (the caller says so)."""
        if ctx.grant_scope is None:
            return None
        return ConfinedSpawn.prepare(
            ctx.grant_scope,
            home=self.home.root if self.home is not None else None,
            hide=[self.socket_path] if self.socket_path else [],
            session_callback=session_callback,
            net=ctx.grant_net,
            sockets=ctx.grant_sockets,
            on_refused=ctx.refusal_recorder(),
        )

    # -- planted git metadata -----------------------------------------------------------

    def scan_git(self, confined: ConfinedSpawn, subject: Mapping[str, Any]) -> PlantedGitReport:
        """Scan a confined process's directory for git metadata it planted, neutralise and
        report it (blocking: call it in a worker thread, e.g. when a command exited)."""
        if confined.watch is None:
            return PlantedGitReport()
        try:
            report = confined.watch.scan()
        except Exception as exc:  # a scan must never take the process tools down
            _log.exception("planted git scan failed", error=str(exc))
            return PlantedGitReport(complete=False, note=f"git metadata scan failed: {exc}")
        if report and self.report_planted is not None:
            self.report_planted(report, subject)
        return report

    def watch_git(
        self,
        confined: ConfinedSpawn | None,
        subject: Mapping[str, Any],
        exited: asyncio.Event,
        on_report: Callable[[PlantedGitReport], None] | None = None,
    ) -> asyncio.Task[PlantedGitReport] | None:
        """For a long-lived confined process: a scan every `MEITH_PLANTED_GIT_SCAN_S` while it
        runs and one when it exits; the task's result is that last scan's report."""
        if confined is None or confined.watch is None:
            return None
        task = asyncio.get_running_loop().create_task(
            self._watch_git(confined, subject, exited, on_report)
        )
        self._git_watches.add(task)
        task.add_done_callback(self._git_watches.discard)
        return task

    async def _watch_git(
        self,
        confined: ConfinedSpawn,
        subject: Mapping[str, Any],
        exited: asyncio.Event,
        on_report: Callable[[PlantedGitReport], None] | None,
    ) -> PlantedGitReport:
        watch = confined.watch
        assert watch is not None
        # Learn the directories while the process starts, so later scans list only changes.
        with contextlib.suppress(Exception):
            await anyio.to_thread.run_sync(watch.prime, abandon_on_cancel=True)
        interval = _git_scan_interval()
        while True:
            if not exited.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(exited.wait(), interval)
            last = exited.is_set()
            report = await anyio.to_thread.run_sync(
                self.scan_git, confined, subject, abandon_on_cancel=True
            )
            if report and on_report is not None:
                on_report(report)
            if last:
                return report

    # -- children's environment ---------------------------------------------------------

    def child_env(
        self,
        process_id: str,
        *,
        extra: Mapping[str, str] | None = None,
        defaults: Mapping[str, str] | None = None,
        confined: ConfinedSpawn | None = None,
        calls_back: bool = True,
        session_callback: Mapping[str, str] | None = None,
    ) -> dict[str, str]:
        """The runtime's environment plus MEITH_HOME/MEITH_SOCKET and the local user's token
        from `session_callback` (so children can call tools back through the CLI: the runtime
        refuses a process it started that presents no token), `extra` from the caller, and the
        marker (never overridable).

        Without `calls_back` (what an agent session starts) a child gets none of the MEITH_*
        call-back variables that would let it call back as the local user; a child of an agent
        session gets `session_callback` instead (the socket and its session's token,
        `ToolContext.child_environment`): it calls back as that session. A confined child's
        environment is the confinement's (`ConfinedSpawn.child_environment`).
        """
        env = dict(os.environ)
        # An inherited MEITH_SOCKET or token points at some other runtime, not at this one.
        env.pop("MEITH_SOCKET", None)
        env.pop(TOKEN_ENV, None)
        for key, value in (defaults or {}).items():
            env.setdefault(key, value)
        if confined is not None:
            env = confined.child_environment(env, extra)
        elif calls_back:
            self._add_callback_env(env)
            # The runtime asks every process it started for a token, the user's included.
            if session_callback and TOKEN_ENV in session_callback:
                env[TOKEN_ENV] = session_callback[TOKEN_ENV]
            env.update(extra or {})
        else:
            env.update(extra or {})
            for key in CALLBACK_ENV:
                env.pop(key, None)
            if session_callback is not None and is_session_callback(session_callback):
                env.update(session_callback)
                add_meith_cli(env)
        env[MARKER_ENV] = process_id
        return env

    def _add_callback_env(self, env: dict[str, str]) -> None:
        if self.home is not None:
            env["MEITH_HOME"] = str(self.home.root)
        if self.socket_path:
            env["MEITH_SOCKET"] = self.socket_path
        add_meith_cli(env)

    # -- the crash record ---------------------------------------------------------------

    def track(
        self, process_id: str, kind: str, pid: int, command: str, *, namespace: bool = False
    ) -> float | None:
        """Record a started process (`namespace`: it holds its members in a PID namespace);
        returns its start time (None if already gone)."""
        created = _create_time(pid)
        self._managed[process_id] = {
            "id": process_id,
            "kind": kind,
            "pid": pid,
            "createTime": created,
            "command": command[:500],
            **({"pidNamespace": True} if namespace else {}),
        }
        self._write_record()
        return created

    def untrack(self, process_id: str) -> None:
        if self._managed.pop(process_id, None) is not None:
            self._write_record()

    def _write_record(self) -> None:
        state = self.state_dir
        if state is None:
            return
        try:
            if self._record_path is None:
                ensure_private_dir(state)
                self._record_path = state / f"{os.getpid()}-{self._token}.json"
            if not self._managed:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self._record_path)
                return
            write_json_atomic(
                self._record_path,
                {
                    "runtime": {"pid": os.getpid(), "createTime": self._self_time},
                    "processes": list(self._managed.values()),
                },
            )
        except OSError as exc:
            _log.warning("could not write the managed-process record", error=str(exc))

    def close(self) -> None:
        """Clean shutdown: nothing is left to recover."""
        for task in list(self._git_watches):
            task.cancel()
        self._managed.clear()
        if self._record_path is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._record_path)

    # -- ending processes ---------------------------------------------------------------

    async def terminate(
        self, targets: Sequence[KillTarget], grace_s: float, kill_wait_s: float = 1.0
    ) -> list[Outcome]:
        outcomes = await terminate(targets, grace_s=grace_s, kill_wait_s=kill_wait_s)
        for out in outcomes:
            if out.survivors:
                _log.error("processes survived SIGKILL", processId=out.id, pids=out.survivors)
        return outcomes

    async def recover(self) -> list[dict[str, Any]]:
        """Terminate what runtimes that died without shutting down left behind.

        Returns one summary per recorded process: `{id, kind, pid, command, terminated: [pids]}`.
        """
        state = self.state_dir
        if state is None or not state.is_dir():
            return []
        targets: list[KillTarget] = []
        recorded: list[dict[str, Any]] = []
        stale: list[Path] = []
        mine = f"{os.getpid()}-{self._token}.json"
        for path in sorted(state.glob("*.json")):
            if path.name == mine:
                continue
            data = read_json(path)
            if not isinstance(data, dict) or not isinstance(data.get("runtime"), dict):
                stale.append(path)  # corrupt: nothing trustworthy to act on
                continue
            if _runtime_alive(data["runtime"]):
                continue
            stale.append(path)
            for proc in data.get("processes") or []:
                target = _target_of(proc)
                if target is not None:
                    targets.append(target)
                    recorded.append(proc)
        summaries: list[dict[str, Any]] = []
        if targets:
            outcomes = await self.terminate(targets, grace_s=RECOVERY_GRACE_S)
            for proc, out in zip(recorded, outcomes, strict=True):
                summary = {
                    "id": out.id,
                    "kind": proc.get("kind"),
                    "pid": proc.get("pid"),
                    "command": proc.get("command"),
                    "terminated": out.found,
                }
                summaries.append(summary)
                if out.found:
                    _log.warning(
                        "terminated processes left behind by a runtime that did not shut down",
                        processId=out.id,
                        command=proc.get("command"),
                        pids=out.found,
                        killed=out.killed,
                    )
        for path in stale:
            with contextlib.suppress(OSError):
                os.unlink(path)
        return summaries


def _runtime_alive(runtime: Mapping[str, Any]) -> bool:
    pid = runtime.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    created = runtime.get("createTime")
    try:
        return identity_matches(
            psutil.Process(pid), created if isinstance(created, int | float) else None
        )
    except psutil.Error:
        return False


def _target_of(proc: Any) -> KillTarget | None:
    if not isinstance(proc, dict) or not isinstance(proc.get("id"), str):
        return None
    pid = proc.get("pid")
    created = proc.get("createTime")
    if not isinstance(pid, int) or not isinstance(created, int | float):
        # Without a start time the pid proves nothing: only the marker can find survivors.
        pid, created = None, None
    return KillTarget(
        id=proc["id"],
        pid=pid,
        create_time=float(created) if created is not None else None,
        sig=KIND_SIGNAL.get(str(proc.get("kind")), signal.SIGTERM),
        namespace=pid is not None and proc.get("pidNamespace") is True,
    )
