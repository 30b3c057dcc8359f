"""The C library handle and the error of a failed system call, for the wrapper's modules."""

import ctypes
import os

_libc: ctypes.CDLL | None = None


def libc() -> ctypes.CDLL:
    """The C library, opened once: a handle per call (a `dlopen` and a new function pointer
    for each name) cost every confined start about half a millisecond over its mounts."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def failure(what: str) -> OSError:
    """The OSError of the system call that just failed (its errno)."""
    err = ctypes.get_errno()
    return OSError(err, f"{what}: {os.strerror(err)}")


def write_text(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)
