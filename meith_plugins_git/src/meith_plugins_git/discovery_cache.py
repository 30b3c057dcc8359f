"""Reusing what discovery learnt from git, for as long as nothing git read for it has changed.

Discovery (`repo.discover`) runs two git processes before every call: `rev-parse` for the
repository's paths and HEAD, `config --list` for the settings to neutralise. On a served
`git_status` they are a fifth of the call. A later call for the same directory may reuse what
they printed only when every file and directory they read is as it was: same device, inode,
mode, owner, size, mtime and ctime as recorded *before* the earlier discovery ran.

What the two commands read (`watch_list`):

- every directory from the call's directory up to the work tree (not included): a `.git`, or a
  bare repository's files, created there would be found first; the directory's mtime moves
  when an entry is created, removed or renamed in it;
- the work tree, the git dir, the common dir and the common dir's `objects/` and `refs/`, by
  identity (device, inode, mode, owner: what git's ownership check and its "is this a git
  dir" test read; their mtimes move with every index write);
- `<work tree>/.git`, with and without following a link (a `.git` directory by identity: its
  mtime moves with every index write); the git dir's `HEAD`, `commondir`,
  `gitdir` and `config.worktree`; the loose refs HEAD leads to (in the git dir and in the
  common dir), `packed-refs` and `reftable/tables.list`;
- every config file git named as the origin of a setting, the system, global and XDG files
  and the repository's own whether they exist or not, and every include target
  (`include.path`, `includeIf.*.path`, whatever its condition) resolved as git resolves it,
  existing or not. An include this cannot resolve as git would (`~user/`, `%(prefix)/`), or a
  setting from anywhere but a file or our own command line, makes the directory uncacheable.

Two rules keep a change from slipping between a stat and a read:

- the stat is taken before git runs, over the paths the previous discovery of the directory
  led to, and an entry is kept only when the new discovery leads to the same paths (so the
  first discovery of a directory is never reused, the second can be);
- the racy-git rule: a file stamped within `racy_window_s` of the stat may change again
  within the same timestamp tick without its stat moving (filesystems stamp with a coarse
  clock; FAT's ticks are 2 s), so such a snapshot is not kept. The stamps are compared with
  the runtime's clock: on a network filesystem whose server's clock lags it by more than the
  window, a second same-size rewrite within one coarse tick could go unseen (git's own racy
  rule compares with the index's stamp instead, which needs a write).

Never cached: whatever depends on who calls (the grant scope check, held grants, hook
confinement), and the layout check, which reads the `.git` file and its back-pointers anew on
every call (`layout.check_layout`).
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from meith_plugins_git.repoconfig import ConfigEntry

#: Directories remembered per runtime (least recently used go first).
CACHE_SIZE: Final = 256
#: Files stamped this recently are not trusted to show their next change (FAT: 2 s ticks).
RACY_WINDOW_S: Final = 2.0
#: Symbolic refs followed from HEAD before giving up on caching.
MAX_REF_DEPTH: Final = 5

_INCLUDE_KEY: Final = re.compile(r"^(include|includeif\..*)\.path$", re.IGNORECASE | re.DOTALL)
_UNREADABLE_SYSTEM: Final = re.compile(r"unable to read config file '(.+)'")

#: One path's state: its stat fields, or that it could not be stat'ed (and why).
State = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Found:
    """What the two discovery commands printed, resolved."""

    root: str
    git_dir: str
    common_dir: str
    head: str | None
    entries: tuple[ConfigEntry, ...]


@dataclass(frozen=True, slots=True)
class Watched:
    """The paths a discovery read: stat'ed in full, by identity only, or without following."""

    full: tuple[str, ...]
    identity: tuple[str, ...]
    #: Stat'ed with and without following a link; a directory by identity only (`.git`: a
    #: file's content names the git dir, a directory's mtime moves with every index write).
    entries: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Ticket:
    """Taken before discovery runs: a reusable result, or the snapshot to store one with."""

    start: str
    found: Found | None
    watched: Watched | None = None
    snapshot: tuple[State, ...] | None = None
    racy: bool = True


