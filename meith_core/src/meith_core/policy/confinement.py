"""Kernel confinement for processes started under a directory-confined grant (Landlock).

A `Confinement` is a plan: which directories and files the process may write, computed from
the grant's directory minus what must stay out of reach (meith's home, its own installation).
`wrap(argv)` returns the argv that applies it in the child, between spawn and exec, through the
small exec wrapper `policy/confine_exec.py`. Reads and execution stay allowed.

Where unprivileged user namespaces work, the plan also covers meith's home and socket (the
process can neither read the trust root nor call back into the runtime as the local user) and
mounts repository metadata inside the writable directory read-only (`.git`, the `gitdir:` a
worktree's `.git` file points to): a hook or config key planted there would run later, in the
user's own git, outside every wall.

Landlock rules only add access, so a protected directory inside the granted one is carved out
by granting the granted directory's other entries one by one instead: the process can then
write anywhere beneath them, but cannot create new entries directly in the directories that
lead to the protected one (the granted directory itself, in the common case).
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from meith_core.base.paths import is_within
from meith_core.policy import confine_exec as _confine_exec

#: Device files every program expects to write (output discarded, random numbers, its tty).
DEVICE_FILES: Final = (
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/random",
    "/dev/urandom",
    "/dev/ptmx",
)
#: Pseudo-terminal slaves, and POSIX shared memory (semaphores of Python's multiprocessing).
DEVICE_DIRS: Final = ("/dev/pts", "/dev/shm")  # noqa: S108 - granted, not used as a temp dir

_WRAPPER: Final = _confine_exec.__file__


@dataclass(frozen=True, slots=True)
class LandlockStatus:
    """What this kernel's Landlock can enforce."""

    abi: int
    #: Whether user and mount namespaces work here (hiding meith's home and socket, and
    #: read-only repository metadata).
    namespaces: bool = False

    @property
    def available(self) -> bool:
        return self.abi >= 1

    @property
    def scopes_signals(self) -> bool:
        return self.abi >= 6

    def describe(self) -> str:
        if not self.available:
            return (
                "Landlock is not available on this kernel: a directory-confined grant only "
                "limits where processes start; what they run has the user's full access"
            )
        text = (
            f"Landlock ABI {self.abi}: processes started under a directory-confined grant can "
            "write only beneath that directory and a private temporary directory"
        )
        if self.scopes_signals:
            text += ", and cannot signal or reach abstract sockets outside their domain"
        else:
            text += " (signals and abstract sockets are not scoped before ABI 6)"
        if self.namespaces:
            return text + "; meith's home and socket are hidden from them and .git is read-only"
        return (
            text + "; user namespaces are unavailable, so they can still read meith's home, "
            "connect to its socket, and write .git inside that directory"
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "available": self.available,
            "abi": self.abi,
            "scopesSignals": self.scopes_signals,
            "namespaces": self.namespaces,
            "summary": self.describe(),
        }


@functools.cache
def landlock_status() -> LandlockStatus:
    """The kernel's Landlock and namespace support (asked once per process)."""
    abi = _confine_exec.abi_version()
    return LandlockStatus(abi, abi >= 1 and _namespaces_work())


