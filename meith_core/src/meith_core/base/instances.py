"""Finding a runtime: socket paths, instance records, liveness (peer credentials: `base.peers`).

Standard library only: every CLI invocation runs this.

RuntimeTarget resolution, in order: an explicit socket; `--instance PID|LABEL` among live instances;
the newest live instance; the socket named in `config.json`; the default socket path.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import socket
import stat
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
class RuntimeTarget:
    socket_path: str
    source: Literal["socket", "env", "instance", "newest", "config", "default"]
    instance: InstanceRecord | None = None


def resolve_target(
    home: MeithHome, *, socket_path: str | None = None, instance: str | None = None
) -> RuntimeTarget:
    if socket_path:
        return RuntimeTarget(os.path.abspath(socket_path), "socket")
    if instance:
        matches = match_instances(home, instance)
        if not matches:
            raise TargetError(
                f'No live instance matches "{instance}". Run "meith instances" to see running instances.'
            )
        return RuntimeTarget(matches[0].socket_path, "instance", matches[0])
    env_socket = os.environ.get("MEITH_SOCKET")
    if env_socket:
        return RuntimeTarget(env_socket, "env")
    live = live_instances(home)
    if live:
        return RuntimeTarget(live[0].socket_path, "newest", live[0])
    with contextlib.suppress(OSError, ValueError):
        config = json.loads(home.config_path.read_bytes())
        if isinstance(config, dict) and isinstance(config.get("socketPath"), str):
            return RuntimeTarget(config["socketPath"], "config")
    return RuntimeTarget(str(default_socket_path(home)), "default")


def connect_error_message(path: str, exc: OSError) -> str:
    """One sentence naming the socket and saying what to do."""
    if exc.errno in (errno.ENOENT, errno.ECONNREFUSED):
        return f"No meith runtime is listening at {path}. Start one with: meith serve"
    if exc.errno == errno.EACCES:
        return f"Permission denied connecting to the meith runtime at {path}; it belongs to another user."
    return f"Could not connect to the meith runtime at {path} ({exc.strerror or exc}). Is `meith serve` running?"