@dataclass(frozen=True, slots=True)
class _Entry:
    watched: Watched
    snapshot: tuple[State, ...] | None
    found: Found | None


class DiscoveryCache:
    """Discoveries per real starting directory, each with the snapshot it is valid for."""

    def __init__(
        self,
        env: Mapping[str, str],
        system_configs: Iterable[str],
        *,
        size: int = CACHE_SIZE,
        racy_window_s: float = RACY_WINDOW_S,
    ) -> None:
        self._user_files = tuple(dict.fromkeys([*system_configs, *user_configs(env)]))
        self._home = env.get("HOME") or None
        self._size = size
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        #: Seconds: see the racy-git rule in the module docstring.
        self.racy_window_s = racy_window_s
        self.hits = 0
        self.misses = 0

    def check(self, start: str) -> Ticket:
        """Before discovery: the earlier result when nothing it read has changed."""
        entry = self._entries.get(start)
        if entry is None:
            self.misses += 1
            return Ticket(start, None)
        now = time.time_ns()
        snapshot = take_snapshot(entry.watched)
        if entry.found is not None and snapshot == entry.snapshot:
            self._entries.move_to_end(start)
            self.hits += 1
            return Ticket(start, entry.found)
        self.misses += 1
        window = int(self.racy_window_s * 1e9)
        return Ticket(start, None, entry.watched, snapshot, is_racy(snapshot, now - window))

    def store(self, ticket: Ticket, found: Found) -> None:
        """After discovery: keep its result when the ticket's snapshot covers what it read."""
        watched = watch_list(ticket.start, found, self._user_files, self._home)
        if watched is None:
            self._entries.pop(ticket.start, None)
            return
        trusted = watched == ticket.watched and ticket.snapshot is not None and not ticket.racy
        entry = _Entry(watched, ticket.snapshot, found) if trusted else _Entry(watched, None, None)
        self._entries[ticket.start] = entry
        self._entries.move_to_end(ticket.start)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)


def user_configs(env: Mapping[str, str]) -> list[str]:
    """The global and XDG config files git would read with this environment."""
    out = []
    home = env.get("HOME")
    if home:
        out.append(os.path.join(home, ".gitconfig"))
    xdg = env.get("XDG_CONFIG_HOME")
    if xdg:
        out.append(os.path.join(xdg, "git", "config"))
    elif home:
        out.append(os.path.join(home, ".config", "git", "config"))
    return out


def system_config_candidates(git_path: str, probe_output: bytes, probe_error: str) -> list[str]:
    """Where this git's system config may be: what `git config --system --list --show-origin
    --null` named (an origin, or the file it could not read), and the places a build puts it
    (`/etc/gitconfig`, `<prefix>/etc/gitconfig`). Watching too many only costs a stat."""
    found = [
        field[len(b"file:") :].decode("utf-8", "surrogateescape")
        for field in probe_output.split(b"\0")[:1]
        if field.startswith(b"file:")
    ]
    match = _UNREADABLE_SYSTEM.search(probe_error)
    if match:
        found.append(match.group(1))
    prefix = os.path.dirname(os.path.dirname(os.path.realpath(git_path)))
    return list(dict.fromkeys([*found, "/etc/gitconfig", os.path.join(prefix, "etc", "gitconfig")]))


def _state(
    path: str, *, follow: bool = True, identity: bool = False, dir_identity: bool = False
) -> State:
    try:
        st = os.stat(path, follow_symlinks=follow)
    except OSError as exc:
        return (-1, exc.errno or 0)
    if identity or (dir_identity and stat.S_ISDIR(st.st_mode)):
        return (st.st_dev, st.st_ino, st.st_mode, st.st_uid)
    return (
        st.st_dev,
        st.st_ino,
        st.st_mode,
        st.st_uid,
        st.st_gid,
        st.st_size,
        st.st_mtime_ns,
        st.st_ctime_ns,
    )


