"""The one way a plugin starts a process under a directory-confined grant.

`ConfinedSpawn.prepare(scope, ...)` makes what one confined process needs before it starts:
the plan (`confine.plan`), a private temporary directory, the gate of the destinations its
grant names, the watch for git metadata it plants, and what lets it call back as its session.
`spawn(...)` starts a process, confined or not, through the starter the plugin gives (an
asyncio subprocess, a terminal's), so that the sequence — the network opened, the wrapper's
command line and fixed environment, the env file discarded when the start fails, ports
forwarded once it runs — is written once. Git hooks, which git starts itself, get launcher
scripts from the same object (`confine.hooks`).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from meith_core.base.callback_env import CALLBACK_ENV, CLI_ENV, HOME_ENV, SOCKET_ENV, TOKEN_ENV
from meith_core.confine.envfile import discard_env_file
from meith_core.confine.forwarder import PortForwarder
from meith_core.confine.gate import NetworkGate, RefusalSink
from meith_core.confine.plan import Confinement, NetworkAccess
from meith_core.confine.planted_watch import GitMetadataWatch
from meith_core.confine.sockets import without_session_sockets
from meith_core.confine.status import landlock_status

T = TypeVar("T")


def is_session_callback(callback: Mapping[str, str] | None) -> bool:
    """Whether `callback` lets a child call back as an agent session (its token, no home).
    The local user's (`MEITH_HOME` with its token) is never given to a confined child: it
    would leave its confinement by calling tools as the local user."""
    return callback is not None and TOKEN_ENV in callback and HOME_ENV not in callback


def meith_cli(path: str) -> Path | None:
    """The `meith` CLI children should call: on `path` (a PATH), else beside this interpreter."""
    found = shutil.which("meith", path=path)
    if found:
        return Path(found)
    beside = Path(sys.executable).parent / "meith"
    return beside if beside.is_file() and os.access(beside, os.X_OK) else None


def add_meith_cli(env: dict[str, str]) -> None:
    """Name the `meith` CLI in `env` (`MEITH_CLI_BIN`) and make it findable on its PATH."""
    cli = meith_cli(env.get("PATH", ""))
    if cli is None:
        return
    env[CLI_ENV] = str(cli)
    if shutil.which("meith", path=env.get("PATH", "")) is None:
        # Appended, not prepended: the runtime's venv must not shadow the user's python.
        env["PATH"] = os.pathsep.join(p for p in (env.get("PATH", ""), str(cli.parent)) if p)


@dataclass(slots=True)
class ConfinedSpawn:
    """How one process is confined: its directory, the kernel plan, its private temp dir, the
    gate its network goes through, and the watch for git metadata it plants."""

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
    watch: GitMetadataWatch | None = None

    @classmethod
    def prepare(
        cls,
        scope: str,
        *,
        home: str | os.PathLike[str] | None,
        hide: Iterable[str] = (),
        protect: Iterable[str] = (),
        session_callback: Mapping[str, str] | None = None,
        net: Sequence[str] = (),
        sockets: Sequence[str] = (),
        on_refused: RefusalSink | None = None,
        forward_ports: bool = True,
    ) -> ConfinedSpawn | None:
        """The confinement of a process started under a grant limited to `scope`; None when the
        kernel has no Landlock (the caller says so). `hide`: further paths to cover (the
        runtime's socket); `protect`: further paths never writable; `sockets`: the Unix sockets
        its grant names (`--socket`), reachable inside; `forward_ports`: open the ports it
        listens on at the host's loopback (a dev server's).

        With a session token in `session_callback` (an agent session's child), the socket it
        names (the runtime's token-only one for children) stays reachable inside: mounted on a
        file in the private temp dir, where the runtime's own socket is covered. The local
        user's call-back variables are never passed in."""
        status = landlock_status()
        if not status.available:
            return None
        tmpdir = tempfile.mkdtemp(prefix="meith-confined-")
        callback = None
        bind: list[tuple[str, str]] = []
        if is_session_callback(session_callback) and session_callback:
            callback = dict(session_callback)
            if status.namespaces and SOCKET_ENV in callback:
                inner = os.path.join(tmpdir, "meith.sock")
                with open(inner, "x"):
                    pass
                bind.append((callback[SOCKET_ENV], inner))
                callback[SOCKET_ENV] = inner
        gate = None
        access = NetworkAccess()
        if net:
            gate = NetworkGate(
                list(net),
                socket_path=os.path.join(tmpdir, "net.sock") if status.namespaces else None,
                on_refused=on_refused,
                grant_hint=f"meith grants add -c starts-process --cwd {scope} --net",
            )
            if status.namespaces:
                access = NetworkAccess(proxy_socket=gate.socket_path)
        ports = os.path.join(tmpdir, "ports.sock") if status.namespaces and forward_ports else None
        access = dataclasses.replace(access, ports_socket=ports)
        plan = Confinement.beneath(
            scope,
            home=home,
            extra_dirs=[tmpdir],
            protect=protect,
            hide=hide,
            bind=bind,
            net=access,
            sockets=sockets,
            status=status,
        )
        watch = GitMetadataWatch.for_confinement(scope, plan)
        watch.snapshot()  # the configs at the top of the directory: a few reads, no walk
        return cls(scope, plan, tmpdir, callback, gate, ports, watch=watch)

    def child_environment(
        self, env: Mapping[str, str], extra: Mapping[str, str] | None = None
    ) -> dict[str, str]:
        """`env` with the caller's `extra` for the confined child: caches default to the
        private temp dir (home directories are not writable in there), none of the variables
        that lead to the user's agents, buses, displays and terminal multiplexers
        (`confine.sockets`), none of the local user's call-back variables (its session's when
        it is an agent session's child), and TMPDIR and XDG_RUNTIME_DIR in the private temp
        dir."""
        out = without_session_sockets(env)
        out["XDG_RUNTIME_DIR"] = self.tmpdir
        out["XDG_CACHE_HOME"] = os.path.join(self.tmpdir, "cache")
        out["npm_config_cache"] = os.path.join(self.tmpdir, "npm")
        out.update(extra or {})
        for key in CALLBACK_ENV:
            out.pop(key, None)
        if self.callback is not None:
            out.update(self.callback)
            add_meith_cli(out)
        for key in ("TMPDIR", "TMP", "TEMP"):
            out[key] = self.tmpdir
        return out

    async def open_network(self) -> None:
        """Start the gate before the process starts (its port, on a host without network
        namespaces, goes into the plan)."""
        self.open_network_sync()

    def open_network_sync(self) -> None:
        if self.gate is None or self.gate.listening:
            return
        access = self.gate.start_sync()
        if access.proxy_port is not None:
            self.plan = dataclasses.replace(self.plan, network=access)

    def command(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        *,
        markers: Mapping[str, str] | None = None,
        tty: str | None = None,
    ) -> tuple[list[str], dict[str, str]]:
        """The argv and (fixed) environment to spawn; `env` reaches only the final execve.
        `tty`: the process's own terminal, the one /dev/pts entry it may write where it gets
        no private devpts (a host without user namespaces)."""
        plan = self.plan
        if tty is not None and not plan.devpts:
            plan = dataclasses.replace(plan, write_files=(*plan.write_files, tty))
        return plan.command(argv, env, markers=markers)

    def notes(self) -> list[str]:
        """What the caller should be told about this confinement beyond the host's walls (a
        secret-file walk that stopped at its budget)."""
        if not self.plan.secret_files_note:
            return []
        return [
            f"Secret files in {self.scope}: {self.plan.secret_files_note}; files matching "
            "confinement.secretPatterns beyond that are NOT hidden from this process"
        ]

    @property
    def pid_namespace(self) -> bool:
        """Whether its processes live in a PID namespace of their own: signal the process
        spawned (the wrapper) and they all get it; SIGKILL it and none is left."""
        return self.plan.pid_namespace

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


#: Starts a process from `(argv, environment)`; what it returns is the caller's (a transport).
Starter = Callable[[list[str], dict[str, str]], Awaitable[T]]


async def spawn_confined(
    confined: ConfinedSpawn | None,
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    start: Starter[T],
    pid_of: Callable[[T], int | None],
    markers: Mapping[str, str] | None = None,
    tty: str | None = None,
) -> T:
    """Start `argv` with `env` through `start`, inside `confined`'s walls when given: the one
    spawn sequence of every plugin. Raises what `start` raises (the env file is removed)."""
    if confined is None:
        return await start(list(argv), dict(env))
    await confined.open_network()
    spawn_argv, spawn_env = confined.command(argv, env, markers=markers, tty=tty)
    try:
        started = await start(spawn_argv, spawn_env)
    except BaseException:
        discard_env_file(spawn_env)
        raise
    confined.started(pid_of(started))
    return started


__all__ = [
    "ConfinedSpawn",
    "Starter",
    "add_meith_cli",
    "is_session_callback",
    "meith_cli",
    "spawn_confined",
]
