"""Every meith home of this user: a small registry outside any one home, so that a confined
process can be kept out of all of them (and of all runtimes' sockets), not only the home of
the runtime that started it.

Standard library only. Each home a runtime opens leaves one file in the registry
(`$XDG_STATE_HOME/meith/homes/<digest>`, holding the home's path); entries whose home is gone
are skipped and pruned. The registry itself, and the per-user directory in /tmp where sockets
with too long a path live, are hidden from confined processes too.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from pathlib import Path


def registry_dir() -> Path:
    """`$XDG_STATE_HOME/meith/homes` (default `~/.local/state/meith/homes`)."""
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(Path.home(), ".local", "state")
    return Path(state) / "meith" / "homes"


def user_tmp_dir() -> Path:
    """`/tmp/meith-<uid>`: sockets whose path would be too long, the wrapper's env files."""
    return Path(f"/tmp/meith-{os.geteuid()}")  # noqa: S108 - created 0700, checked


def _entry(root: str) -> str:
    return hashlib.sha256(os.fsencode(root)).hexdigest()[:24]


def register_home(root: str | os.PathLike[str]) -> None:
    """Remember `root` as a meith home of this user (best effort; one stat when known)."""
    real = os.path.realpath(root)
    directory = registry_dir()
    path = directory / _entry(real)
    if os.path.lexists(path):
        return
    with contextlib.suppress(OSError):
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, os.fsencode(real))
        finally:
            os.close(fd)


#: The registry as last read: (its directory's identity and change time, the homes it named).
_read: tuple[tuple[int, int, int], list[str]] | None = None


def _registered() -> list[str]:
    """The homes the registry names, resolved. Read again only when the registry directory
    changed (an entry added or pruned changes its mtime): every confined spawn and every read
    an agent makes asks, and a long-lived user has thousands of entries. A home deleted
    without its entry stays listed until the next change; callers test existence anyway."""
    global _read
    directory = registry_dir()
    try:
        st = os.stat(directory)
    except OSError:
        return []
    key = (st.st_dev, st.st_ino, st.st_mtime_ns)
    if _read is not None and _read[0] == key:
        return _read[1]
    found: list[str] = []
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        names = []
    for name in names:
        path = directory / name
        try:
            with open(path, "rb") as fh:
                root = os.fsdecode(fh.read(4096)).strip()
        except OSError:
            continue
        if root and os.path.isdir(root):
            found.append(os.path.realpath(root))
        else:
            with contextlib.suppress(OSError):
                os.unlink(path)
    try:
        st = os.stat(directory)  # after pruning: the state this list describes
    except OSError:
        _read = None
        return found
    # Timestamps are coarse (a clock tick): an entry added in the tick of this read could leave
    # the mtime as it is. A list read within a second of the last change is not kept (as git
    # treats a "racily clean" index entry).
    settled = time.time_ns() - st.st_mtime_ns > 1_000_000_000
    _read = ((st.st_dev, st.st_ino, st.st_mtime_ns), found) if settled else None
    return found


def known_homes() -> list[str]:
    """The homes in the registry (resolved), plus the default `~/.meith` and `$MEITH_HOME`
    (registered or not)."""
    found = list(_registered())
    found.append(os.path.realpath(os.path.join(Path.home(), ".meith")))
    env = os.environ.get("MEITH_HOME")
    if env:
        found.append(os.path.realpath(os.path.expanduser(env)))
    return list(dict.fromkeys(found))


def known_sockets(homes: list[str] | None = None) -> list[str]:
    """The sockets (and token-only `.child` sockets) that the instance records of every known
    home name: a runtime's socket may live outside its home (`meith serve --socket`)."""
    found: list[str] = []
    for root in known_homes() if homes is None else homes:
        directory = os.path.join(root, "instances")
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        for name in names:
            if not name.endswith(".json"):
                continue
            try:
                with open(os.path.join(directory, name), "rb") as fh:
                    data = json.loads(fh.read(65536))
            except (OSError, ValueError):
                continue
            path = data.get("socketPath") if isinstance(data, dict) else None
            if isinstance(path, str) and os.path.isabs(path):
                found += [path, path + ".child"]
    return [p for p in dict.fromkeys(found) if os.path.lexists(p)]


__all__ = ["known_homes", "known_sockets", "register_home", "registry_dir", "user_tmp_dir"]
