"""Finding a runtime: socket paths, instance records, liveness, peer credentials.

Standard library only: every CLI invocation runs this.

Target resolution, in order: an explicit socket; `--instance PID|LABEL` among live instances;
the newest live instance; the socket named in `config.json`; the default socket path.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import signal
import socket
import stat
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from meith_core.base.home import MeithHome

#: sun_path is 108 bytes on Linux, including the terminating NUL.
MAX_SOCKET_PATH_BYTES = 107
SOCKET_NAME = "meith.sock"


class TargetError(RuntimeError):
    """No runtime matches what was asked for; the message says what to do."""


def default_socket_path(home: MeithHome) -> Path:
    """`$MEITH_HOME/run/meith.sock`, or a per-user directory in /tmp when that is too long."""
    path = home.run_dir / SOCKET_NAME
    if len(os.fsencode(path)) <= MAX_SOCKET_PATH_BYTES:
        return path
    digest = hashlib.sha256(os.fsencode(home.root)).hexdigest()[:16]
    # bind_socket creates this directory 0700 and refuses one another user planted.
    return Path(f"/tmp/meith-{os.geteuid()}") / f"{digest}.sock"  # noqa: S108


def is_pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    except OSError:
        return False
    return True


def is_socket(path: str | os.PathLike[str]) -> bool:
    try:
        return stat.S_ISSOCK(os.lstat(path).st_mode)
    except OSError:
        return False


def can_connect(path: str | os.PathLike[str], timeout: float = 0.5) -> bool:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(os.fspath(path))
    except OSError:
        return False
    finally:
        sock.close()
    return True


def peer_credentials(sock: socket.socket) -> tuple[int, int, int]:
    """(pid, uid, gid) of the process at the other end of a connected Unix socket."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, gid = struct.unpack("3i", raw)
    return pid, uid, gid


