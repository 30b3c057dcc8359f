"""Landlock through its system calls: the ABI this kernel speaks, and restricting this process
(writes, optionally reads, TCP connections; signals and abstract sockets scoped from ABI 6)."""

from __future__ import annotations

import ctypes
import os
import sys

from .kernel import failure, libc

SYS_CREATE_RULESET = 444  # the same number on every architecture (syscalls since 5.13)
SYS_ADD_RULE = 445
SYS_RESTRICT_SELF = 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38

READ_FILE = 1 << 2
READ_DIR = 1 << 3
WRITE_FILE = 1 << 1
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

ACCESS_NET_BIND_TCP = 1 << 0  # ABI 4
ACCESS_NET_CONNECT_TCP = 1 << 1  # ABI 4
RULE_NET_PORT = 2


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _NetPortAttr(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


def abi_version() -> int:
    """The kernel's Landlock ABI version, 0 when Landlock is missing or disabled."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        version = libc().syscall(SYS_CREATE_RULESET, None, 0, CREATE_RULESET_VERSION)
    except (OSError, AttributeError):
        return 0
    return max(0, int(version))


def write_access(abi: int) -> int:
    """Every access right that modifies the file system, as far as `abi` knows them."""
    rights = (
        WRITE_FILE
        | REMOVE_DIR
        | REMOVE_FILE
        | MAKE_CHAR
        | MAKE_DIR
        | MAKE_REG
        | MAKE_SOCK
        | MAKE_FIFO
        | MAKE_BLOCK
        | MAKE_SYM
    )
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    return rights


def file_access(abi: int) -> int:
    """The write rights that apply to a file (not a directory) rule."""
    return WRITE_FILE | (TRUNCATE if abi >= 3 else 0)


def restrict_self(
    write_dirs: list[str],
    write_files: list[str],
    abi: int | None = None,
    tcp_ports: list[int] | None = None,
    read_dirs: list[str] | None = None,
    read_files: list[str] | None = None,
) -> int:
    """Confine this process (and what it execs) to writing beneath `write_dirs`; returns the ABI
    used. Raises OSError when the kernel refuses; paths that do not exist are skipped. With
    `tcp_ports` (ABI 4+; an empty list: none) TCP connections go only to those ports. With
    `read_dirs` (a host without namespaces), reading too is limited: to those directories,
    the `read_files`, and what may be written."""
    abi = abi_version() if abi is None else abi
    if abi < 1:
        raise OSError("Landlock is not available on this kernel")
    if tcp_ports is not None and abi < 4:
        raise OSError(f"Landlock ABI {abi} has no TCP rules (ABI 4+)")
    c = libc()
    handled = write_access(abi)
    file_rights = file_access(abi)
    reads = read_dirs is not None
    if reads:
        handled |= READ_FILE | READ_DIR
        file_rights |= READ_FILE
    net = ACCESS_NET_CONNECT_TCP if tcp_ports is not None else 0
    attr = _RulesetAttr(handled, net, SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0)
    # Older kernels reject a struct larger than they know, unless the extra fields are zero;
    # pass only the fields this ABI has.
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = c.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if ruleset < 0:
        raise failure("landlock_create_ruleset")
    try:
        rules = [(write_dirs, handled), (write_files, file_rights)]
        if reads:
            rules += [(read_dirs or [], READ_FILE | READ_DIR), (read_files or [], READ_FILE)]
        for paths, allowed in rules:
            for path in paths:
                try:
                    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                except OSError:
                    continue
                try:
                    if allowed & READ_DIR and not os.path.isdir(f"/proc/self/fd/{fd}"):
                        allowed = READ_FILE  # became a file since the plan was made
                    rule = _PathBeneathAttr(allowed, fd)
                    if c.syscall(SYS_ADD_RULE, ruleset, RULE_PATH_BENEATH, ctypes.byref(rule), 0):
                        raise failure(f"landlock_add_rule {path}")
                finally:
                    os.close(fd)
        for port in tcp_ports or ():
            if port <= 0:
                continue
            net_rule = _NetPortAttr(ACCESS_NET_CONNECT_TCP, port)
            if c.syscall(SYS_ADD_RULE, ruleset, RULE_NET_PORT, ctypes.byref(net_rule), 0):
                raise failure(f"landlock_add_rule tcp {port}")
        if c.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0):
            raise failure("prctl(PR_SET_NO_NEW_PRIVS)")
        if c.syscall(SYS_RESTRICT_SELF, ruleset, 0):
            raise failure("landlock_restrict_self")
    finally:
        os.close(ruleset)
    return abi
