"""Where meith keeps its files (`$MEITH_HOME`, default `~/.meith`) and how it writes them.

Standard library only: the CLI reads these paths on every start.

The files under the home are the trust root (grants, plugin approvals, audit), so the home
directory is 0700, owned by the user, and files are written 0600, atomically for JSON state.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from meith_core.base.beneath import write_file_beneath

DIR_MODE = 0o700
FILE_MODE = 0o600
#: The public name of FILE_MODE: what a plugin writes under MEITH_HOME is 0600.
PRIVATE_FILE_MODE = FILE_MODE


class UnsafePathError(RuntimeError):
    """A directory or file that meith must trust is not owned by the user or is too open."""


def default_home() -> Path:
    env = os.environ.get("MEITH_HOME")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".meith"


@dataclass(frozen=True, slots=True)
class MeithHome:
    root: Path

    @classmethod
    def from_env(cls) -> MeithHome:
        return cls(default_home())

    @property
    def config_path(self) -> Path:
        return self.root / "config.json"

    @property
    def instances_dir(self) -> Path:
        return self.root / "instances"

    @property
    def audit_path(self) -> Path:
        return self.root / "audit.jsonl"

    @property
    def logs_path(self) -> Path:
        return self.root / "logs.jsonl"

    @property
    def grants_path(self) -> Path:
        return self.root / "grants.json"

    @property
    def plugins_path(self) -> Path:
        return self.root / "plugins.json"

    @property
    def settings_path(self) -> Path:
        return self.root / "settings.json"

    @property
    def artifacts_dir(self) -> Path:
        return self.root / "artifacts"

    @property
    def run_dir(self) -> Path:
        return self.root / "run"

    @property
    def state_dir(self) -> Path:
        """Per-plugin state that must survive a crash (e.g. managed pids)."""
        return self.root / "state"

    def ensure(self) -> MeithHome:
        """Create the home (0700) and check it is safe to trust."""
        ensure_private_dir(self.root)
        return self


def ensure_private_dir(path: Path, *, fix_mode: bool = True) -> None:
    """Create `path` as a 0700 directory owned by the user, or check an existing one.

    An existing directory owned by someone else is refused. One that is group/world
    accessible is tightened when `fix_mode` (it is ours), refused otherwise.
    """
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=DIR_MODE, parents=True)
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        # A symlinked home is allowed (dotfile setups), but what it points at must be safe.
        st = os.stat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafePathError(f"{path} exists and is not a directory")
    if st.st_uid != os.geteuid():
        raise UnsafePathError(
            f"{path} is owned by uid {st.st_uid}, not by you (uid {os.geteuid()}); "
            "refusing to use it. Choose another MEITH_HOME."
        )
    if stat.S_IMODE(st.st_mode) & 0o077:
        if not fix_mode:
            raise UnsafePathError(
                f"{path} is accessible to other users (mode {stat.S_IMODE(st.st_mode):o}); "
                f"run: chmod 700 {path}"
            )
        os.chmod(path, DIR_MODE)


def read_json(path: Path) -> Any | None:
    """The parsed JSON at `path`, or None when missing or corrupt."""
    try:
        with open(path, "rb") as fh:
            return json.loads(fh.read())
    except (OSError, ValueError):
        return None


def write_json_atomic(path: Path, data: Any, *, mode: int = FILE_MODE) -> None:
    """Write JSON to a temporary file in the same directory, fsync, then rename over `path`.

    Readers see the old or the new content, never half of it; a symbolic link at `path` is
    replaced, never written through (the one writer of private files, `write_file_beneath`).
    """
    payload = (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    write_file_beneath(path.parent, path.name, payload, mode=mode)


def file_signature(path: Path) -> tuple[int, int, int] | None:
    """(inode, size, mtime_ns) of a file, to notice edits by another process cheaply."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)
