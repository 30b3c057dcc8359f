"""Apply a Landlock ruleset to this process, then exec a command inside it.

    python -I -S _confine_exec.py --write DIR [--write DIR ...] [--write-file FILE ...] -- ARGV...

Run as the child of a spawn (so it is safe in a threaded runtime, unlike `preexec_fn`): the
ruleset applies to this process and everything it execs or forks from then on. Writing,
creating, removing, renaming and truncating are allowed only beneath the `--write`
directories (and on the `--write-file` files); reading and executing stay allowed. With
Landlock ABI 6+, signals and abstract unix sockets are scoped to the new domain too.

With `--read-only PATH` or `--hide PATH`, it first enters a user and mount namespace of its own
and bind-mounts PATH read-only (repository metadata) or covers it (meith's home, its socket), so
these hold even inside a writable directory; Landlock then forbids changing mounts. `--bind SRC
DST` (before those) mounts SRC on the existing file DST: the runtime's socket at a path the
process can reach once its own is covered.

Standard library only (not even `typing`: it costs more than the rest of the start-up), and
importable without the `meith_core` package: it runs under `-I -S` for a fast start, and
`meith_core.policy.confinement` imports the same constants from here.
"""

from __future__ import annotations

import ctypes
import os
import sys

SYS_CREATE_RULESET = 444  # the same number on every architecture (syscalls since 5.13)
SYS_ADD_RULE = 445
SYS_RESTRICT_SELF = 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38

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

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
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

#: Exit status when confinement or exec fails (like a shell's "cannot run").
EXIT_FAILED = 126
EXIT_NOT_FOUND = 127


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def abi_version() -> int:
    """The kernel's Landlock ABI version, 0 when Landlock is missing or disabled."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        version = _libc().syscall(SYS_CREATE_RULESET, None, 0, CREATE_RULESET_VERSION)
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


def _fail(what: str) -> OSError:
    err = ctypes.get_errno()
    return OSError(err, f"{what}: {os.strerror(err)}")


def restrict_self(write_dirs: list[str], write_files: list[str], abi: int | None = None) -> int:
    """Confine this process (and what it execs) to writing beneath `write_dirs`; returns the ABI
    used. Raises OSError when the kernel refuses; paths that do not exist are skipped."""
    abi = abi_version() if abi is None else abi
    if abi < 1:
        raise OSError("Landlock is not available on this kernel")
    libc = _libc()
    handled = write_access(abi)
    attr = _RulesetAttr(handled, 0, SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0)
    # Older kernels reject a struct larger than they know, unless the extra fields are zero;
    # pass only the fields this ABI has.
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = libc.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if ruleset < 0:
        raise _fail("landlock_create_ruleset")
    try:
        for paths, allowed in ((write_dirs, handled), (write_files, file_access(abi))):
            for path in paths:
                try:
                    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                except OSError:
                    continue
                try:
                    rule = _PathBeneathAttr(allowed, fd)
                    if libc.syscall(
                        SYS_ADD_RULE, ruleset, RULE_PATH_BENEATH, ctypes.byref(rule), 0
                    ):
                        raise _fail(f"landlock_add_rule {path}")
                finally:
                    os.close(fd)
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0):
            raise _fail("prctl(PR_SET_NO_NEW_PRIVS)")
        if libc.syscall(SYS_RESTRICT_SELF, ruleset, 0):
            raise _fail("landlock_restrict_self")
    finally:
        os.close(ruleset)
    return abi


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def enter_user_mount_namespace() -> None:
    """A user and mount namespace of its own (this uid and gid map to themselves), with mount
    events kept private: what is mounted next is seen by this process and its children only."""
    libc = _libc()
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNS):
        raise _fail("unshare(user, mount)")
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")
    if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None):
        raise _fail("mount(private /)")


def _mount(source: str | None, target: str, fstype: str | None, flags: int) -> None:
    enc = [x.encode() if x is not None else None for x in (source, target, fstype)]
    if _libc().mount(enc[0], enc[1], enc[2], flags, None):
        raise _fail(f"mount {target}")


def read_only(path: str) -> None:
    """Bind `path` onto itself, read-only (a directory with everything below it, or a file)."""
    _mount(path, path, None, MS_BIND | MS_REC)
    kept = os.statvfs(path).f_flag
    flags = MS_BIND | MS_REMOUNT | MS_RDONLY
    for vfs_flag, mount_flag in _LOCKED_FLAGS.items():
        if kept & vfs_flag:
            flags |= mount_flag
    _mount(None, path, None, flags)


def bind(source: str, target: str) -> None:
    """Mount `source` (a file, such as a socket) on the existing file `target`."""
    _mount(source, target, None, MS_BIND)


def hide(path: str) -> None:
    """Make `path` look empty and unwritable: an empty read-only tmpfs over a directory,
    /dev/null over anything else (a socket cannot be connected to through it)."""
    if os.path.isdir(path):
        _mount("tmpfs", path, "tmpfs", MS_RDONLY | 2 | 4)
    else:
        _mount("/dev/null", path, None, MS_BIND)


def main(argv: list[str]) -> int:
    if argv == ["--probe-namespaces"]:
        try:
            enter_user_mount_namespace()
        except OSError as exc:
            print(exc, file=sys.stderr)
            return EXIT_FAILED
        return 0
    lists: dict[str, list[str]] = {
        "--write": [],
        "--write-file": [],
        "--read-only": [],
        "--hide": [],
    }
    binds: list[tuple[str, str]] = []
    i = 0
    while i < len(argv) and argv[i] != "--":
        flag = argv[i]
        if flag == "--bind" and i + 2 < len(argv):
            binds.append((argv[i + 1], argv[i + 2]))
            i += 3
            continue
        if flag in lists and i + 1 < len(argv):
            lists[flag].append(argv[i + 1])
            i += 2
            continue
        print(f"meith confine: unexpected argument {flag!r}", file=sys.stderr)
        return EXIT_FAILED
    command = argv[i + 1 :]
    if not command:
        print("meith confine: no command after --", file=sys.stderr)
        return EXIT_FAILED
    try:
        if lists["--read-only"] or lists["--hide"] or binds:
            # Mounts first: once Landlock applies, the mount topology cannot change any more
            # (so the confined process cannot undo them either).
            enter_user_mount_namespace()
            for source, target in binds:
                bind(source, target)
            for path in lists["--read-only"]:
                read_only(path)
            for path in lists["--hide"]:
                hide(path)
        restrict_self(lists["--write"], lists["--write-file"])
    except OSError as exc:
        # Never run the command unconfined when confinement was asked for.
        print(f"meith confine: could not confine the process: {exc}", file=sys.stderr)
        return EXIT_FAILED
    try:
        os.execvp(command[0], command)  # noqa: S606 - the command is the caller's, run as asked
    except FileNotFoundError:
        print(f"meith confine: command not found: {command[0]}", file=sys.stderr)
        return EXIT_NOT_FOUND
    except OSError as exc:
        print(f"meith confine: cannot run {command[0]}: {exc}", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
