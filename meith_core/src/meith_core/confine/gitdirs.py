"""What a git directory is, in one place: the `.git` pointer file's one parser, the gitdir and
common dir it leads to, a directory laid out as a gitdir, and the git metadata of a directory
(what confinement mounts read-only and what no files tool writes into)."""

from __future__ import annotations

import os
import stat

#: Bytes of a pointer file (`.git`, `commondir`) read: a pointer is one short line.
_MAX_POINTER_BYTES = 4096


def read_pointer(path: str, base: str) -> str | None:
    """The directory a one-line pointer file names (`commondir`), resolved against `base`;
    None when `path` is no readable file or names no existing directory."""
    value = _first_line(path)
    return _resolve_dir(value, base) if value else None


def gitdir_of(dotgit: str) -> str | None:
    """The gitdir a `.git` pointer file (`gitdir: PATH`, as worktrees and submodules have)
    names, resolved; None when it is not one or names no existing directory."""
    line = _first_line(dotgit)
    if line is None or not line.startswith("gitdir:"):
        return None
    return _resolve_dir(line[len("gitdir:") :].strip(), os.path.dirname(dotgit))


def looks_like_gitdir(directory: str) -> bool:
    """Whether `directory` is laid out as a git directory (`HEAD`, `objects/`, `refs/`)."""
    return (
        os.path.isfile(os.path.join(directory, "HEAD"))
        and os.path.isdir(os.path.join(directory, "objects"))
        and os.path.isdir(os.path.join(directory, "refs"))
    )


def repository_metadata(root: str) -> list[str]:
    """The git metadata of `root` and of its direct subdirectories: each `.git` (directory or
    pointer file) and, for a pointer file, the gitdir it names and that one's common dir."""
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
            target = gitdir_of(dotgit)
            if target is not None:
                found.append(target)
                common = read_pointer(os.path.join(target, "commondir"), target)
                if common is not None:
                    found.append(common)
    return list(dict.fromkeys(found))


def git_metadata_containing(root: str, path: str) -> str | None:
    """The git directory `path` (resolved, beneath the resolved `root`) lies in, if any: a
    `.git` component, the gitdir a `.git` pointer file of a worktree or submodule names, or a
    directory laid out as a gitdir."""
    relative = os.path.relpath(path, root)
    parts = [] if relative == "." else relative.split(os.sep)
    for i, part in enumerate(parts):
        if part.casefold() == ".git":
            return os.path.join(root, *parts[: i + 1])
    directory = path if os.path.isdir(path) else os.path.dirname(path)
    while True:
        named = gitdir_of(os.path.join(directory, ".git"))
        if named is not None and (path == named or path.startswith(named.rstrip("/") + "/")):
            return named
        if looks_like_gitdir(directory):
            return directory
        if directory == root or directory == os.path.dirname(directory):
            return None
        directory = os.path.dirname(directory)


def _first_line(path: str) -> str | None:
    """The first line of a regular file (never blocking on a FIFO planted in its place)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, _MAX_POINTER_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data.decode("utf-8", "replace").split("\n", 1)[0].strip()


def _resolve_dir(value: str, base: str) -> str | None:
    path = os.path.realpath(os.path.join(base, value))
    return path if os.path.isdir(path) else None


__all__ = [
    "git_metadata_containing",
    "gitdir_of",
    "looks_like_gitdir",
    "read_pointer",
    "repository_metadata",
]
