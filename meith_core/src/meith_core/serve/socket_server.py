"""The socket server: accepts connections (`serve.socket_connection`), admits peers,
watches for unfinished frames, idle connections and tool list changes, and shuts down.

Built on asyncio's Protocol/Transport rather than anyio streams, deliberately: the peer's
credentials are checked in `connection_made`, before a single byte is read; frames are decoded
synchronously as bytes arrive; and the transport's write buffer gives an exact, cheap measure
for the per-connection outbound bound (a client that stops reading is disconnected instead of
growing the runtime's memory). The protocol rules live in the sans-IO `Connection`
(`protocol.connection`); the adapters only move bytes, run calls as tasks through
`CallPipeline.call`, and wait.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from typing import Any, Final

import structlog

from meith_core.base.envknobs import seconds_from_env
from meith_core.base.peers import peer_confinement, peer_credentials, peer_descends_from
from meith_core.call.tasks import TaskSet
from meith_core.host.runtime import Runtime
from meith_core.protocol import frames
from meith_core.serve.admission import Admitted, Refusal
from meith_core.serve.capacity import (
    MAX_CONNECTIONS_PER_PEER,
    TOKEN_GRACE_S,
    Capacity,
    Limits,
    Slot,
    tree_root,
)
from meith_core.serve.orphans import OrphanReaper, adopt_orphans, release_orphans
from meith_core.serve.socket_connection import SocketConnection
from meith_core.serve.socketbind import BoundSocket

_log = structlog.get_logger("meith.server")

#: Bytes queued for one client before it counts as not reading and is disconnected.
MAX_OUTBOUND_BYTES: Final = 16 * 1024 * 1024
#: A frame started but not finished within this many seconds closes the connection.
PARTIAL_FRAME_TIMEOUT_S: Final = 30.0
#: A connection with nothing in flight that sends nothing for this long is closed. Any frame
#: resets it; `{"type":"ping"}` is the cheap one.
IDLE_TIMEOUT_S: Final = 600.0
#: How long a resumable session (`hello.resumable`, the MCP bridge's) is kept after its
#: connection closed without `end_session`, waiting for its client to resume it; then it ends
#: and what it started is stopped. `MEITH_SESSION_RESUME_S` tunes it.
RESUME_WINDOW_S: Final = seconds_from_env(os.environ, "MEITH_SESSION_RESUME_S", 120.0)


class SocketServer:
    def __init__(
        self,
        runtime: Runtime,
        bound: BoundSocket,
        *,
        max_outbound_bytes: int = MAX_OUTBOUND_BYTES,
        partial_frame_timeout_s: float = PARTIAL_FRAME_TIMEOUT_S,
        idle_timeout_s: float | None = IDLE_TIMEOUT_S,
        max_connections_per_peer: int = MAX_CONNECTIONS_PER_PEER,
        watch_interval_s: float = 1.0,
        child: BoundSocket | None = None,
        limits: Limits | None = None,
        token_grace_s: float = TOKEN_GRACE_S,
        resume_window_s: float = RESUME_WINDOW_S,
        admit_own_process: bool = False,
    ) -> None:
        self.runtime = runtime
        #: Whether a peer in the runtime's own process is served: only a test harness that
        #: embeds the runtime and its clients in one process says so.
        self.admit_own_process = admit_own_process
        self.resume_window_s = resume_window_s
        self.bound = bound
        #: The token-only socket for processes started for agent sessions (see
        #: `policy.child_tokens`).
        self.child = child
        self._child_server: asyncio.AbstractServer | None = None
        self.uid = os.geteuid()
        self.max_outbound_bytes = max_outbound_bytes
        self.partial_frame_timeout_s = partial_frame_timeout_s
        self.idle_timeout_s = idle_timeout_s
        self.watch_interval_s = watch_interval_s
        #: A connection on the children's socket that has no valid session token after this
        #: long is closed.
        self.token_grace_s = token_grace_s
        self.connections: set[SocketConnection] = set()
        limits = dataclasses.replace(limits or Limits(), per_peer=max_connections_per_peer)
        #: Slots per peer, per process tree the runtime started, per session (`serve.capacity`).
        self.capacity = Capacity(limits)
        self.call_tasks = TaskSet("calls")
        self._server: asyncio.AbstractServer | None = None
        self._watchdog: asyncio.Task[None] | None = None
        self._session_tasks = TaskSet("session clean-up")
        self._tools_frame: tuple[object, bytes] | None = None
        self.started_at = time.time()
        #: Set while this server keeps the runtime a child subreaper (see `serve.orphans`).
        self._orphans: OrphanReaper | None = None

    @property
    def socket_path(self) -> str:
        return str(self.bound.path)

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        # Before the first connection: a process a tool starts stays a descendant even when
        # it detaches, and so cannot pass for the local user.
        if self._orphans is None and adopt_orphans():
            self._orphans = OrphanReaper()
        # `sock=`: asyncio must not create (and so must not unlink) the path itself.
        self._server = await loop.create_unix_server(
            lambda: SocketConnection(self), sock=self.bound.sock
        )
        if self.child is not None:
            self._child_server = await loop.create_unix_server(
                lambda: SocketConnection(self, token_only=True), sock=self.child.sock
            )
        self._watchdog = loop.create_task(self._watch())

    # -- admission --------------------------------------------------------------------------

    def admit(self, sock: Any) -> Admitted | Refusal:
        """Who the peer is when it may connect, else why not."""
        try:
            pid, uid, _gid = peer_credentials(sock)
        except OSError as exc:
            return Refusal(f"peer credentials unavailable ({exc})")
        if uid != self.uid and uid != 0:
            return Refusal(f"peer pid {pid} belongs to another user (uid {uid})")
        runtime_pid = os.getpid()
        if pid == runtime_pid and not self.admit_own_process:
            # Nothing of the runtime's own connects to its socket: a peer with its pid is a
            # connection the runtime was tricked into making for someone else.
            return Refusal(f"peer pid {pid} is this runtime itself")
        # Root (allowed in) is not confined by a runtime of this user. A peer confined by any
        # runtime (another user namespace, no_new_privs) is held like this runtime's own
        # descendants: it must show a token, and it shares their slots.
        confined = peer_confinement(pid) if uid == self.uid else None
        descendant = confined is not None or peer_descends_from(sock, pid, runtime_pid)
        slot = self.capacity.admit(pid, tree_root(pid, runtime_pid) if descendant else None)
        if not isinstance(slot, Slot):
            return Refusal(slot, tell=True)
        return Admitted(pid, descendant, slot, confined)

    def bind_session(self, conn: SocketConnection, session_id: str) -> str | None:
        """Count `conn` for the session its token names; why it must close when over."""
        slot = conn.slot
        return self.capacity.bind_session(slot, session_id) if slot is not None else None

    def forget(self, conn: SocketConnection) -> None:
        if conn in self.connections:
            self.connections.discard(conn)
        if conn.slot is not None:
            self.capacity.release(conn.slot)
            conn.slot = None

    # -- answers ----------------------------------------------------------------------------

    def tools_list_frame(self, names: list[str] | None = None) -> bytes:
        if names is not None:
            wanted = set(names)
            tools = [t for t in self.runtime.tool_listing() if t["name"] in wanted]
            return frames.tools_list_frame(tools)
        version = self.runtime.catalogue_version()
        if self._tools_frame is None or self._tools_frame[0] != version:
            self._tools_frame = (version, frames.tools_list_frame(self.runtime.tool_listing()))
        return self._tools_frame[1]

    def session_ended(self, session_id: str, *, ending: bool = True) -> None:
        """A connection closed: its session ends, or waits to be resumed when it is resumable
        and the client did not say it was done."""
        if not ending and self.runtime.sessions.detach(
            session_id, time.monotonic() + self.resume_window_s
        ):
            _log.info(
                "session detached, waiting to be resumed",
                sessionId=session_id,
                windowS=self.resume_window_s,
            )
            return
        self._session_tasks.spawn(self.runtime.close_session(session_id))

    # -- the watchdog: unfinished frames, idle connections, tool list changes -------------

    async def _watch(self) -> None:
        interval = min(self.watch_interval_s, self.partial_frame_timeout_s / 4)
        if self.idle_timeout_s is not None:
            interval = min(interval, self.idle_timeout_s / 4)
        interval = min(interval, self.token_grace_s / 4)
        catalogue = self.runtime.catalogue_version()
        while True:
            await asyncio.sleep(interval)
            now = time.monotonic()
            if self._orphans is not None:
                self._orphans.sweep(now)
            for session_id in self.runtime.sessions.expired(now):
                _log.info("detached session not resumed in time; ending it", sessionId=session_id)
                self._session_tasks.spawn(self.runtime.close_session(session_id))
            for conn in list(self.connections):
                why = (
                    conn.rules.overdue(
                        now,
                        self.partial_frame_timeout_s,
                        self.idle_timeout_s,
                        # On the children's socket a connection is its token, or is closed.
                        self.token_grace_s if conn.token_only else None,
                    )
                    if conn.rules
                    else ""
                )
                if why:
                    _log.info("closing connection", reason=why, sessionId=conn.session_id)
                    conn.close(why)
            watchers = [c for c in self.connections if c.rules is not None and c.rules.watching]
            if watchers:
                current = self.runtime.catalogue_version()
                if current != catalogue:
                    catalogue = current
                    for conn in watchers:
                        conn.send(frames.TOOLS_CHANGED)
            else:
                catalogue = self.runtime.catalogue_version()

    def status(self) -> dict[str, Any]:
        return {
            "socketPath": self.socket_path,
            "listening": self._server is not None and self._server.is_serving(),
            "connections": len(self.connections),
            "capacity": self.capacity.status(),
            "inFlight": sum(c.rules.in_flight for c in self.connections if c.rules),
        }

    async def shutdown(self, answer_timeout_s: float = 0.6) -> None:
        """Refuse new calls, cancel in-flight ones and let them answer, then close everything."""
        self.runtime.pipeline.begin_shutdown()
        if self._server is not None:
            self._server.close()
        if self._child_server is not None:
            self._child_server.close()
        self.runtime.pipeline.cancel_all("runtime shutting down")
        await self.call_tasks.wait(answer_timeout_s)
        self.call_tasks.cancel()
        for conn in list(self.connections):
            conn.close()
        if self._watchdog is not None:
            self._watchdog.cancel()
        # Give transports a moment to flush the answers they hold (asyncio signals only the
        # high-water mark, not "drained", so poll briefly).
        deadline = time.monotonic() + 0.2
        while time.monotonic() < deadline and any(c.buffered for c in self.connections):  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        for conn in list(self.connections):
            conn.abort()
        await self._session_tasks.wait(0.2)
        if self._orphans is not None:
            self._orphans = None
            release_orphans()
