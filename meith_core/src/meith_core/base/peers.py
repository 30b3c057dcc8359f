"""Who is at the other end of a Unix socket: its credentials, and whether it descends from a
given process (Linux /proc, pinned with a pidfd where the kernel has one).

Standard library only: the client checks the runtime's uid with it on every connection.
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import struct


def peer_credentials(sock: socket.socket) -> tuple[int, int, int]:
    """(pid, uid, gid) of the process at the other end of a connected Unix socket."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, gid = struct.unpack("3i", raw)
    return pid, uid, gid


def parent_pid(pid: int) -> int | None:
    """The parent of `pid` (Linux /proc), or None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
        # The command name may hold spaces and parentheses: fields resume after the last ')'.
        return int(stat[stat.rindex(b")") + 2 :].split()[1])
    except (OSError, ValueError, IndexError):
        return None


#: SO_PEERPIDFD (Linux 6.5+): a pidfd for the process that connected, pinned at connect().
_SO_PEERPIDFD = getattr(socket, "SO_PEERPIDFD", 77)
#: Whether process ancestry can be read at all (Linux /proc); elsewhere nobody is a descendant.
_HAS_PROC = os.path.exists("/proc/self/stat")


def _peer_pidfd(sock: socket.socket) -> int | None:
    """A pidfd of the peer; None when the kernel has none to give (too old, not Linux).

    Raises ProcessLookupError when the peer is already gone."""
    if not _HAS_PROC:
        return None
    try:
        return int(sock.getsockopt(socket.SOL_SOCKET, _SO_PEERPIDFD))
    except OSError as exc:
        if exc.errno == errno.ESRCH:
            raise ProcessLookupError(exc.errno, exc.strerror) from exc
        return None


def peer_descends_from(sock: socket.socket, pid: int, ancestor: int) -> bool:
    """Whether the peer `pid` of `sock` is a descendant of `ancestor`, failing closed: also
    True when that cannot be told on Linux (the peer is gone, its pid was reused or its parent
    changed while it was looked at).

    The pidfd pins the peer's identity: a pid cannot be handed to another process while its
    pidfd's process still exists (even as a zombie), so ancestry read before the pidfd is
    found alive is the peer's own. Without SO_PEERPIDFD (kernels before 6.5) the parent chain
    is read by pid alone, and a peer that exits and has its pid reused in that instant could
    be misjudged."""
    if not _HAS_PROC:
        return False
    try:
        pidfd = _peer_pidfd(sock)
    except ProcessLookupError:
        return True
    try:
        for _ in range(3):
            parent = parent_pid(pid)
            if parent is None:
                return True  # gone before it could be looked at
            found = _chain_reaches(parent, ancestor)
            if parent_pid(pid) != parent:
                continue  # re-parented while the chain was walked: walk it again
            if pidfd is not None and not _pidfd_alive(pidfd):
                return True
            return found is not False
        return True
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _chain_reaches(pid: int, ancestor: int) -> bool | None:
    """Whether `ancestor` is `pid` or one of its ancestors; None when the chain could not be
    read to its end (a process left mid-walk, or a chain deeper than any real one)."""
    current: int | None = pid
    for _ in range(4096):
        if current == ancestor:
            return True
        if current is None:
            return None
        if current <= 1:
            return False
        current = parent_pid(current)
    return None


def _pidfd_alive(pidfd: int) -> bool:
    try:
        signal.pidfd_send_signal(pidfd, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # EPERM and the like: it exists
    return True


def _user_namespace(pid: int | str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/user")
    except OSError:
        return None


def _no_new_privs(pid: int | str) -> bool | None:
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"NoNewPrivs:"):
                    return line.split()[1] == b"1"
    except (OSError, IndexError):
        return None
    return None


def peer_confinement(pid: int) -> str | None:
    """Why the peer `pid` may be a confined process (and so must never be taken for the local
    user), or None: it lives in another user namespace than this process (every confined
    process has one of its own, where namespaces work), or it has no_new_privs set while this
    process has not (every Landlock-confined process has). Fails closed on Linux: a peer that
    cannot be looked at counts as confined."""
    if not _HAS_PROC:
        return None
    mine, theirs = _user_namespace("self"), _user_namespace(pid)
    if theirs is None and os.path.exists("/proc/self/ns/user"):
        return f"the user namespace of peer pid {pid} cannot be read"
    if mine is not None and theirs is not None and mine != theirs:
        return f"peer pid {pid} lives in another user namespace ({theirs})"
    if _no_new_privs(pid) and not _no_new_privs("self"):
        return f"peer pid {pid} runs with no_new_privs (as confined processes do)"
    return None
