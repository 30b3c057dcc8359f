"""`meith serve`: load plugins, listen on the socket, publish the instance, stop gracefully."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Literal

import structlog

from meith_core._version import __version__
from meith_core.base.envknobs import seconds_from_env
from meith_core.base.home import MeithHome, UnsafePathError, write_json_atomic
from meith_core.base.instances import (
    InstanceRecord,
    can_connect,
    default_socket_path,
    is_pid_alive,
    is_socket,
    read_instances,
)
from meith_core.confine.status import landlock_status
from meith_core.host import logs
from meith_core.host.runtime import Runtime
from meith_core.protocol.constants import PROTOCOL_VERSION
from meith_core.serve.capacity import TOKEN_GRACE_S
from meith_core.serve.prompt import TerminalApprover
from meith_core.serve.socket_server import IDLE_TIMEOUT_S, SocketServer
from meith_core.serve.socketbind import (
    BoundSocket,
    SocketBindError,
    bind_socket,
    socket_lock_held,
)

_log = structlog.get_logger("meith.serve")

CallApprovalMode = Literal["prompt", "deny"]


def reap_stale_instances(home: MeithHome) -> list[str]:
    """Delete records of runtimes that are gone (pid dead, or socket not connectable), and the
    socket files dead runtimes left behind when nobody holds their lock."""
    reaped: list[str] = []
    try:
        names = os.listdir(home.instances_dir)
    except OSError:
        return reaped
    records = {r.file: r for r in read_instances(home)}
    for name in names:
        path = home.instances_dir / name
        if not name.endswith(".json"):
            continue
        record = records.get(str(path))
        if record is not None and record.pid == os.getpid():
            continue
        alive = (
            record is not None and is_pid_alive(record.pid) and can_connect(record.socket_path, 0.3)
        )
        if alive:
            continue
        if record is not None and not is_pid_alive(record.pid):
            sock = Path(record.socket_path)
            if is_socket(sock) and not socket_lock_held(sock):
                with contextlib.suppress(OSError):
                    sock.unlink()
        with contextlib.suppress(OSError):
            path.unlink()
        reaped.append(name)
    return reaped


def _publish(
    home: MeithHome, socket_path: str, started_at: int, label: str | None, cwd: str
) -> Path:
    home.instances_dir.mkdir(mode=0o700, exist_ok=True)
    instance_path = home.instances_dir / f"{os.getpid()}.json"
    record = InstanceRecord(
        pid=os.getpid(),
        socket_path=socket_path,
        started_at=started_at,
        version=__version__,
        protocol_version=PROTOCOL_VERSION,
        cwd=cwd,
        # No default name: every runtime listed by `meith instances` shares this home, so its
        # folder's name (`.meith`) would tell them apart no better than nothing.
        label=label,
    )
    write_json_atomic(instance_path, record.to_json())
    write_json_atomic(
        home.config_path,
        {
            "socketPath": socket_path,
            "pid": os.getpid(),
            "startedAt": started_at,
            "version": __version__,
            "protocolVersion": PROTOCOL_VERSION,
            "instancesDir": str(home.instances_dir),
            "instancePath": str(instance_path),
            "home": str(home.root),
        },
    )
    return instance_path


def _plugin_line(runtime: Runtime) -> str:
    records = runtime.plugins.records.values()
    loaded = [r.id for r in records if r.status == "loaded"]
    failed = [f"{r.id} ({r.reason})" for r in records if r.status == "failed"]
    text = "plugins: " + (", ".join(loaded) or "none")
    if failed:
        text += "; failed: " + "; ".join(failed)
    return text


async def _serve(
    home: MeithHome,
    socket_path: Path | None,
    approvals: CallApprovalMode,
    label: str | None,
    stop: asyncio.Event,
    idle_timeout_s: float | None = IDLE_TIMEOUT_S,
) -> int:
    explicit = socket_path is not None
    path = socket_path or default_socket_path(home)
    try:
        # Bound (the path is ours) but not listening: a client that connects gets a runtime
        # that is discoverable and has its plugins started, never a half-started one.
        bound = bind_socket(path, create_dir=not explicit, listen=False)
    except SocketBindError as exc:
        print(f"meith serve: {exc}", file=sys.stderr)
        return 1

    # Beside it, the socket processes started for agent sessions call back on: every connection
    # there must present its session token (it is what a confined child can reach).
    child: BoundSocket | None = None
    with contextlib.suppress(SocketBindError):
        child = bind_socket(
            bound.path.with_name(bound.path.name + ".child"), create_dir=False, listen=False
        )
    runtime = Runtime(home)
    runtime.socket_path = str(bound.path)
    runtime.child_socket_path = str(child.path) if child is not None else None
    if approvals == "prompt":
        runtime.approvers.append(TerminalApprover())
    server: SocketServer | None = None
    instance_path: Path | None = None
    try:
        await runtime.start()
        server = SocketServer(
            runtime,
            bound,
            idle_timeout_s=idle_timeout_s,
            child=child,
            token_grace_s=seconds_from_env(os.environ, "MEITH_TOKEN_GRACE_S", TOKEN_GRACE_S, 60.0),
        )
        runtime.server = server
        reaped = reap_stale_instances(home)
        if reaped:
            _log.info("reaped stale instance records", records=reaped)
        started_at = time.time_ns() // 1_000_000
        instance_path = _publish(home, str(bound.path), started_at, label, runtime.cwd)
        bound.listen()
        if child is not None:
            child.listen()
        await server.start()
        print(
            f"meith {__version__}: listening on {bound.path} (pid {os.getpid()}); {_plugin_line(runtime)}",
            flush=True,
        )
        print(_confinement_line(), flush=True)
        _log.info(
            "runtime started", socket=str(bound.path), approvals=approvals, home=str(home.root)
        )
        await stop.wait()
        _log.info("shutting down")
    finally:
        if server is not None:
            await server.shutdown()
        await runtime.aclose()
        if instance_path is not None:
            with contextlib.suppress(OSError):
                instance_path.unlink()
        bound.release()
        if child is not None:
            child.release()
    _log.info("runtime stopped")
    return 0


def _confinement_line() -> str:
    """What a directory-confined grant confines on this host, naming every missing wall."""
    status = landlock_status()
    if not status.available:
        return f"confinement: NONE. {status.describe()}"
    missing = status.missing()
    if not missing:
        walls = ", ".join(w.name for w in status.walls())
        return f"confinement: Landlock ABI {status.abi}, every wall built ({walls})"
    lines = [f"confinement: Landlock ABI {status.abi}; walls MISSING on this host:"]
    lines += [f"  - {w.name}: fix: {w.fix}" for w in missing]
    return "\n".join(lines)


def serve(
    *,
    socket_path: str | None = None,
    approvals: CallApprovalMode = "deny",
    log_format: logs.LogFormat | None = None,
    label: str | None = None,
    idle_timeout_s: float | None = IDLE_TIMEOUT_S,
) -> int:
    """Run until SIGINT/SIGTERM; returns the process exit code. `idle_timeout_s`: close
    connections with nothing in flight that stay silent this long (None: never)."""
    try:
        home = MeithHome.from_env().ensure()
    except (UnsafePathError, OSError) as exc:
        print(f"meith serve: {exc}", file=sys.stderr)
        return 1
    logs.configure(log_format, home.logs_path)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    _watch_children_on_the_loop(loop)
    stop = asyncio.Event()
    signals = 0

    def on_signal(signum: int) -> None:
        nonlocal signals
        signals += 1
        if signals > 1:
            print("meith serve: second signal, exiting now", file=sys.stderr, flush=True)
            os._exit(1)
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal, sig)
    if signal.getsignal(signal.SIGHUP) == signal.SIG_IGN:
        # `nohup meith serve`: an ignored signal stays ignored across exec, so every process
        # the runtime starts would ignore its hangup (a closed terminal's jobs included). A
        # caught one is reset by exec: caught and dropped, the runtime still outlives it.
        loop.add_signal_handler(signal.SIGHUP, lambda: None)
    code = 1
    try:
        code = loop.run_until_complete(
            _serve(
                home,
                Path(socket_path) if socket_path else None,
                approvals,
                label,
                stop,
                idle_timeout_s,
            )
        )
    finally:
        leftovers = _finish_loop(loop)
    sys.stdout.flush()
    sys.stderr.flush()
    if leftovers:
        # A tool that swallows cancellation or blocks a thread must not keep the process alive
        # after an orderly shutdown: everything that matters is already written and released.
        os._exit(code)
    return code


def _finish_loop(loop: asyncio.AbstractEventLoop) -> bool:
    """Cancel what is left, wait briefly; True when something refused to finish."""
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in pending:
        task.cancel()
    stuck = False
    if pending:
        _done, still = loop.run_until_complete(asyncio.wait(pending, timeout=0.3))
        stuck = bool(still)
    with contextlib.suppress(Exception):
        loop.run_until_complete(asyncio.wait_for(loop.shutdown_asyncgens(), 0.2))
    if not stuck:
        loop.close()
    busy_threads = [
        t
        for t in threading.enumerate()
        if t is not threading.main_thread() and not t.daemon and t.is_alive()
    ]
    return stuck or bool(busy_threads)


def _watch_children_on_the_loop(loop: asyncio.AbstractEventLoop) -> None:
    """On Python 3.11 asyncio learns that a subprocess exited from a thread it starts for each
    one (ThreadedChildWatcher), and spawning waits for that thread to start: in a busy runtime
    that is most of what starting a short `git` or `rg` costs. A pidfd watcher waits on the
    loop itself, without threads; Python 3.12 and newer do this on their own (and deprecate
    watchers), and a kernel without pidfds (before 5.3, or a seccomp filter) keeps the
    default. Only `meith serve` sets it: it owns its process and its one loop, where a program
    embedding the runtime may run loops of its own."""
    if sys.version_info >= (3, 12) or not hasattr(os, "pidfd_open"):
        return
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return
    watcher = asyncio.PidfdChildWatcher()
    watcher.attach_loop(loop)
    asyncio.set_child_watcher(watcher)
