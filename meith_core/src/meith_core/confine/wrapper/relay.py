"""Relaying bytes between two sockets, both ways, with splice(2) where the kernel has it: the
bulk of a download never passes through Python. The gate and the forwarders all use this
(on `_socket` and `_thread`: the wrapper imports it on every networked start)."""

from __future__ import annotations

import _socket
import _thread
import os

#: Bytes moved per splice call (and the pipe's size).
CHUNK = 1 << 20


def grow_pipe(fd: int) -> None:
    """A 1 MiB pipe (the default is 64 KiB): fewer splice calls per megabyte."""
    try:
        import fcntl

        fcntl.fcntl(fd, 1031, CHUNK)  # F_SETPIPE_SZ
    except OSError:
        pass


def pump(src: _socket.socket, dst: _socket.socket) -> None:
    """Copy `src` to `dst` until end of file, then shut `dst`'s writing side."""
    try:
        splice = getattr(os, "splice", None)
        if splice is not None:
            r, w = os.pipe()
            grow_pipe(w)
            try:
                sfd, dfd = src.fileno(), dst.fileno()
                while True:
                    n = splice(sfd, w, CHUNK)
                    if n == 0:
                        break
                    while n:
                        n -= splice(r, dfd, n)
            finally:
                os.close(r)
                os.close(w)
        else:
            while True:
                data = src.recv(CHUNK)
                if not data:
                    break
                dst.sendall(data)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(_socket.SHUT_WR)
        except OSError:
            pass


def relay(a: _socket.socket, b: _socket.socket) -> None:
    """Relay both ways until both directions end (blocking; the caller closes both)."""
    back_done = _thread.allocate_lock()
    back_done.acquire()

    def back() -> None:
        try:
            pump(b, a)
        finally:
            back_done.release()

    _thread.start_new_thread(back, ())
    pump(a, b)
    back_done.acquire()
