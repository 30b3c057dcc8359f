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
import dataclasses
import os
import shutil
import signal
import sys
import tempfile
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import anyio.to_thread
import psutil
import structlog

from meith_core import (
    Confinement,
    GitMetadataWatch,
    MeithHome,
    NetworkAccess,
    NetworkGate,
    PlantedGitReport,
    PortForwarder,
    ensure_private_dir,
    landlock_status,
    read_json,
    write_json_atomic,
)
from meith_plugins_process.killer import MARKER_ENV, Outcome, Target, identity_matches, terminate

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


#: Where a child finds its session's token (see `ToolContext.child_environment`).
TOKEN_ENV: Final = "MEITH_SESSION_TOKEN"  # noqa: S105 - a variable name
#: Variables that lead a child back to meith's trust root or socket: a confined child gets none.
_CALLBACK_ENV: Final = ("MEITH_HOME", "MEITH_SOCKET", "MEITH_CLI_BIN", TOKEN_ENV)


def _is_session(callback: Mapping[str, str] | None) -> bool:
    """Whether `callback` lets a child call back as an agent session (its token, no home).
    The local user's (`MEITH_HOME` with its token) is never given to a confined child: it
    would leave its confinement by calling tools as the local user."""
    return callback is not None and TOKEN_ENV in callback and "MEITH_HOME" not in callback


