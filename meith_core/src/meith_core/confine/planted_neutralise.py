"""Neutralising one planted gitdir: program-valued config entries removed (the config parsed by
git itself, on a private copy, so parser and user agree), executable hooks made
non-executable, symlinked hooks, hooks directories and configs removed — everything through
descriptors of the directory examined, so a swap meanwhile is noticed, never followed."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import Final

from meith_core.confine.planted_keys import git_key_risk

#: Config files of a gitdir git reads (the worktree one with `extensions.worktreeConfig`).
CONFIG_FILES: Final = ("config", "config.worktree")
#: Most bytes of one config file read; a larger planted one is set aside whole.
MAX_CONFIG_BYTES: Final = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Neutraliser:
    """What one scan changes: `threshold` (ns) is when the process started, less a slack;
    change times at or after it are the process's doing. `inside`: where a planted
    `core.worktree` may point (the directories the process could write)."""

    git: str | None
    threshold: int
    inside: tuple[str, ...] = ()

    def gitdir(
        self, gitdir: str, relevant: dict[str, int], forced: bool, before: dict[str, bytes]
    ) -> list[str]:
        """Neutralise `gitdir`; `relevant` are its change times (`relevant_times`), `before`
        the snapshot of configs taken at spawn (only entries not there before go)."""
        changes: list[str] = []
        fd = os.open(gitdir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            if os.readlink(f"/proc/self/fd/{fd}") != gitdir:
                return ["moved while it was examined; left alone (the next scan looks again)"]
            for name in CONFIG_FILES:
                if name in relevant and (forced or relevant[name] >= self.threshold):
                    earlier = before.get(os.path.join(gitdir, name))
                    changes += self.config(fd, name, earlier, gitdir)
            changes += self._hooks(fd, relevant, forced)
        finally:
            os.close(fd)
        return changes

    def config(self, dir_fd: int, name: str, before: bytes | None, gitdir: str) -> list[str]:
        try:
            fd = os.open(
                name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd
            )
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK):
                target = _readlink(name, dir_fd)
                os.unlink(name, dir_fd=dir_fd)
                return [f"removed {name}, a symlink to {target}"]
            return []
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                os.unlink(name, dir_fd=dir_fd)
                return [f"removed {name} (not a regular file)"]
            data = os.read(fd, MAX_CONFIG_BYTES + 1)
        finally:
            os.close(fd)
        if len(data) > MAX_CONFIG_BYTES or self.git is None:
            aside = _set_aside(dir_fd, name)
            why = "too large to examine" if self.git is not None else "git was not found to read it"
            return [f"moved {name} aside to {aside} ({why})"]
        with tempfile.TemporaryDirectory(prefix="meith-gitscan-") as tmp:
            copy = os.path.join(tmp, "config")
            with open(copy, "wb") as f:
                f.write(data)
            entries = self._git_list(tmp, copy)
            if entries is None:
                aside = _set_aside(dir_fd, name)
                return [f"moved {name} aside to {aside} (git cannot parse it)"]
            earlier: list[tuple[str, str | None]] = []
            if before is not None:
                old = os.path.join(tmp, "before")
                with open(old, "wb") as f:
                    f.write(before)
                earlier = self._git_list(tmp, old) or []
            dangerous = [
                (key, value)
                for key, value in entries
                if git_key_risk(key, value, gitdir=gitdir, inside=self.inside) is not None
            ]
            for entry in earlier:
                if entry in dangerous:
                    dangerous.remove(entry)
            if not dangerous:
                return []
            for key, value in dict.fromkeys(dangerous):
                self._git_unset(tmp, copy, key, value)
            with open(copy, "rb") as f:
                cleaned = f.read()
        _replace(dir_fd, name, cleaned, st.st_mode & 0o777)
        return [f"removed {key} = {_shown(value)} from {name}" for key, value in dangerous]

    def _hooks(self, dir_fd: int, relevant: dict[str, int], forced: bool) -> list[str]:
        try:
            st = os.lstat("hooks", dir_fd=dir_fd)
        except OSError:
            return []
        if stat.S_ISLNK(st.st_mode):
            target = _readlink("hooks", dir_fd)
            os.unlink("hooks", dir_fd=dir_fd)
            return [f"removed hooks, a symlink to {target}"]
        if not stat.S_ISDIR(st.st_mode):
            return []
        hooks = os.open(
            "hooks", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd
        )
        try:
            ctimes = {k[len("hooks/") :]: v for k, v in relevant.items() if k.startswith("hooks/")}
            return self.disable_hooks(hooks, ctimes, forced)
        finally:
            os.close(hooks)

    def disable_hooks(self, hooks: int, ctimes: dict[str, int], forced: bool) -> list[str]:
        """In the hooks directory `hooks` (a descriptor): executables that are new or changed
        lose their execute bits, symlinks are removed."""
        changes: list[str] = []
        for name in sorted(os.listdir(hooks)):
            ctime = ctimes.get(name)
            if name.endswith(".sample") or (
                not forced and (ctime is None or ctime < self.threshold)
            ):
                continue
            try:
                est = os.lstat(name, dir_fd=hooks)
            except OSError:
                continue
            if stat.S_ISLNK(est.st_mode):
                target = _readlink(name, hooks)
                os.unlink(name, dir_fd=hooks)
                changes.append(f"removed hook {name}, a symlink to {target}")
            elif stat.S_ISREG(est.st_mode) and est.st_mode & 0o111:
                try:
                    hfd = os.open(
                        name,
                        os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                        dir_fd=hooks,
                    )
                except OSError:
                    continue
                try:
                    os.fchmod(hfd, stat.S_IMODE(os.fstat(hfd).st_mode) & ~0o111)
                finally:
                    os.close(hfd)
                changes.append(f"hook {name} made non-executable")
        return changes

    def config_entries(self, data: bytes) -> list[tuple[str, str | None]]:
        """The entries of config `data` as git reads them (none when git cannot)."""
        if self.git is None:
            return []
        with tempfile.TemporaryDirectory(prefix="meith-gitscan-") as tmp:
            copy = os.path.join(tmp, "config")
            with open(copy, "wb") as f:
                f.write(data)
            return self._git_list(tmp, copy) or []

    # -- git, hardened --------------------------------------------------------------------

    def _run_git(self, tmp: str, *args: str) -> subprocess.CompletedProcess[bytes] | None:
        assert self.git is not None
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": tmp,
            "LC_ALL": "C",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_CEILING_DIRECTORIES": os.path.dirname(tmp),
            "GIT_TERMINAL_PROMPT": "0",
        }
        try:
            return subprocess.run(
                [self.git, *args],
                cwd=tmp,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=30,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return None

    def _git_list(self, tmp: str, path: str) -> list[tuple[str, str | None]] | None:
        done = self._run_git(tmp, "config", "--file", path, "--no-includes", "--null", "--list")
        if done is None or done.returncode != 0:
            return None
        out: list[tuple[str, str | None]] = []
        for item in done.stdout.split(b"\0"):
            if not item:
                continue
            key, sep, value = item.partition(b"\n")
            out.append(
                (
                    key.decode("utf-8", "surrogateescape"),
                    value.decode("utf-8", "surrogateescape") if sep else None,
                )
            )
        return out

    def _git_unset(self, tmp: str, path: str, key: str, value: str | None) -> None:
        done = None
        if value is not None:
            done = self._run_git(
                tmp, "config", "--file", path, "--fixed-value", "--unset-all", key, value
            )
        if done is None or done.returncode not in (0, 5):
            # Older git (no --fixed-value): every value of the key goes.
            self._run_git(tmp, "config", "--file", path, "--unset-all", key)


def relevant_times(gitdir: str) -> dict[str, int]:
    """Change times of what in a gitdir decides which programs git runs."""
    found: dict[str, int] = {}
    for name in (*CONFIG_FILES, "commondir", "hooks"):
        with contextlib.suppress(OSError):
            found[name] = os.lstat(os.path.join(gitdir, name)).st_ctime_ns
    hooks = os.path.join(gitdir, "hooks")
    if os.path.isdir(hooks) and not os.path.islink(hooks):
        with contextlib.suppress(OSError), os.scandir(hooks) as it:
            for entry in it:
                with contextlib.suppress(OSError):
                    found[f"hooks/{entry.name}"] = entry.stat(follow_symlinks=False).st_ctime_ns
    return found


def read_regular(path: str) -> bytes | None:
    """A regular file's bytes (a config), never following a link; None past the size cap."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, MAX_CONFIG_BYTES + 1)
        return data if len(data) <= MAX_CONFIG_BYTES else None
    finally:
        os.close(fd)


def _set_aside(dir_fd: int, name: str) -> str:
    aside = f"{name}.meith-disabled-{time.time_ns()}"
    os.rename(name, aside, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    return aside


def _shown(value: str | None) -> str:
    if value is None:
        return "(no value)"
    return repr(value if len(value) <= 120 else value[:117] + "...")


def _replace(dir_fd: int, name: str, data: bytes, mode: int) -> None:
    """`name` in `dir_fd` replaced by `data` in one rename (a symlink planted meanwhile is
    replaced, never followed)."""
    tmp = f".{name}.meith-{os.getpid()}-{time.time_ns()}"
    fd = os.open(
        tmp,
        os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
        mode or 0o644,
        dir_fd=dir_fd,
    )
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def _readlink(name: str, dir_fd: int) -> str:
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError:
        return "?"


__all__ = ["CONFIG_FILES", "Neutraliser", "read_regular", "relevant_times"]