def _namespaces_work() -> bool:
    try:
        probe = subprocess.run(
            [sys.executable, "-I", "-S", "-B", _WRAPPER, "--probe-namespaces"],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return probe.returncode == 0


@dataclass(frozen=True, slots=True)
class Confinement:
    """Where a confined process may write."""

    write_dirs: tuple[str, ...]
    write_files: tuple[str, ...] = ()
    #: Mounted read-only, then covered, in a private mount namespace (empty without one).
    read_only: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    #: `(source, target)`: source mounted on the file target before anything is covered.
    binds: tuple[tuple[str, str], ...] = ()

    @classmethod
    def beneath(
        cls,
        directory: str,
        *,
        home: str | Path | None = None,
        extra_dirs: Iterable[str] = (),
        protect: Iterable[str] = (),
        hide: Iterable[str] = (),
        bind: Iterable[tuple[str, str]] = (),
    ) -> Confinement:
        """Write access beneath `directory`, the `extra_dirs` (a private temp dir) and the usual
        device files; never to meith's `home` (the trust root), meith's own installation or
        the `protect`ed paths, even inside `directory`. With namespaces, `home` and the `hide`
        paths (the runtime's socket) are covered and repository metadata is read-only, and each
        `bind` source (the socket, for a child that calls back with a session token) is mounted
        on its target file first; without namespaces nothing is covered or bound."""
        root = os.path.realpath(directory)
        guarded = [os.path.realpath(p) for p in [*_protected(home), *protect]]
        dirs, files = _carve(root, [p for p in guarded if is_within(p, root)])
        dirs += [os.path.realpath(d) for d in extra_dirs]
        dirs += [d for d in DEVICE_DIRS if os.path.isdir(d)]
        files += [f for f in DEVICE_FILES if os.path.exists(f)]
        if not landlock_status().namespaces:
            return cls(tuple(dirs), tuple(files))
        covered = [str(home), *hide] if home is not None else list(hide)
        real = [os.path.realpath(p) for p in covered if os.path.lexists(p)]
        # Covering a directory covers what is inside it (which is then gone to mount on).
        hidden = tuple(p for p in real if not any(q != p and is_within(p, q) for q in real))
        writable = [root, *dirs]
        metadata = tuple(
            p for p in repository_metadata(root) if any(is_within(p, w) for w in writable)
        )
        return cls(tuple(dirs), tuple(files), metadata, hidden, tuple(bind))

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """`argv` run through the exec wrapper that confines it first."""
        wrapped = [sys.executable, "-I", "-S", "-B", _WRAPPER]
        for d in self.write_dirs:
            wrapped += ["--write", d]
        for f in self.write_files:
            wrapped += ["--write-file", f]
        for p in self.read_only:
            wrapped += ["--read-only", p]
        for source, target in self.binds:
            wrapped += ["--bind", source, target]
        for p in self.hidden:
            wrapped += ["--hide", p]
        return [*wrapped, "--", *argv]


def _carve(root: str, protected: list[str]) -> tuple[list[str], list[str]]:
    """Rules that cover `root` except the `protected` paths beneath it."""
    if not protected:
        return [root], []
    if any(p == root for p in protected):
        return [], []
    dirs: list[str] = []
    files: list[str] = []
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return [], []
    for entry in entries:
        path = entry.path
        if entry.is_symlink():
            continue  # a rule follows the link: it could name any directory
        inner = [p for p in protected if is_within(p, path)]
        if inner:
            sub_dirs, sub_files = _carve(path, inner)
            dirs += sub_dirs
            files += sub_files
        elif entry.is_dir():
            dirs.append(path)
        else:
            files.append(path)
    return dirs, files


def repository_metadata(root: str) -> list[str]:
    """The git metadata of `root` and of its direct subdirectories: each `.git` (directory or
    pointer file) and, for a pointer file, the `gitdir:` it names and that one's common dir."""
    found: list[str] = []
    candidates = [os.path.join(root, ".git")]
    try:
        candidates += [
            os.path.join(e.path, ".git")
            for e in os.scandir(root)
            if e.is_dir(follow_symlinks=False) and e.name != ".git"
        ]
    except OSError:
        pass
    for dotgit in candidates:
        if os.path.islink(dotgit) or not os.path.lexists(dotgit):
            continue
        found.append(dotgit)
        if os.path.isfile(dotgit):
            target = _gitdir_of(dotgit)
            if target is not None:
                found.append(target)
                common = _read_pointer(os.path.join(target, "commondir"), target)
                if common is not None:
                    found.append(common)
    return list(dict.fromkeys(found))


def _gitdir_of(pointer: str) -> str | None:
    try:
        with open(pointer, encoding="utf-8", errors="replace") as f:
            line = f.readline(4096).strip()
    except OSError:
        return None
    if not line.startswith("gitdir:"):
        return None
    return _resolve_dir(line[len("gitdir:") :].strip(), os.path.dirname(pointer))


def _read_pointer(path: str, base: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            value = f.readline(4096).strip()
    except OSError:
        return None
    return _resolve_dir(value, base) if value else None


def _resolve_dir(value: str, base: str) -> str | None:
    path = os.path.realpath(os.path.join(base, value))
    return path if os.path.isdir(path) else None


def _protected(home: str | Path | None) -> list[str]:
    """Never writable by a confined process: meith's home (the trust root) and meith's own
    installation (code the next `meith` run would execute)."""
    paths = [sys.prefix, str(Path(__file__).parent)]
    return [str(home), *paths] if home is not None else paths
