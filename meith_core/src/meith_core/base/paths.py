"""The one path-containment check. Every tool that confines paths uses this.

Containment is decided on fully resolved paths (symlinks followed, `..` collapsed), compared
component-wise, so `/repo-evil` is not inside `/repo` and a symlink pointing out is caught.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterable
from pathlib import Path


class PathEscapeError(ValueError):
    """A path that resolves outside the directory it must stay in."""


def _resolve(path: str | os.PathLike[str]) -> str:
    text = os.fspath(path)
    if "\0" in text:
        raise PathEscapeError("path contains a NUL byte")
    return os.path.realpath(text)


def is_within(path: str | os.PathLike[str], base: str | os.PathLike[str]) -> bool:
    """True when `path` resolves to `base` or somewhere below it."""
    try:
        return resolved_within(_resolve(path), _resolve(base))
    except PathEscapeError:
        return False


def resolved_within(target: str, root: str) -> bool:
    """`is_within` for two paths that are already resolved (`os.path.realpath`): string work
    only, for checking many paths against many bases without resolving each pair again."""
    if target == root:
        return True
    prefix = root if root.endswith("/") else root + "/"
    return target.startswith(prefix)


def outermost(resolved: Iterable[str]) -> list[str]:
    """The resolved paths that lie inside no other path of `resolved` (first-seen order, no
    repeats). Linear in the number of paths times their depth: each path's ancestors are looked
    up in a set, never compared with every other path."""
    unique = list(dict.fromkeys(resolved))
    present = set(unique)
    kept: list[str] = []
    for path in unique:
        parent, child = os.path.dirname(path), path
        while parent != child and parent not in present:
            parent, child = os.path.dirname(parent), parent
        if parent == child:  # reached the root without meeting another listed path
            kept.append(path)
    return kept


def resolve_within(base: str | os.PathLike[str], candidate: str | os.PathLike[str]) -> Path:
    """Resolve `candidate` (relative to `base`, or absolute) and require it inside `base`.

    Works for paths that do not exist yet: the deepest existing ancestor is resolved, so a
    symlinked directory on the way cannot smuggle the path out.
    """
    text = os.fspath(candidate)
    if "\0" in text:
        raise PathEscapeError("path contains a NUL byte")
    root = _resolve(base)
    joined = os.path.join(root, text)
    target = os.path.realpath(joined)
    if not (target == root or os.path.commonpath([target, root]) == root):
        raise PathEscapeError(f"{text!r} resolves outside {root}")
    return Path(target)


def write_file_beneath(
    root: str | os.PathLike[str],
    relative: str,
    data: bytes,
    *,
    mode: int = 0o600,
    durable: bool = True,
) -> Path:
    """Atomically write `data` to `root/relative` without following a symbolic link below
    `root`: every directory on the way is opened with O_NOFOLLOW (missing ones are made, 0700),
    the temporary file is created exclusively beside the target and renamed over it, so a link
    planted anywhere under `root` cannot redirect the write. `root` itself is trusted.

    `durable` (the default) flushes the data to the disk before the rename: the file survives
    a power cut, whole. `durable=False` skips that flush, for data that must survive a
    restart but may be lost, never seen half-written, in a crash of the machine (the reader
    must then check what it reads, e.g. against a hash).

    Raises PathEscapeError for a link or a `..` on the way, OSError for other failures.
    """
    parts = relative.split("/")
    if "\0" in relative or any(p in ("", ".", "..") for p in parts):
        raise PathEscapeError(f"{relative!r} is not a plain relative path")
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
    fd = os.open(os.fspath(root), flags)
    try:
        for part in parts[:-1]:
            try:
                os.mkdir(part, 0o700, dir_fd=fd)
            except FileExistsError:
                pass
            inner = _open_no_follow(part, flags | os.O_NOFOLLOW, fd, root, relative)
            os.close(fd)
            fd = inner
        name = parts[-1]
        tmp = f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        out = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode,
            dir_fd=fd,
        )  # fmt: skip
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(out, view) :]
            if durable:
                os.fsync(out)
            os.close(out)
            out = -1
            # rename replaces a link at `name` itself; it never writes through it.
            os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            if out >= 0:
                os.close(out)
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=fd)
            raise
    finally:
        os.close(fd)
    return Path(os.fspath(root), relative)


def _open_no_follow(
    part: str, flags: int, dir_fd: int, root: str | os.PathLike[str], relative: str
) -> int:
    try:
        return os.open(part, flags, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise PathEscapeError(
                f"refusing to write {relative!r} under {os.fspath(root)}: {part!r} is a "
                "symbolic link or not a directory"
            ) from None
        raise
