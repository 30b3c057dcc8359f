"""Acting on paths beneath a directory through descriptors: checked and used as one object.

A directory is opened once (`Beneath(root)`); every path beneath it is opened by the kernel
relative to that descriptor — `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
RESOLVE_NO_MAGICLINKS)` where the kernel has it (Linux 5.6+), else a walk that opens each
component with `O_NOFOLLOW` relative to the last. No symbolic link is followed and nothing
outside the directory is reached, whatever is renamed or swapped meanwhile; and what was
opened is what is then read, written, replaced or removed (`fstat`, `renameat`, `unlinkat`,
`mkdirat` relative to the opened parent). A check made on the opened object (its real path,
`real_path(fd)`) is a check of what is used, never of a name that may since lead elsewhere.

A symbolic link on the way is an error that says so (`LinkOnTheWay`): a caller that wants a
link followed resolves it first, inside the directory, and opens the result.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import stat
import struct
from pathlib import Path
from typing import TYPE_CHECKING, Final

from meith_core.base.paths import PathEscapeError

if TYPE_CHECKING:
    import ctypes

_SYS_OPENAT2: Final = 437  # the same number on every architecture
_RESOLVE_NO_MAGICLINKS: Final = 0x02
_RESOLVE_NO_SYMLINKS: Final = 0x04
_RESOLVE_BENEATH: Final = 0x08
_RESOLVE: Final = _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS
_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


class LinkOnTheWay(PathEscapeError):
    """A symbolic link (or a component that is no directory) where a path beneath a
    directory was opened: refused, never followed."""


#: struct open_how: flags, mode, resolve (three u64, native order).
_OPEN_HOW: Final = struct.Struct("=QQQ")


@functools.cache
def _libc() -> ctypes.CDLL | None:
    # Imported when a path is first opened: `meith_core.base.home` needs this module, and
    # ctypes would cost every CLI start milliseconds.
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


@functools.cache
def has_openat2() -> bool:
    """Whether this kernel resolves beneath a descriptor itself (openat2, Linux 5.6+)."""
    try:
        fd = _openat2(os.open("/", _DIR_FLAGS), ".", _DIR_FLAGS, 0, close_dir=True)
    except OSError:
        return False
    os.close(fd)
    return True


def _openat2(dir_fd: int, relative: str, flags: int, mode: int, *, close_dir: bool = False) -> int:
    libc = _libc()
    try:
        if libc is None:
            raise OSError(errno.ENOSYS, "no C library")
        how = _OPEN_HOW.pack(flags | os.O_CLOEXEC, mode if flags & os.O_CREAT else 0, _RESOLVE)
        fd = int(libc.syscall(_SYS_OPENAT2, dir_fd, os.fsencode(relative), how, len(how)))
        if fd < 0:
            import ctypes

            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), relative)
        return fd
    finally:
        if close_dir:
            os.close(dir_fd)


def _parts(relative: str) -> list[str]:
    """The components of a plain relative path (`a/b/c`); `.` is none. No `..`, no absolute
    path, no NUL: those are a caller's bug or an attack, refused here."""
    if "\0" in relative or relative.startswith("/"):
        raise PathEscapeError(f"{relative!r} is not a plain relative path")
    parts = [p for p in relative.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise PathEscapeError(f"{relative!r} is not a plain relative path")
    return parts


def real_path(fd: int) -> str:
    """Where the object open at `fd` is now (the kernel's name for it)."""
    return os.readlink(f"/proc/self/fd/{fd}")


def _open_component(part: str, dir_fd: int) -> int:
    """A directory on the way, without following a link: a link there is ELOOP (the kernel
    says ENOTDIR for a link opened with O_DIRECTORY | O_NOFOLLOW)."""
    try:
        return os.open(part, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=dir_fd)
    except NotADirectoryError:
        if stat.S_ISLNK(os.lstat(part, dir_fd=dir_fd).st_mode):
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), part) from None
        raise


def _refusal(exc: OSError, relative: str, where: str) -> Exception:
    if exc.errno in (errno.ELOOP, errno.EXDEV):
        return LinkOnTheWay(
            f"{relative!r} under {where}: a symbolic link is on the way; it is not followed"
        )
    return exc