def parent_pid(pid: int) -> int | None:
    """The parent of `pid` (Linux /proc), or None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
        # The command name may hold spaces and parentheses: fields resume after the last ')'.
        return int(stat[stat.rindex(b")") + 2 :].split()[1])
    except (OSError, ValueError, IndexError):
        return None


#: SO_PEERPIDFD (Linux 6.5+): a pidfd for the process that connected, pinned at connect().
_SO_PEERPIDFD = getattr(socket, "SO_PEERPIDFD", 77)
#: Whether process ancestry can be read at all (Linux /proc); elsewhere nobody is a descendant.
_HAS_PROC = os.path.exists("/proc/self/stat")


def _peer_pidfd(sock: socket.socket) -> int | None:
    """A pidfd of the peer; None when the kernel has none to give (too old, not Linux).

    Raises ProcessLookupError when the peer is already gone."""
    if not _HAS_PROC:
        return None
    try:
        return int(sock.getsockopt(socket.SOL_SOCKET, _SO_PEERPIDFD))
    except OSError as exc:
        if exc.errno == errno.ESRCH:
            raise ProcessLookupError(exc.errno, exc.strerror) from exc
        return None


def peer_descends_from(sock: socket.socket, pid: int, ancestor: int) -> bool:
    """Whether the peer `pid` of `sock` is a descendant of `ancestor`, failing closed: also
    True when that cannot be told on Linux (the peer is gone, its pid was reused or its parent
    changed while it was looked at).

    The pidfd pins the peer's identity: a pid cannot be handed to another process while its
    pidfd's process still exists (even as a zombie), so ancestry read before the pidfd is
    found alive is the peer's own. Without SO_PEERPIDFD (kernels before 6.5) the parent chain
    is read by pid alone, and a peer that exits and has its pid reused in that instant could
    be misjudged."""
    if not _HAS_PROC:
        return False
    try:
        pidfd = _peer_pidfd(sock)
    except ProcessLookupError:
        return True
    try:
        for _ in range(3):
            parent = parent_pid(pid)
            if parent is None:
                return True  # gone before it could be looked at
            found = _chain_reaches(parent, ancestor)
            if parent_pid(pid) != parent:
                continue  # re-parented while the chain was walked: walk it again
            if pidfd is not None and not _pidfd_alive(pidfd):
                return True
            return found is not False
        return True
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _chain_reaches(pid: int, ancestor: int) -> bool | None:
    """Whether `ancestor` is `pid` or one of its ancestors; None when the chain could not be
    read to its end (a process left mid-walk, or a chain deeper than any real one)."""
    current: int | None = pid
    for _ in range(4096):
        if current == ancestor:
            return True
        if current is None:
            return None
        if current <= 1:
            return False
        current = parent_pid(current)
    return None


def _pidfd_alive(pidfd: int) -> bool:
    try:
        signal.pidfd_send_signal(pidfd, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # EPERM and the like: it exists
    return True


@dataclass(frozen=True, slots=True)
class InstanceRecord:
    pid: int
    socket_path: str
    started_at: int
    version: str = "0.0.0"
    protocol_version: int = 1
    cwd: str | None = None
    label: str | None = None
    file: str | None = None

    @classmethod
    def from_json(cls, data: Any, file: str | None = None) -> InstanceRecord | None:
        if not isinstance(data, dict):
            return None
        try:
            return cls(
                pid=int(data["pid"]),
                socket_path=str(data["socketPath"]),
                started_at=int(data.get("startedAt") or 0),
                version=str(data.get("version") or "0.0.0"),
                protocol_version=int(data.get("protocolVersion") or 1),
                cwd=data.get("cwd"),
                label=data.get("label"),
                file=file,
            )
        except (KeyError, TypeError, ValueError):
            return None

    def to_json(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "socketPath": self.socket_path,
            "protocolVersion": self.protocol_version,
            "version": self.version,
            "startedAt": self.started_at,
            "cwd": self.cwd,
            "label": self.label,
        }

    @property
    def live(self) -> bool:
        """Cheap liveness for clients: the pid exists and the socket file is a socket."""
        return is_pid_alive(self.pid) and is_socket(self.socket_path)


def read_instances(home: MeithHome) -> list[InstanceRecord]:
    """Every parseable record, corrupt ones skipped (the runtime reaps them at boot)."""
    out: list[InstanceRecord] = []
    try:
        names = sorted(os.listdir(home.instances_dir))
    except OSError:
        return out
    for name in names:
        if not name.endswith(".json"):
            continue
        path = home.instances_dir / name
        try:
            data = json.loads(path.read_bytes())
        except (OSError, ValueError):
            continue
        record = InstanceRecord.from_json(data, file=str(path))
        if record is not None:
            out.append(record)
    return out


def live_instances(home: MeithHome) -> list[InstanceRecord]:
    """Live instances, newest first."""
    return sorted(
        (r for r in read_instances(home) if r.live), key=lambda r: r.started_at, reverse=True
    )


def match_instances(home: MeithHome, selector: str) -> list[InstanceRecord]:
    return [r for r in live_instances(home) if str(r.pid) == selector or r.label == selector]


@dataclass(frozen=True, slots=True)
class Target:
    socket_path: str
    source: Literal["socket", "env", "instance", "newest", "config", "default"]
    instance: InstanceRecord | None = None


def resolve_target(
    home: MeithHome, *, socket_path: str | None = None, instance: str | None = None
) -> Target:
    if socket_path:
        return Target(os.path.abspath(socket_path), "socket")
    if instance:
        matches = match_instances(home, instance)
        if not matches:
            raise TargetError(
                f'No live instance matches "{instance}". Run "meith instances" to see running instances.'
            )
        return Target(matches[0].socket_path, "instance", matches[0])
    env_socket = os.environ.get("MEITH_SOCKET")
    if env_socket:
        return Target(env_socket, "env")
    live = live_instances(home)
    if live:
        return Target(live[0].socket_path, "newest", live[0])
    with contextlib.suppress(OSError, ValueError):
        config = json.loads(home.config_path.read_bytes())
        if isinstance(config, dict) and isinstance(config.get("socketPath"), str):
            return Target(config["socketPath"], "config")
    return Target(str(default_socket_path(home)), "default")


def connect_error_message(path: str, exc: OSError) -> str:
    """One sentence naming the socket and saying what to do."""
    if exc.errno in (errno.ENOENT, errno.ECONNREFUSED):
        return f"No meith runtime is listening at {path}. Start one with: meith serve"
    if exc.errno == errno.EACCES:
        return f"Permission denied connecting to the meith runtime at {path}; it belongs to another user."
    return f"Could not connect to the meith runtime at {path} ({exc.strerror or exc}). Is `meith serve` running?"
