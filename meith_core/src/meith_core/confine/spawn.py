"""The one way a plugin starts a process under a directory-confined grant.

`ConfinedSpawn.prepare(scope, ...)` makes what one confined process needs before it starts:
the plan (`confine.plan`), a private temporary directory, the control channel its forwarder
keeps (`confine.channel`: an inherited socket pair, never a path), the gate of the destinations
its grant names, the watch for git metadata it plants, what its walls refused
(`confine.walls`), and what lets it call back as its session. `spawn_confined(...)` starts a
process, confined or not, through the starter the plugin gives (an asyncio subprocess, a
terminal's), so that the sequence — the network opened, the wrapper's command line, fixed
environment and inherited channel, the env file discarded when the start fails — is written
once; ports are opened on the host only when asked (`forward`). Git hooks, which git starts
itself, get launcher scripts from the same object (`confine.hooks`).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from meith_core.base.callback_env import CALLBACK_ENV, CLI_ENV, HOME_ENV, SOCKET_ENV, TOKEN_ENV
from meith_core.base.port_registry import reserved_ports
from meith_core.confine import walls
from meith_core.confine.channel import ControlChannel
from meith_core.confine.destinations import Destination, host_name
from meith_core.confine.envfile import discard_env_file
from meith_core.confine.forwarder import PortForwarder, listening_ports
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
    channel and gate its network goes through, and the watch for git metadata it plants."""

    scope: str
    plan: Confinement
    tmpdir: str
    #: What lets the process call back as its session (the socket as it sees it, the token).
    callback: Mapping[str, str] | None = None
    #: The gate of the destinations its grant names (None: no network beyond itself).
    gate: NetworkGate | None = None
    #: The control channel its forwarder keeps (namespaces only).
    channel: ControlChannel | None = None
    forwarder: PortForwarder | None = field(default=None)
    watch: GitMetadataWatch | None = None
    #: What its walls refused while it ran.
    wall_log: walls.WallLog = field(default_factory=walls.WallLog)
    #: Who to tell of a refusal (the audit trail).
    on_refused: RefusalSink | None = None
    in_force: tuple[str, ...] = ()

    @classmethod
    def prepare(
        cls,
        scope: str,
        *,
        home: str | os.PathLike[str] | None,
        hide: Iterable[str] = (),
        protect: Iterable[str] = (),
        sockets: Sequence[str] = (),
        session_callback: Mapping[str, str] | None = None,
        net: Sequence[str] = (),
        on_refused: RefusalSink | None = None,
    ) -> ConfinedSpawn | None:
        """The confinement of a process started under a grant limited to `scope`; None when the
        kernel has no Landlock (the caller says so). `hide`: further paths to cover (the
        runtime's socket); `protect`: further paths never writable; `sockets`: the Unix sockets
        its grant names (`--socket`), reachable inside.

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
        spawn = cls(scope, Confinement(()), tmpdir, callback, on_refused=on_refused)
        access = NetworkAccess()
        if net:
            spawn.gate = NetworkGate(
                list(net),
                on_refused=spawn._refused,
                grant_hint=f"meith grants add -c starts-process --cwd {scope} --net",
            )
        if status.namespaces:
            spawn.channel = ControlChannel(spawn._outbound, spawn._looked_up)
            listen = [s for d in spawn.rules for s in d.loopback_listens()]
            access = NetworkAccess(
                control_fd=spawn.channel.child_fd, gate=net != (), listen=tuple(listen)
            )
        spawn.plan = Confinement.beneath(
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
        spawn.in_force = tuple(w.name for w in status.walls() if w.built)
        spawn.watch = GitMetadataWatch.for_confinement(scope, spawn.plan)
        spawn.watch.snapshot()  # the configs at the top of the directory: a few reads, no walk
        return spawn

    @property
    def rules(self) -> tuple[Destination, ...]:
        return self.gate.allowed if self.gate is not None else ()

    @property
    def pass_fds(self) -> tuple[int, ...]:
        """The descriptors the spawn must inherit (`pass_fds`): its control channel."""
        return (self.channel.child_fd,) if self.channel is not None else ()

    # -- what the walls refuse ----------------------------------------------------------------

    def _refused(self, destination: str, reason: str) -> None:
        _, sep, hint = reason.rpartition("to allow it: ")
        self.wall_log.add(
            "network", destination, opens=hint if sep else None, note=None if sep else reason
        )
        if self.on_refused is not None:
            self.on_refused(destination, reason)

    def _outbound(self, sock: socket.socket, tunnel: str | None) -> None:
        if self.gate is None:
            sock.close()
            return
        self.gate.serve(sock, tunnel)

    def _looked_up(self, name: str) -> None:
        """A name lookup the stub inside refused (they are never answered inside)."""
        try:
            host = host_name(name)
        except ValueError:
            host = name
        what = f"{host} (name lookup)"
        if any(r.host == "*" or r.matches(host, r.port or 0) for r in self.rules):
            proxy = "meith's HTTP proxy (the http_proxy and https_proxy variables are set)"
            self.wall_log.add(
                "network",
                what,
                note=f"name lookups are not answered inside; {host} is reached through {proxy}",
            )
            return
        hint = f"meith grants add -c starts-process --cwd {self.scope} --net {host}"
        self.wall_log.add("network", what, opens=hint)
        if self.on_refused is not None:
            self.on_refused(
                f"dns:{host}", f"meith: name lookup of {host} refused; to allow it: {hint}"
            )

    def walls_report(self) -> dict[str, object]:
        """The `walls` field of a result: in force, where writes go, the rules, refusals."""
        net = [str(r) if r.host != "*" else "any" for r in self.rules]
        return walls.report(self.in_force, self.writable, net, self.wall_log)

    @property
    def writable(self) -> tuple[str, ...]:
        return (os.path.realpath(self.scope), os.path.realpath(self.tmpdir))

    def settle(self, timeout_s: float = 1.0) -> None:
        """After the process exited: wait until what its forwarder reported is counted."""
        if self.channel is not None:
            self.channel.settle(timeout_s)

    def diagnostics(self, failed: bool, stderr: str = "") -> list[dict[str, str]]:
        """What a result says about the walls: after a failure, each refusal and each write
        error of `stderr` a wall likely caused."""
        if not failed:
            return []
        out = walls.refusal_diagnostics(self.wall_log.refused())
        out += walls.write_hints(
            stderr,
            writable=self.writable,
            read_only=self.plan.read_only,
            hidden=self.plan.hidden,
            private=self.plan.private,
            scope=self.scope,
        )
        return out

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

    def open_network(self) -> None:
        """Before the process starts: the channel read, or on a host without network
        namespaces the gate listening (its port goes into the plan)."""
        if self.channel is not None:
            self.channel.open()
            return
        if self.gate is None or self.gate.listening:
            return
        access = self.gate.start_sync()
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

    def started(self) -> None:
        """The process has its copy of the channel: the runtime's copy of that end goes."""
        if self.channel is not None:
            self.channel.handed_over()

    def forward(self, port: int) -> str | None:
        """Open `port` on the host's 127.0.0.1 for the process (inside its namespace); None
        when it is, else why not (meith's own port, taken, no namespace here)."""
        if self.channel is None:
            return "no network namespace here: the process listens on the host itself"
        if self.forwarder is None:
            self.forwarder = PortForwarder(self.channel, reserved_ports)
        return self.forwarder.forward(port)

    def listening_ports(self, pid: int) -> list[int]:
        """The ports `pid` listens on in its network namespace (not yet on the host)."""
        return sorted(listening_ports(pid)) if self.channel is not None else []

    def host_ports(self) -> list[dict[str, object]]:
        """Each port asked for: whether the runtime took it on the host, and if not why."""
        ports = self.forwarder.ports if self.forwarder is not None else {}
        return [
            {"port": port, "forwarded": why is None, **({"reason": why} if why else {})}
            for port, why in sorted(ports.items())
        ]

    def cleanup(self) -> None:
        if self.forwarder is not None:
            self.forwarder.close()
        if self.channel is not None:
            self.channel.close()
        if self.gate is not None:
            self.gate.close()
        shutil.rmtree(self.tmpdir, ignore_errors=True)


#: Starts a process from `(argv, environment, pass_fds)`; what it returns is the caller's (a
#: transport). The descriptors in `pass_fds` must be inherited (`subprocess`'s `pass_fds`).
Starter = Callable[[list[str], dict[str, str], tuple[int, ...]], Awaitable[T]]


async def spawn_confined(
    confined: ConfinedSpawn | None,
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    start: Starter[T],
    markers: Mapping[str, str] | None = None,
    tty: str | None = None,
) -> T:
    """Start `argv` with `env` through `start`, inside `confined`'s walls when given: the one
    spawn sequence of every plugin. Raises what `start` raises (the env file is removed)."""
    if confined is None:
        return await start(list(argv), dict(env), ())
    confined.open_network()
    spawn_argv, spawn_env = confined.command(argv, env, markers=markers, tty=tty)
    try:
        started = await start(spawn_argv, spawn_env, confined.pass_fds)
    except BaseException:
        discard_env_file(spawn_env)
        raise
    finally:
        confined.started()
    return started


__all__ = [
    "ConfinedSpawn",
    "Starter",
    "add_meith_cli",
    "is_session_callback",
    "meith_cli",
    "spawn_confined",
]