class Beneath:
    """A directory opened once, and paths beneath it opened through its descriptor."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.fd = os.open(os.fspath(root), _DIR_FLAGS)
        #: The directory's real path when it was opened (for messages and path checks).
        self.root = real_path(self.fd)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Beneath:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def open(self, relative: str, flags: int, mode: int = 0o600) -> int:
        """`relative` opened with `flags` (`O_NOFOLLOW` always) beneath the directory; raises
        `LinkOnTheWay` for a link on the way, OSError (ENOENT, ...) otherwise."""
        parts = _parts(relative)
        if not parts:
            return (
                os.dup(self.fd) if flags & os.O_DIRECTORY else os.open(".", flags, dir_fd=self.fd)
            )
        flags |= os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            if has_openat2():
                return _openat2(self.fd, "/".join(parts), flags, mode)
            return self._walk_open(parts, flags, mode)
        except OSError as exc:
            raise _refusal(exc, relative, self.root) from None

    def _walk_open(self, parts: list[str], flags: int, mode: int) -> int:
        fd = os.dup(self.fd)
        try:
            for part in parts[:-1]:
                inner = _open_component(part, fd)
                os.close(fd)
                fd = inner
            return os.open(parts[-1], flags, mode, dir_fd=fd)
        finally:
            os.close(fd)

    def open_dir(self, relative: str, *, create: bool = False, mode: int = 0o700) -> int:
        """The directory `relative` (a descriptor); with `create`, missing directories on the
        way are made (`mkdirat`, `mode` before the umask) one by one, each opened without
        following a link before the next is made in it."""
        parts = _parts(relative)
        if not create:
            return self.open(relative, _DIR_FLAGS)
        fd = os.dup(self.fd)
        try:
            for i, part in enumerate(parts):
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, mode, dir_fd=fd)
                try:
                    inner = _open_component(part, fd)
                except OSError as exc:
                    raise _refusal(exc, "/".join(parts[: i + 1]), self.root) from None
                os.close(fd)
                fd = inner
            out, fd = fd, -1
            return out
        finally:
            if fd >= 0:
                os.close(fd)

    def parent(self, relative: str, *, create: bool = False, mode: int = 0o700) -> tuple[int, str]:
        """`(descriptor of the parent directory, last name)` of `relative` (not `.`)."""
        parts = _parts(relative)
        if not parts:
            raise PathEscapeError("the directory itself has no parent beneath it")
        return self.open_dir("/".join(parts[:-1]), create=create, mode=mode), parts[-1]


def replace_in(dir_fd: int, name: str, data: bytes, *, mode: int, durable: bool = True) -> None:
    """`name` in the directory `dir_fd` replaced by `data` in one rename: a temporary file made
    exclusively beside it, written (and flushed when `durable`), renamed over it. A link at
    `name` is replaced, never written through; readers see the old content or the new."""
    tmp = f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    out = os.open(
        tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode,
        dir_fd=dir_fd,
    )  # fmt: skip
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(out, view) :]
        if durable:
            os.fsync(out)
        os.close(out)
        out = -1
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        if out >= 0:
            os.close(out)
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def set_mode_in(dir_fd: int, name: str, mode: int) -> None:
    """Set a regular file's mode, opened without following a link (a link swapped in is left
    alone)."""
    try:
        fd = os.open(
            name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd
        )
    except OSError:
        return
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.fchmod(fd, mode)
    finally:
        os.close(fd)


def write_file_beneath(
    root: str | os.PathLike[str],
    relative: str,
    data: bytes,
    *,
    mode: int = 0o600,
    durable: bool = True,
) -> Path:
    """Atomically write `data` to `root/relative` through descriptors: every directory on the
    way is opened without following a link (missing ones are made, 0700), and the file is
    replaced by a rename beside it (`replace_in`), so a link planted anywhere under `root`
    cannot redirect the write. `root` itself is trusted. Returns the path written.

    `durable` (the default) flushes the data to the disk before the rename: the file survives
    a power cut, whole. `durable=False` skips that flush, for data that must survive a
    restart but may be lost, never seen half-written, in a crash of the machine (the reader
    must then check what it reads, e.g. against a hash).

    Raises PathEscapeError for a link or a `..` on the way, OSError for other failures."""
    parts = _parts(relative)
    if not parts or relative.endswith("/"):
        raise PathEscapeError(f"{relative!r} is not a plain relative path")
    with Beneath(root) as base:
        dir_fd, name = base.parent(relative, create=True)
        try:
            replace_in(dir_fd, name, data, mode=mode, durable=durable)
        finally:
            os.close(dir_fd)
    return Path(os.fspath(root), relative)


__all__ = [
    "Beneath",
    "LinkOnTheWay",
    "has_openat2",
    "real_path",
    "replace_in",
    "set_mode_in",
    "write_file_beneath",
]
