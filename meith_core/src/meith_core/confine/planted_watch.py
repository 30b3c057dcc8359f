"""Git metadata a confined process plants: found, neutralised, reported.

A confined process writes only beneath its directory, but the user's own git runs there later,
outside every wall: a `core.fsmonitor`, a hook, a filter driver planted in a repository's
metadata runs as the user at the next `git status`. Mounting the `.git` that existed at spawn
read-only (`confine.plan`) does not stop a new one: `git init sub && git -C sub config
core.fsmonitor ...`, a `.git` pointer file naming a gitdir elsewhere that the process can write
(`/dev/shm`), or a lookalike laid out by hand (`HEAD`, `objects/`, `refs/`, `config`).

`GitMetadataWatch` is the one scanner every user of confinement calls (dev servers and
terminals when they exit and periodically while they run, `run_command`, confined git hooks):

- **What it finds.** Beneath the confined process's writable directories: every `.git`
  directory, `.git` pointer file (and the gitdir and common dir it leads to, wherever the process
  could write them), `.git` symlink, and every directory git would take for a repository
  (`HEAD` with `objects/` or `commondir`: bare repositories, worktree and submodule gitdirs).
- **What counts.** Metadata that appeared or changed while the process ran, told by inode
  change times (`st_ctime`), which no unprivileged process can set back: a config file, a hook,
  a hooks directory, a `commondir` or pointer file changed at or after the process started.
  Repository metadata the process could not write (mounted read-only for it) is left alone.
  Where a snapshot taken at spawn has a config's earlier contents, only the program-valued
  entries that were not there before are removed.
- **What it changes.** Risky config keys (the one table `GIT_RISKY_KEYS`: program-valued
  keys, `!` aliases and submodule update commands, `include.path` / `includeIf.*.path`,
  transports that run programs — `protocol.allow`, `ext::` and `fd::` URLs — and a
  `core.worktree` outside what the process could write) are removed from the
  config file, which is parsed by git itself (`git config --file --null --list` on a private
  copy, so parser and user agree) and replaced atomically; executable hooks lose their execute
  bits; symlinked hooks, hooks directories and configs are removed. A repository a project
  legitimately made (`git init` by a scaffolder) keeps everything else: objects, refs, its
  ordinary config. Every change is said in the report.
- **What it costs.** No walk at spawn: `snapshot()` reads only the configs of the repositories
  at the top of the directory. The walk (`scan()`, blocking: run it in a worker thread) visits
  each directory once; a directory whose inode change time is older than the process and
  unchanged since the last walk (or the background `prime()` walk started with the process) is
  not listed again: its subdirectories are known, so trees such as `node_modules` cost one
  `lstat` per directory, yet no new `.git` anywhere is missed (creating one changes its parent
  directory's change time). A walk that reaches its entry budget says so: the report is then
  `complete=False`, never silently partial.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from meith_core.base.paths import is_within
from meith_core.confine.gitdirs import gitdir_of, read_pointer, repository_metadata
from meith_core.confine.planted_neutralise import (
    CONFIG_FILES,
    Neutraliser,
    read_regular,
    relevant_times,
)
from meith_core.confine.planted_report import PlantedGit, PlantedGitReport

#: Entries one walk may visit before it stops and says it is incomplete.
MAX_SCAN_ENTRIES: Final = 1_000_000
#: Findings one scan makes (a process planting thousands of repositories costs several scans,
#: each bounded; what one reported is not examined again unless it changes).
MAX_GITDIRS_PER_SCAN: Final = 2000
#: Directories whose listing a watch remembers between walks.
_MAX_CACHED_DIRS: Final = 500_000
#: Change times this close before the start count as the process's (file systems stamp with
#: a coarse clock that can lag the one the start was read from).
_CLOCK_SLACK_NS: Final = 1_000_000_000


@dataclass(slots=True)
class _Dir:
    ino: int
    ctime: int
    subdirs: tuple[str, ...]
    #: Names in it that make it, or something in it, git metadata (`.git`, `HEAD`, ...).
    marks: frozenset[str]


_MARK_NAMES: Final = frozenset({".git", "HEAD", "objects", "commondir", "refs"})


@dataclass(slots=True)
class GitMetadataWatch:
    """The git metadata watch of one confined process (see the module docstring)."""

    #: The directories to walk (the grant's directory, or its writable entries).
    roots: tuple[str, ...]
    #: Everything the process could write: what a pointer may lead to and still be planted.
    writable: tuple[str, ...]
    #: Metadata mounted read-only for the process: never its doing, never touched.
    read_only: tuple[str, ...] = ()
    #: Change times at or after this (ns since the epoch, less a clock slack) are the process's.
    started_ns: int = field(default_factory=time.time_ns)
    max_entries: int = MAX_SCAN_ENTRIES
    git: str | None = field(default_factory=lambda: shutil.which("git"))
    _snapshot: dict[str, bytes] = field(default_factory=dict)
    _dirs: dict[str, _Dir] = field(default_factory=dict)
    _reported: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _examined: int = 0
    _incomplete: str | None = None

    @classmethod
    def for_confinement(cls, scope: str, plan: Any, **kwargs: Any) -> GitMetadataWatch:
        """The watch of a process confined by `plan` (a `Confinement`) beneath `scope`."""
        root = os.path.realpath(scope)
        writable = (
            *(os.path.realpath(d) for d in plan.write_dirs),
            *(os.path.realpath(f) for f in plan.write_files),
        )
        read_only = tuple(os.path.realpath(p) for p in plan.read_only)
        # The whole directory is walked, carved-out parts included (a `.git` pointer file the
        # process may rewrite can sit in a directory it cannot add entries to); what it could
        # not write is never touched.
        return cls((root,), tuple(writable), read_only, **kwargs)

    # -- at spawn -------------------------------------------------------------------------

    def snapshot(self) -> None:
        """Before the process starts: the configs of the repositories at the top of its
        directories (a few reads, no walk), so that a change there removes only what is new."""
        self.started_ns = time.time_ns()
        for root in self.roots:
            # The same repositories confinement mounts read-only where it can.
            for gitdir in (p for p in repository_metadata(root) if os.path.isdir(p)):
                for name in CONFIG_FILES:
                    path = os.path.join(gitdir, name)
                    data = read_regular(path)
                    if data is not None:
                        self._snapshot[path] = data

    def prime(self) -> None:
        """A walk that only learns the directories (nothing is changed or reported), so that
        the first real scan lists only what changed. Meant for a worker thread right after the
        process started; safe to race with it."""
        with self._lock:
            for _ in self._walk(learn_only=True):
                pass

    # -- the scan -------------------------------------------------------------------------

    def scan(self) -> PlantedGitReport:
        """Find, neutralise and return what appeared or changed since the process started and
        was not reported by an earlier scan of this watch. Blocking."""
        with self._lock:
            self._examined = 0
            self._incomplete = None
            findings: list[PlantedGit] = []
            queue: list[tuple[str, str, str | None, bool]] = list(self._walk())
            seen: set[str] = set()
            while queue:
                gitdir, kind, via, forced = queue.pop(0)
                real = os.path.realpath(gitdir)
                if real in seen:
                    continue
                if len(findings) >= MAX_GITDIRS_PER_SCAN:
                    self._incomplete = (
                        f"git metadata scan stopped after {MAX_GITDIRS_PER_SCAN} repositories; "
                        "the next scan goes on with the rest"
                    )
                    break
                seen.add(real)
                found = self._examine(real, kind, via, forced, queue)
                if found is not None:
                    findings.append(found)
                try:
                    configured = self._configured_hooks(real)
                except OSError:
                    configured = None
                if configured is not None:
                    findings.append(configured)
            return PlantedGitReport(
                tuple(findings),
                complete=self._incomplete is None,
                examined=self._examined,
                note=self._incomplete,
            )

    @property
    def _threshold(self) -> int:
        return self.started_ns - _CLOCK_SLACK_NS

    @property
    def _neutraliser(self) -> Neutraliser:
        return Neutraliser(self.git, self._threshold, self.writable)

    def _walk(self, *, learn_only: bool = False) -> Iterator[tuple[str, str, str | None, bool]]:
        """Gitdir candidates beneath the roots: `(path, kind, via, forced)`."""
        stack = list(self.roots)
        budget = self.max_entries
        examined = 0
        while stack:
            path = stack.pop()
            try:
                st = os.lstat(path)
            except OSError:
                continue
            examined += 1
            if not stat.S_ISDIR(st.st_mode):
                continue
            cached = self._dirs.get(path)
            if (
                cached is not None
                and cached.ino == st.st_ino
                and cached.ctime == st.st_ctime_ns
                and st.st_ctime_ns < self._threshold
            ):
                subdirs, marks = cached.subdirs, cached.marks
            else:
                listed = self._list(path)
                if listed is None:
                    continue
                subdirs, marks, count = listed
                examined += count
                if len(self._dirs) < _MAX_CACHED_DIRS or path in self._dirs:
                    self._dirs[path] = _Dir(st.st_ino, st.st_ctime_ns, subdirs, marks)
            if examined > budget:
                if not learn_only:
                    self._incomplete = (
                        f"git metadata scan stopped after {budget} entries; part of "
                        f"{', '.join(self.roots)} was not examined"
                    )
                break
            if not learn_only and marks:
                yield from self._candidates(path, marks)
            stack.extend(os.path.join(path, name) for name in subdirs)
        if not learn_only:
            self._examined = examined

    @staticmethod
    def _list(path: str) -> tuple[tuple[str, ...], frozenset[str], int] | None:
        try:
            with os.scandir(path) as it:
                entries = list(it)
        except OSError:
            return None
        subdirs = tuple(
            e.name for e in entries if e.is_dir(follow_symlinks=False) and e.name != ".git"
        )
        marks = frozenset(e.name for e in entries if e.name in _MARK_NAMES)
        # A `.git` directory is walked too (its modules/ and worktrees/ hold gitdirs).
        dotgit = os.path.join(path, ".git")
        if ".git" in marks and os.path.isdir(dotgit) and not os.path.islink(dotgit):
            subdirs = (*subdirs, ".git")
        return subdirs, marks, len(entries)

    def _candidates(
        self, path: str, marks: frozenset[str]
    ) -> Iterator[tuple[str, str, str | None, bool]]:
        if "HEAD" in marks and ("objects" in marks or "commondir" in marks):
            if os.path.basename(path) == ".git":
                kind = ".git directory"
            elif os.path.basename(os.path.dirname(path)) in ("worktrees", "modules"):
                kind = "gitdir"
            else:
                kind = "worktree gitdir" if "commondir" in marks else "bare lookalike"
            yield path, kind, None, False
        if ".git" not in marks:
            return
        dotgit = os.path.join(path, ".git")
        try:
            st = os.lstat(dotgit)
        except OSError:
            return
        new = st.st_ctime_ns >= self._threshold
        if stat.S_ISLNK(st.st_mode):
            linked = os.path.realpath(dotgit)
            if os.path.isdir(linked):
                yield linked, ".git symlink", dotgit, new
        elif stat.S_ISREG(st.st_mode):
            pointed = gitdir_of(dotgit)
            if pointed is not None:
                yield pointed, "pointer", dotgit, new

    # -- one gitdir ---------------------------------------------------------------------

    def _examine(
        self,
        gitdir: str,
        kind: str,
        via: str | None,
        forced: bool,
        queue: list[tuple[str, str, str | None, bool]],
    ) -> PlantedGit | None:
        if any(is_within(gitdir, p) for p in self.read_only):
            return None  # read-only for the process: not its doing
        if not any(is_within(gitdir, w) for w in self.writable):
            return None  # the process could not have written it
        relevant = relevant_times(gitdir)
        fingerprint = tuple(sorted(relevant.items()))
        changed = forced or any(ctime >= self._threshold for ctime in relevant.values())
        if not changed or self._reported.get(gitdir) == fingerprint:
            return None
        changes: list[str] = []
        try:
            changes += self._neutraliser.gitdir(gitdir, relevant, forced, self._snapshot)
        except OSError as exc:
            changes.append(f"could not be neutralised ({exc.strerror or exc})")
        common = read_pointer(os.path.join(gitdir, "commondir"), gitdir)
        if common is not None:
            queue.append(
                (common, "gitdir", gitdir, forced or _changed(relevant, "commondir", self))
            )
        self._reported[gitdir] = tuple(sorted(relevant_times(gitdir).items()))
        return PlantedGit(gitdir, kind, tuple(changes), via)

    # -- hooks a repository's own config names (husky's .husky/, lefthook) ---------------

    def _configured_hooks(self, gitdir: str) -> PlantedGit | None:
        """Hooks in a directory a repository's `core.hooksPath` names, where the process could
        write: a hook planted there runs at the user's next commit although the repository's
        metadata did not change (a read-only `.git` whose config says `.husky`)."""
        data = read_regular(os.path.join(gitdir, "config"))
        if data is None or b"hookspath" not in data.lower() or self.git is None:
            return None
        entries = self._neutraliser.config_entries(data)
        values = [v for k, v in entries if k.lower() == "core.hookspath" and v]
        if not values:
            return None
        base = os.path.dirname(gitdir) if os.path.basename(gitdir) == ".git" else gitdir
        hooks = os.path.realpath(os.path.join(base, os.path.expanduser(values[-1])))
        if (
            hooks == os.path.join(gitdir, "hooks")
            or any(is_within(hooks, p) for p in self.read_only)
            or not any(is_within(hooks, w) for w in self.writable)
            or not os.path.isdir(hooks)
        ):
            return None
        ctimes: dict[str, int] = {}
        with contextlib.suppress(OSError), os.scandir(hooks) as it:
            for entry in it:
                with contextlib.suppress(OSError):
                    ctimes[entry.name] = entry.stat(follow_symlinks=False).st_ctime_ns
        key = f"hooks:{hooks}"
        fingerprint = tuple(sorted(ctimes.items()))
        if self._reported.get(key) == fingerprint or all(
            c < self._threshold for c in ctimes.values()
        ):
            return None
        fd = os.open(hooks, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            if os.readlink(f"/proc/self/fd/{fd}") != hooks:
                return None
            changes = self._neutraliser.disable_hooks(fd, ctimes, False)
        finally:
            os.close(fd)
        with contextlib.suppress(OSError), os.scandir(hooks) as it:
            self._reported[key] = tuple(
                sorted((e.name, e.stat(follow_symlinks=False).st_ctime_ns) for e in it)
            )
        if not changes:
            return None
        return PlantedGit(hooks, "hooks directory", tuple(changes), via=gitdir)


def _changed(relevant: dict[str, int], name: str, watch: GitMetadataWatch) -> bool:
    ctime = relevant.get(name)
    return ctime is not None and ctime >= watch._threshold


__all__ = ["MAX_GITDIRS_PER_SCAN", "MAX_SCAN_ENTRIES", "GitMetadataWatch"]
