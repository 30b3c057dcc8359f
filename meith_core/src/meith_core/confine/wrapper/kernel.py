"""The C library handle and the error of a failed system call, for the wrapper's modules."""

import ctypes
import os


def libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


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
