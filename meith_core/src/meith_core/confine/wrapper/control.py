"""The control channel of one confined spawn: a SOCK_SEQPACKET socket pair the runtime makes and
hands to the wrapper as an inherited descriptor (`--control FD`), which only the forwarder keeps
(the command never has it). No path leads to it, so nothing the process renames or links can
put anything else at either end.

Each message is one datagram: a tag, a space, text, and at most one descriptor:

- `out [HOST:PORT]` (forwarder to runtime, with the connection a client inside made, itself:
  the gate relays it straight to its destination, one hop): without text a client of the
  proxy port (it speaks HTTP to the gate); with text a client of a named host-loopback
  destination (`--listen`), tunnelled to it as if it had asked for CONNECT;
- `dns NAME` (forwarder to runtime): a name lookup the stub inside refused;
- `in PORT` (runtime to forwarder, with a stream socket): relay it to 127.0.0.1:PORT inside.
"""

from __future__ import annotations

import os
import socket

OUT = b"out"
DNS = b"dns"
IN = b"in"
#: No message is longer (a tag and a host name or a port).
MAX_MESSAGE = 1024


def pair() -> tuple[socket.socket, socket.socket]:
    """(the runtime's end, the wrapper's end), both close-on-exec."""
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)


def send(sock: socket.socket, tag: bytes, text: str = "", fd: int | None = None) -> None:
    data = tag + b" " + text.encode("ascii", "replace")[: MAX_MESSAGE - 8]
    if fd is None:
        sock.send(data)
    else:
        socket.send_fds(sock, [data], [fd])


def receive(sock: socket.socket) -> tuple[bytes, str, socket.socket | None]:
    """(tag, text, the socket that came with it or None); tag b"" at the end of the channel."""
    data, fds, _flags, _addr = socket.recv_fds(sock, MAX_MESSAGE, 1)
    attached = None
    for fd in fds:
        if attached is None and data:
            attached = socket.socket(fileno=fd)
        else:
            os.close(fd)
    if not data:
        return b"", "", attached
    tag, _, text = data.partition(b" ")
    return tag, text.decode("ascii", "replace"), attached
