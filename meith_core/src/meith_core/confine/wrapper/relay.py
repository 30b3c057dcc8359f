"""Relaying bytes between two sockets, both ways, with splice(2) where the kernel has it: the
bulk of a download never passes through Python. The gate and the forwarders all use this."""

from __future__ import annotations

import os
import socket
import threading

#: Bytes moved per splice call (and the pipe's size).
CHUNK = 1 << 20


def grow_pipe(fd: int) -> None:
    """A 1 MiB pipe (the default is 64 KiB): fewer splice calls per megabyte."""
    try:
        import fcntl

        fcntl.fcntl(fd, 1031, CHUNK)  # F_SETPIPE_SZ
    except OSError:
        pass


def pump(src: socket.socket, dst: socket.socket) -> None:
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
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def relay(a: socket.socket, b: socket.socket) -> None:
    """Relay both ways until both directions end (blocking; the caller closes both)."""
    other = threading.Thread(target=pump, args=(b, a), daemon=True)
    other.start()
    pump(a, b)
    other.join()