@dataclass(slots=True)
class Confined:
    """How one process is confined: its directory, the kernel plan, its private temp dir, and
    the gate its network goes through."""

    scope: str
    plan: Confinement
    tmpdir: str
    #: What lets the process call back as its session (the socket as it sees it, the token).
    callback: Mapping[str, str] | None = None
    #: The gate of the destinations its grant names (None: no network beyond itself).
    gate: NetworkGate | None = None
    #: Where the forwarder inside takes connections for its loopback ports (namespaces only).
    ports_socket: str | None = None
    forwarder: PortForwarder | None = field(default=None)
    #: The watch for git metadata it plants (`meith_core.GitMetadataWatch`).
    watch: GitMetadataWatch | None = None

    def wrap(self, argv: Sequence[str]) -> list[str]:
        return self.plan.wrap(argv)

    def command(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        process_id: str,
        *,
        tty: str | None = None,
    ) -> tuple[list[str], dict[str, str]]:
        """The argv and (fixed) environment to spawn; `env` reaches only the final execve.
        `tty`: the process's own terminal, the one /dev/pts entry it may write where it gets
        no private devpts (a host without user namespaces)."""
        plan = self.plan
        if tty is not None and not plan.devpts:
            plan = dataclasses.replace(plan, write_files=(*plan.write_files, tty))
        return plan.command(argv, env, markers={MARKER_ENV: process_id})

    async def open_network(self) -> None:
        """Start the gate before the process starts (its port, on a host without network
        namespaces, goes into the plan)."""
        if self.gate is None:
            return
        access = await self.gate.start()
        if access.proxy_port is not None:
            self.plan = dataclasses.replace(self.plan, network=access)

    def started(self, pid: int | None) -> None:
        """Forward the ports it will listen on to the host's loopback (localhost:PORT)."""
        if pid is None or self.ports_socket is None or self.forwarder is not None:
            return
        self.forwarder = PortForwarder(pid, self.ports_socket)
        self.forwarder.start()

    def forwarded_ports(self) -> dict[int, str | None]:
        return dict(self.forwarder.ports) if self.forwarder is not None else {}

    def cleanup(self) -> None:
        if self.forwarder is not None:
            self.forwarder.close()
        if self.gate is not None:
            self.gate.close()
        shutil.rmtree(self.tmpdir, ignore_errors=True)


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
        self,
        scope: str | None,
        session_callback: Mapping[str, str] | None = None,
        *,
        net: Sequence[str] = (),
        on_refused: Callable[[str, str], None] | None = None,
    ) -> Confined | None:
        """The confinement for a process started under a grant limited to `scope`; None when
        the grant is not limited or the kernel has no Landlock (the caller says so).

        With a session token in `session_callback` (an agent session's child), the socket it
        names (the runtime's token-only one for children) stays reachable inside: mounted on a
        file in the private temp dir, where the runtime's own socket is covered. The local
        user's call-back variables are never passed in."""
        if scope is None or not landlock_status().available:
            return None
        tmpdir = tempfile.mkdtemp(prefix="meith-confined-")
        home = self.home.root if self.home is not None else None
        hide = [self.socket_path] if self.socket_path else []
        callback = None
        bind: list[tuple[str, str]] = []
        if _is_session(session_callback) and self.socket_path:
            callback = dict(session_callback or {})
            if landlock_status().namespaces:
                inner = os.path.join(tmpdir, "meith.sock")
                with open(inner, "x"):
                    pass
                bind.append((callback["MEITH_SOCKET"], inner))
                callback["MEITH_SOCKET"] = inner
        namespaces = landlock_status().namespaces
        gate = None
        access = NetworkAccess()
        if net:
            gate = NetworkGate(
                list(net),
                socket_path=os.path.join(tmpdir, "net.sock") if namespaces else None,
                on_refused=on_refused,
                grant_hint=f"meith grants add -c starts-process --cwd {scope} --net",
            )
            if namespaces:
                access = NetworkAccess(proxy_socket=gate.socket_path)
        ports = os.path.join(tmpdir, "ports.sock") if namespaces else None
        access = dataclasses.replace(access, ports_socket=ports)
        plan = Confinement.beneath(
            scope, home=home, extra_dirs=[tmpdir], hide=hide, bind=bind, net=access
        )
        watch = GitMetadataWatch.for_confinement(scope, plan)
        watch.snapshot()  # the configs at the top of the directory: a few reads, no walk
        return Confined(scope, plan, tmpdir, callback, gate, ports, watch=watch)

    # -- planted git metadata -----------------------------------------------------------

    def scan_git(self, confined: Confined, subject: Mapping[str, Any]) -> PlantedGitReport:
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
        confined: Confined | None,
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
        confined: Confined,
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
        confined: Confined | None = None,
        calls_back: bool = True,
        session_callback: Mapping[str, str] | None = None,
    ) -> dict[str, str]:
        """The runtime's environment plus MEITH_HOME/MEITH_SOCKET and the local user's token
        from `session_callback` (so children can call tools back through the CLI: the runtime
        refuses a process it started that presents no token), `extra` from the caller, and the
        marker (never overridable).

        Without `calls_back` (what an agent session starts) and when confined, a child gets
        none of the MEITH_* call-back variables that would let it call back as the local user;
        a child of an agent session gets `session_callback` instead (the socket and its
        session's token, `ToolContext.child_environment`; for a confined child the socket as
        mounted inside its confinement): it calls back as that session. A confined child also
        gets its private TMPDIR.
        """
        env = dict(os.environ)
        # An inherited MEITH_SOCKET or token points at some other runtime, not at this one.
        env.pop("MEITH_SOCKET", None)
        env.pop(TOKEN_ENV, None)
        for key, value in (defaults or {}).items():
            env.setdefault(key, value)
        if confined is not None:
            # Caches under the home directory are not writable in there: default them to the
            # private temp dir (the caller's `env` may point them elsewhere inside the grant).
            env["XDG_CACHE_HOME"] = os.path.join(confined.tmpdir, "cache")
            env["npm_config_cache"] = os.path.join(confined.tmpdir, "npm")
        elif calls_back:
            self._add_callback_env(env)
            # The runtime asks every process it started for a token, the user's included.
            if session_callback and TOKEN_ENV in session_callback:
                env[TOKEN_ENV] = session_callback[TOKEN_ENV]
        env.update(extra or {})
        if confined is not None or not calls_back:
            for key in _CALLBACK_ENV:
                env.pop(key, None)
            callback = confined.callback if confined is not None else session_callback
            if callback is not None and _is_session(callback):
                env.update(callback)
                self._add_cli(env)
        if confined is not None:
            for key in ("TMPDIR", "TMP", "TEMP"):
                env[key] = confined.tmpdir
        env[MARKER_ENV] = process_id
        return env

    def _add_callback_env(self, env: dict[str, str]) -> None:
        if self.home is not None:
            env["MEITH_HOME"] = str(self.home.root)
        if self.socket_path:
            env["MEITH_SOCKET"] = self.socket_path
        self._add_cli(env)

    def _add_cli(self, env: dict[str, str]) -> None:
        cli = _meith_cli(env.get("PATH", ""))
        if cli is not None:
            env["MEITH_CLI_BIN"] = str(cli)
            if shutil.which("meith", path=env.get("PATH", "")) is None:
                # Appended, not prepended: the runtime's venv must not shadow the user's python.
                env["PATH"] = os.pathsep.join(
                    p for p in (env.get("PATH", ""), str(cli.parent)) if p
                )

    # -- the crash record ---------------------------------------------------------------

    def track(self, process_id: str, kind: str, pid: int, command: str) -> float | None:
        """Record a started process; returns its start time (None if already gone)."""
        created = _create_time(pid)
        self._managed[process_id] = {
            "id": process_id,
            "kind": kind,
            "pid": pid,
            "createTime": created,
            "command": command[:500],
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
        self, targets: Sequence[Target], grace_s: float, kill_wait_s: float = 1.0
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
        targets: list[Target] = []
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


def _target_of(proc: Any) -> Target | None:
    if not isinstance(proc, dict) or not isinstance(proc.get("id"), str):
        return None
    pid = proc.get("pid")
    created = proc.get("createTime")
    if not isinstance(pid, int) or not isinstance(created, int | float):
        # Without a start time the pid proves nothing: only the marker can find survivors.
        pid, created = None, None
    return Target(
        id=proc["id"],
        pid=pid,
        create_time=float(created) if created is not None else None,
        sig=KIND_SIGNAL.get(str(proc.get("kind")), signal.SIGTERM),
    )


def _meith_cli(path: str) -> Path | None:
    """The `meith` CLI children should call: on PATH, else next to this interpreter."""
    found = shutil.which("meith", path=path)
    if found:
        return Path(found)
    beside = Path(sys.executable).parent / "meith"
    return beside if beside.is_file() and os.access(beside, os.X_OK) else None
