"""Kernel confinement for processes started under a directory-confined grant (Landlock).

A `Confinement` is a plan: which directories and files the process may write, computed from
the grant's directory minus what must stay out of reach (meith's home, its own installation).
`wrap(argv)` returns the argv that applies it in the child, between spawn and exec, through the
small exec wrapper `_confine_exec.py`. Reads and execution stay allowed.

Landlock rules only add access, so a protected directory inside the granted one is carved out
by granting the granted directory's other entries one by one instead: the process can then
write anywhere beneath them, but cannot create new entries directly in the directories that
lead to the protected one (the granted directory itself, in the common case).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from meith_core import _confine_exec
from meith_core._paths import is_within

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
            return text + ", and cannot signal or reach abstract sockets outside their domain"
        return text + " (signals and abstract sockets are not scoped before ABI 6)"

    def to_dict(self) -> dict[str, object]:
        return {
            "available": self.available,
            "abi": self.abi,
            "scopesSignals": self.scopes_signals,
            "summary": self.describe(),
        }


@functools.cache
def landlock_status() -> LandlockStatus:
    """The kernel's Landlock support (asked once per process)."""
    return LandlockStatus(_confine_exec.abi_version())


@dataclass(frozen=True, slots=True)
class Confinement:
    """Where a confined process may write."""

    write_dirs: tuple[str, ...]
    write_files: tuple[str, ...] = ()

    @classmethod
    def beneath(
        cls,
        directory: str,
        *,
        home: str | Path | None = None,
        extra_dirs: Iterable[str] = (),
        protect: Iterable[str] = (),
    ) -> Confinement:
        """Write access beneath `directory`, the `extra_dirs` (a private temp dir) and the usual
        device files; never to meith's `home` (the trust root), meith's own installation or
        the `protect`ed paths, even inside `directory`."""
        root = os.path.realpath(directory)
        guarded = [os.path.realpath(p) for p in [*_protected(home), *protect]]
        dirs, files = _carve(root, [p for p in guarded if is_within(p, root)])
        dirs += [os.path.realpath(d) for d in extra_dirs]
        dirs += [d for d in DEVICE_DIRS if os.path.isdir(d)]
        files += [f for f in DEVICE_FILES if os.path.exists(f)]
        return cls(tuple(dirs), tuple(files))

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """`argv` run through the exec wrapper that confines it first."""
        wrapped = [sys.executable, "-I", "-S", "-B", _WRAPPER]
        for d in self.write_dirs:
            wrapped += ["--write", d]
        for f in self.write_files:
            wrapped += ["--write-file", f]
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


def _protected(home: str | Path | None) -> list[str]:
    """Never writable by a confined process: meith's home (the trust root) and meith's own
    installation (code the next `meith` run would execute)."""
    paths = [sys.prefix, str(Path(__file__).parent)]
    return [str(home), *paths] if home is not None else paths