def take_snapshot(watched: Watched) -> tuple[State, ...]:
    return (
        *(_state(p) for p in watched.full),
        *(_state(p, identity=True) for p in watched.identity),
        *(_state(p, dir_identity=True) for p in watched.entries),
        *(_state(p, follow=False, dir_identity=True) for p in watched.entries),
    )


def is_racy(snapshot: Iterable[State], since_ns: int) -> bool:
    """Whether a fully stat'ed path was modified (or changed status) at or after `since_ns`."""
    return any(len(s) == 8 and (s[6] >= since_ns or s[7] >= since_ns) for s in snapshot)


def watch_list(
    start: str, found: Found, user_files: Iterable[str], home: str | None
) -> Watched | None:
    """Every path the discovery of `found` from `start` read (module docstring), or None when
    it read something this cannot follow."""
    full: list[str] = []
    directory = start
    while directory != found.root:
        full.append(directory)
        parent = os.path.dirname(directory)
        if parent == directory:  # `start` is not under the root: check_layout refuses it
            return None
        directory = parent
    git_dir, common = found.git_dir, found.common_dir
    full += [os.path.join(git_dir, name) for name in ("HEAD", "commondir", "gitdir")]
    full += [os.path.join(git_dir, "config.worktree"), os.path.join(common, "config")]
    full += [os.path.join(common, "packed-refs"), os.path.join(common, "reftable", "tables.list")]
    refs = _head_refs(git_dir, common)
    if refs is None:
        return None
    full += refs
    full += user_files
    files = _config_files(start, found, home)
    if files is None:
        return None
    full += files
    dotgit = os.path.join(found.root, ".git")
    identity = [found.root, git_dir, common, os.path.join(common, "objects")]
    identity.append(os.path.join(common, "refs"))
    return Watched(tuple(dict.fromkeys(full)), tuple(dict.fromkeys(identity)), (dotgit,))


def _head_refs(git_dir: str, common: str) -> list[str] | None:
    """The loose ref files HEAD leads to, following symbolic refs (per-worktree refs live in
    the git dir, the rest in the common dir: both are watched)."""
    out: list[str] = []
    text = _read(os.path.join(git_dir, "HEAD"))
    for _ in range(MAX_REF_DEPTH):
        if text is None or not text.startswith("ref:"):
            return out
        ref = text[len("ref:") :].strip()
        if not ref or os.path.isabs(ref) or ".." in ref.split("/"):
            return None
        out += [os.path.join(git_dir, ref), os.path.join(common, ref)]
        text = _read(os.path.join(common, ref)) or _read(os.path.join(git_dir, ref))
    return None


def _config_files(start: str, found: Found, home: str | None) -> list[str] | None:
    """Every file a setting came from, and every include target, existing or not."""
    out: list[str] = []
    for entry in found.entries:
        if entry.origin == "command line:" or entry.scope == "command":
            continue
        if not entry.origin.startswith("file:"):
            return None
        # A relative origin is relative to the directory git was in when it read the file:
        # the work tree's root (git moves there); the starting directory is watched too.
        origin = entry.origin[len("file:") :]
        origins = (
            [origin]
            if os.path.isabs(origin)
            else [os.path.join(found.root, origin), os.path.join(start, origin)]
        )
        out += origins
        if entry.value is not None and _INCLUDE_KEY.match(entry.key):
            for including in origins:
                target = _include_target(entry.value, including, home)
                if target is None:
                    return None
                out.append(target)
    return out


def _include_target(value: str, including: str, home: str | None) -> str | None:
    """Where git looks for an include (relative to the including file's directory)."""
    if value.startswith("~/") or value == "~":
        return os.path.join(home, value[2:]) if home else None
    if value.startswith(("~", "%(")):
        return None
    if os.path.isabs(value):
        return value
    return os.path.join(os.path.dirname(including), value)


def _read(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            return fh.read(4096).decode("utf-8", "surrogateescape")
    except OSError:
        return None


__all__ = [
    "CACHE_SIZE",
    "RACY_WINDOW_S",
    "DiscoveryCache",
    "Found",
    "Ticket",
    "Watched",
    "is_racy",
    "system_config_candidates",
    "take_snapshot",
    "user_configs",
    "watch_list",
]
