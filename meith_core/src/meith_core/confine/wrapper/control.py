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

Built on `_socket`, not `socket`: the wrapper imports this on every networked start, and
`socket`'s enums cost each of them milliseconds.
"""

from __future__ import annotations

import _socket
import os
import sys

OUT = b"out"
DNS = b"dns"
IN = b"in"
#: No message is longer (a tag and a host name or a port).
MAX_MESSAGE = 1024
#: sizeof(int): one descriptor in an SCM_RIGHTS message.
_FD_BYTES = 4


def send(sock: _socket.socket, tag: bytes, text: str = "", fd: int | None = None) -> None:
    data = tag + b" " + text.encode("ascii", "replace")[: MAX_MESSAGE - 8]
    if fd is None:
        sock.send(data)
    else:
        rights = fd.to_bytes(_FD_BYTES, sys.byteorder)
        sock.sendmsg([data], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, rights)])


def receive(sock: _socket.socket) -> tuple[bytes, str, int | None]:
    """(tag, text, the descriptor that came with it or None); tag b"" at the end of the
    channel. Any further descriptor is closed."""
    data, ancillary, _flags, _addr = sock.recvmsg(MAX_MESSAGE, _socket.CMSG_LEN(_FD_BYTES))
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            whole = len(payload) - len(payload) % _FD_BYTES
            fds += [
                int.from_bytes(payload[i : i + _FD_BYTES], sys.byteorder, signed=True)
                for i in range(0, whole, _FD_BYTES)
            ]
    attached = None
    for fd in fds:
        if attached is None and data:
            attached = fd
        else:
            os.close(fd)
    if not data:
        return b"", "", attached
    tag, _, text = data.partition(b" ")
    return tag, text.decode("ascii", "replace"), attached
