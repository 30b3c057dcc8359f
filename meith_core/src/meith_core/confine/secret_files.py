"""Secret files inside a granted directory: the regular files whose names match
`confinement.secretPatterns` (`.env`, `.env.*`, `*.pem`, `*.key`, ssh key names; `!name` keeps
one), found when a confined process starts so that each can be covered for it (`confine.plan`:
/dev/null mounted on it, through a descriptor of the file found).

The walk is bounded: dependency, cache and VCS directories (`SKIP_DIRS`) are not entered, and
it stops after `MAX_WALK_ENTRIES` entries or `MAX_FILES` files and says so (`complete`). A
directory's listing is kept between spawns and used again while the directory's inode change
time stays the same (creating, removing or renaming an entry changes it), so a project walked
once costs one `lstat` per directory after that. Files created after a process started are
not covered for it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from meith_core.confine.secret_paths import matches_secret_pattern

#: Directories never entered: other people's code, caches, build output, VCS metadata.
SKIP_DIRS: Final = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        ".venv",
        "venv",
        ".virtualenv",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
        ".gradle",
        ".cache",
        "target",
    }
)
#: Entries one walk lists before it stops (and says it is incomplete).
MAX_WALK_ENTRIES: Final = 20_000
#: Secret files covered for one process at most.
MAX_FILES: Final = 1_000
#: Listings kept between spawns (all roots together).
_MAX_CACHED_DIRS: Final = 50_000
#: A directory changed this recently is listed again next time: a change within the clock's
#: tick would not move its change time.
_SETTLE_NS: Final = 2_000_000_000


@dataclass(frozen=True, slots=True)
class SecretFiles:
    """The secret files found beneath a directory, and whether the walk saw all of it."""

    files: tuple[str, ...] = ()
    complete: bool = True
    #: Why it is incomplete.
    note: str = ""


@dataclass(frozen=True, slots=True)
class _Listing:
    key: tuple[int, int, tuple[str, ...]]
    secrets: tuple[str, ...]
    subdirs: tuple[str, ...]
    entries: int


_cache: dict[str, _Listing] = {}
_lock = threading.Lock()


def find_secret_files(
    root: str, patterns: Iterable[str], *, max_entries: int | None = None
) -> SecretFiles:
    """The regular files beneath the resolved directory `root` whose names `patterns` make
    secret (symbolic links are neither followed nor counted), listing at most `max_entries`
    entries (default `MAX_WALK_ENTRIES`)."""
    max_entries = MAX_WALK_ENTRIES if max_entries is None else max_entries
    names = tuple(patterns)
    if not any(not p.startswith("!") for p in names):
        return SecretFiles()
    found: list[str] = []
    budget = max_entries
    stack = [root]
    while stack:
        directory = stack.pop()
        try:
            st = os.lstat(directory)
        except OSError:
            continue
        key = (st.st_ino, st.st_ctime_ns, names)
        with _lock:
            listing = _cache.get(directory)
        if listing is None or listing.key != key:
            if budget <= 0:
                return _incomplete(found, f"the walk stopped after {max_entries} entries")
            listing = _list(directory, key, names)
            budget -= listing.entries
            if time.time_ns() - st.st_ctime_ns > _SETTLE_NS:
                _remember(directory, listing)
        else:
            budget -= 1
        found += (os.path.join(directory, n) for n in listing.secrets)
        if len(found) > MAX_FILES:
            return _incomplete(found[:MAX_FILES], f"more than {MAX_FILES} secret files")
        stack += (os.path.join(directory, n) for n in listing.subdirs)
    return SecretFiles(tuple(found))


def _incomplete(found: list[str], why: str) -> SecretFiles:
    return SecretFiles(tuple(found), complete=False, note=why)


def _list(
    directory: str, key: tuple[int, int, tuple[str, ...]], names: tuple[str, ...]
) -> _Listing:
    secrets: list[str] = []
    subdirs: list[str] = []
    entries = 0
    try:
        with os.scandir(directory) as it:
            for entry in it:
                entries += 1
                # The directory entry's type: no stat per entry.
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in SKIP_DIRS:
                        subdirs.append(entry.name)
                elif entry.is_file(follow_symlinks=False) and matches_secret_pattern(
                    entry.name, names
                ):
                    secrets.append(entry.name)
    except OSError:
        pass
    return _Listing(key, tuple(secrets), tuple(subdirs), max(entries, 1))


def _remember(directory: str, listing: _Listing) -> None:
    with _lock:
        if len(_cache) >= _MAX_CACHED_DIRS:
            _cache.clear()
        _cache[directory] = listing


__all__ = ["MAX_FILES", "MAX_WALK_ENTRIES", "SKIP_DIRS", "SecretFiles", "find_secret_files"]
