"""The host ports meith itself listens on: the MCP HTTP bridge's, the console's. A confined
process's port is never opened on the host at one of them (it would squat the port and take
the bridge's bearer token from the next client that connects).

Standard library only. One small file per user beside the registry of homes
(`$XDG_STATE_HOME/meith/ports.json`), shared by every home: `{"PORT": {"what": ..., "pid":
..., "configured": bool}}`. A port the user asked for (`meith mcp --http 18765`) stays
reserved after the listener exits (the next `meith mcp --http 18765` wants it again); one the
system chose (`--port 0`) only while its process lives.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from meith_core.base.home_registry import registry_dir


def registry_file() -> Path:
    return registry_dir().parent / "ports.json"


def _read() -> dict[str, dict[str, object]]:
    try:
        with open(registry_file(), "rb") as fh:
            data = json.loads(fh.read(1 << 20))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, dict)} if isinstance(data, dict) else {}


def _alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def record_port(port: int, what: str, *, configured: bool) -> None:
    """Note that `what` (this process) listens on host port `port` (best effort)."""
    entries = _read()
    entries[str(port)] = {"what": what, "pid": os.getpid(), "configured": configured}
    path = registry_file()
    with contextlib.suppress(OSError):
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        temp = path.with_name(f".ports.{os.getpid()}.tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(entries, fh)
        os.replace(temp, path)


def reserved_ports() -> dict[int, str]:
    """Port -> what of meith's uses it: every configured port, and the others while alive."""
    out: dict[int, str] = {}
    for key, entry in _read().items():
        if key.isdigit() and (entry.get("configured") is True or _alive(entry.get("pid"))):
            out[int(key)] = str(entry.get("what", "meith"))
    return out


__all__ = ["record_port", "registry_file", "reserved_ports"]
