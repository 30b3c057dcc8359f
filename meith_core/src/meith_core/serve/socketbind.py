"""Claiming the socket path safely.

- A lock file beside the socket (`<socket>.lock`, flock) decides who owns the path: a second
  `meith serve` fails with a clear message instead of unlinking the live socket of the first
  (asyncio's unix server would unlink it).
- Holding the lock, an existing *socket* at the path is stale (its owner died) and is replaced;
  anything else at the path is never deleted.
- The directory must be the user's own with mode 0700; the socket is created 0600.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import socket
import stat
from dataclasses import dataclass
from pathlib import Path

from meith_core.base.home import DIR_MODE, UnsafePathError
from meith_core.base.instances import MAX_SOCKET_PATH_BYTES

LISTEN_BACKLOG = 512


class SocketBindError(RuntimeError):
    """The runtime cannot listen at this path; the message says why and what to do."""


@dataclass
class BoundSocket:
    path: Path
    sock: socket.socket
    lock_fd: int
    inode: int

    def listen(self) -> None:
        """Start accepting connections (the kernel queues them until the server takes them)."""
        self.sock.listen(LISTEN_BACKLOG)

    def release(self) -> None:
        """Remove our socket file (only if it is still ours) and drop the lock."""
        with contextlib.suppress(OSError):
            if os.lstat(self.path).st_ino == self.inode:
                os.unlink(self.path)
        with contextlib.suppress(OSError):
            self.sock.close()
        with contextlib.suppress(OSError):
            os.close(self.lock_fd)


def check_socket_dir(directory: Path, *, create: bool) -> None:
    """The socket directory must be ours and 0700 (created so when `create`)."""
    if create:
        with contextlib.suppress(FileExistsError):
            directory.mkdir(mode=DIR_MODE, parents=True)
    try:
        st = os.stat(directory)
    except FileNotFoundError:
        raise SocketBindError(f"socket directory {directory} does not exist") from None
    if not stat.S_ISDIR(st.st_mode):
        raise SocketBindError(f"{directory} is not a directory")
    if st.st_uid != os.geteuid():
        raise SocketBindError(
            f"socket directory {directory} is owned by uid {st.st_uid}, not by you; refusing to listen there"
        )
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        raise SocketBindError(
            f"socket directory {directory} is accessible to other users (mode {mode:o}); "
            f"run `chmod 700 {directory}` or choose another --socket"
        )


def bind_socket(path: Path, *, create_dir: bool, listen: bool = True) -> BoundSocket:
    """Lock and bind the socket path. `listen=False` leaves connecting refused until
    `BoundSocket.listen()`: `meith serve` listens only once it is ready to answer."""
    path = Path(os.path.abspath(path))
    size = len(os.fsencode(path))
    if size > MAX_SOCKET_PATH_BYTES:
        raise SocketBindError(
            f"socket path {path} is {size} bytes; this platform allows {MAX_SOCKET_PATH_BYTES}. "
            "Choose a shorter --socket or MEITH_HOME"
        )
    try:
        check_socket_dir(path.parent, create=create_dir)
    except UnsafePathError as exc:
        raise SocketBindError(str(exc)) from None

    lock_path = path.with_name(path.name + ".lock")
    try:
        lock_fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise SocketBindError(f"cannot open lock file {lock_path}: {exc.strerror}") from None
    try:
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = _read_owner(lock_fd)
            who = f" (pid {owner})" if owner else ""
            raise SocketBindError(
                f"another meith serve{who} is already listening on {path}; "
                "stop it first (meith stop) or choose another --socket"
            ) from None
        os.ftruncate(lock_fd, 0)
        os.pwrite(lock_fd, f"{os.getpid()}\n".encode(), 0)

        try:
            st = os.lstat(path)
        except FileNotFoundError:
            pass
        else:
            if not stat.S_ISSOCK(st.st_mode):
                raise SocketBindError(f"{path} exists and is not a socket; refusing to replace it")
            os.unlink(path)  # stale: its runtime died without cleaning up (we hold the lock)

        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)  # the socket is born 0600: no window where it is wider
        try:
            sock.bind(os.fspath(path))
        except OSError as exc:
            sock.close()
            raise SocketBindError(f"cannot bind {path}: {exc.strerror}") from None
        finally:
            os.umask(old_umask)
        os.chmod(path, 0o600)
        sock.setblocking(False)
        bound = BoundSocket(path=path, sock=sock, lock_fd=lock_fd, inode=os.lstat(path).st_ino)
        if listen:
            bound.listen()
        return bound
    except BaseException:
        os.close(lock_fd)
        raise


def _read_owner(fd: int) -> int | None:
    try:
        return int(os.pread(fd, 32, 0).decode().strip() or 0) or None
    except (OSError, ValueError):
        return None


def socket_lock_held(path: Path) -> bool:
    """True when some process holds the lock of the socket at `path` (it is live)."""
    lock_path = path.with_name(path.name + ".lock")
    try:
        fd = os.open(lock_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        return exc.errno not in (errno.ENOENT,)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
