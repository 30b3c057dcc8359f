"""Namespaces and mounts: a user and mount namespace of its own (and a network one), binds,
read-only metadata, a private devpts, covered paths, loopback brought up."""

from __future__ import annotations

import os
import stat

from .kernel import failure, libc, write_text

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
#: statvfs flag -> mount flag that a remount inside a user namespace must keep (the kernel
#: refuses to drop a flag the outer mount has).
_LOCKED_FLAGS = {
    2: 2,  # nosuid
    4: 4,  # nodev
    8: 8,  # noexec
    1024: 1024,  # noatime
    2048: 2048,  # nodiratime
    4096: 1 << 21,  # relatime
}


def enter_user_mount_namespace(net: bool = False) -> None:
    """A user and mount namespace of its own (this uid and gid map to themselves), with mount
    events kept private: what is mounted next is seen by this process and its children only.
    With `net`, a network namespace of its own too (loopback only, brought up)."""
    c = libc()
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWUSER | CLONE_NEWNS | (CLONE_NEWNET if net else 0)
    if c.unshare(flags):
        raise failure("unshare(user, mount" + (", net)" if net else ")"))
    write_text("/proc/self/setgroups", "deny")
    write_text("/proc/self/uid_map", f"{uid} {uid} 1")
    write_text("/proc/self/gid_map", f"{gid} {gid} 1")
    if c.mount(None, b"/", None, MS_REC | MS_PRIVATE, None):
        raise failure("mount(private /)")


def mount(source: str | None, target: str, fstype: str | None, flags: int) -> None:
    enc = [x.encode() if x is not None else None for x in (source, target, fstype)]
    if libc().mount(enc[0], enc[1], enc[2], flags, None):
        raise failure(f"mount {target}")


def read_only(path: str) -> None:
    """Bind `path` onto itself, read-only (a directory with everything below it, or a file)."""
    mount(path, path, None, MS_BIND | MS_REC)
    kept = os.statvfs(path).f_flag
    flags = MS_BIND | MS_REMOUNT | MS_RDONLY
    for vfs_flag, mount_flag in _LOCKED_FLAGS.items():
        if kept & vfs_flag:
            flags |= mount_flag
    mount(None, path, None, flags)


def bind(source: str, target: str) -> None:
    """Mount `source` (a file, such as a socket) on the existing file `target`."""
    mount(source, target, None, MS_BIND)


def private_devpts() -> None:
    """A devpts instance of its own on /dev/pts, and its ptmx on /dev/ptmx: the terminals of
    other sessions and of the user are gone from view (the process keeps the one it was given,
    an open descriptor, and /dev/tty)."""
    mount_data("devpts", "/dev/pts", "devpts", 2 | 8, b"newinstance,ptmxmode=0666,mode=0620")
    if os.path.exists("/dev/ptmx"):
        mount("/dev/pts/ptmx", "/dev/ptmx", None, MS_BIND)


def mount_data(source: str, target: str, fstype: str, flags: int, data: bytes) -> None:
    if libc().mount(source.encode(), target.encode(), fstype.encode(), flags, data):
        raise failure(f"mount {target}")


def loopback_up() -> None:
    """Bring up `lo` in a new network namespace (it starts down)."""
    import _socket  # not `socket`: its enums cost every networked start milliseconds
    import fcntl
    import struct

    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 1
    s = _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM)
    try:
        ifreq = struct.pack("16sH22x", b"lo", 0)
        flags = struct.unpack("16sH22x", fcntl.ioctl(s.fileno(), siocgifflags, ifreq))[1]
        fcntl.ioctl(s.fileno(), siocsifflags, struct.pack("16sH22x", b"lo", flags | iff_up))
    finally:
        s.close()


def hide(path: str) -> None:
    """Make `path` look empty and unwritable: an empty read-only tmpfs over a directory,
    /dev/null over anything else (a socket cannot be connected to through it). Nothing to
    cover when `path` does not exist."""
    if not os.path.lexists(path):
        return
    if os.path.isdir(path):
        mount("tmpfs", path, "tmpfs", MS_RDONLY | 2 | 4)
    else:
        mount("/dev/null", path, None, MS_BIND)


def hide_file(path: str) -> None:
    """Cover the regular file `path` with /dev/null through a descriptor of it: what is
    covered is the file the descriptor is, and a symbolic link or anything else put in its
    place is left alone. Nothing to cover when nothing is there."""
    try:
        fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            mount("/dev/null", f"/proc/self/fd/{fd}", None, MS_BIND)
    finally:
        os.close(fd)


RESOLV_CONF = "/etc/resolv.conf"
#: What a confined process's /etc/resolv.conf says: ask the stub on its own loopback.
RESOLV_STUB = b"nameserver 127.0.0.1\noptions attempts:1 timeout:1\n"


def resolve_here(stub: str) -> None:
    """Point name lookups at the stub on the namespace's own loopback (the forwarder answers
    there): the file `stub` (RESOLV_STUB) mounted on /etc/resolv.conf, or on what it links to."""
    if os.path.exists(RESOLV_CONF):  # else the C library asks 127.0.0.1 anyway
        mount(stub, RESOLV_CONF, None, MS_BIND)
