"""Apply a Landlock ruleset to this process, then exec a command inside it.

    python -I -S _confine_exec.py --write DIR [--write DIR ...] [--write-file FILE ...] -- ARGV...

Run as the child of a spawn (so it is safe in a threaded runtime, unlike `preexec_fn`): the
ruleset applies to this process and everything it execs or forks from then on. Writing,
creating, removing, renaming and truncating are allowed only beneath the `--write`
directories (and on the `--write-file` files); reading and executing stay allowed. With
Landlock ABI 6+, signals and abstract unix sockets are scoped to the new domain too.

Standard library only, and importable without the `meith_core` package: it runs under `-I -S`
for a fast start, and `meith_core._confinement` imports the same constants from here.
"""

from __future__ import annotations

import ctypes
import os
import sys
from typing import Final

SYS_CREATE_RULESET: Final = 444  # the same number on every architecture (syscalls since 5.13)
SYS_ADD_RULE: Final = 445
SYS_RESTRICT_SELF: Final = 446
CREATE_RULESET_VERSION: Final = 1
RULE_PATH_BENEATH: Final = 1
PR_SET_NO_NEW_PRIVS: Final = 38

WRITE_FILE: Final = 1 << 1
REMOVE_DIR: Final = 1 << 4
REMOVE_FILE: Final = 1 << 5
MAKE_CHAR: Final = 1 << 6
MAKE_DIR: Final = 1 << 7
MAKE_REG: Final = 1 << 8
MAKE_SOCK: Final = 1 << 9
MAKE_FIFO: Final = 1 << 10
MAKE_BLOCK: Final = 1 << 11
MAKE_SYM: Final = 1 << 12
REFER: Final = 1 << 13  # ABI 2
TRUNCATE: Final = 1 << 14  # ABI 3
SCOPE_ABSTRACT_UNIX_SOCKET: Final = 1 << 0  # ABI 6
SCOPE_SIGNAL: Final = 1 << 1  # ABI 6

#: Exit status when confinement or exec fails (like a shell's "cannot run").
EXIT_FAILED: Final = 126
EXIT_NOT_FOUND: Final = 127


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


def main(argv: list[str]) -> int:
    write_dirs: list[str] = []
    write_files: list[str] = []
    i = 0
    while i < len(argv) and argv[i] != "--":
        flag = argv[i]
        if flag in ("--write", "--write-file") and i + 1 < len(argv):
            (write_dirs if flag == "--write" else write_files).append(argv[i + 1])
            i += 2
            continue
        print(f"meith confine: unexpected argument {flag!r}", file=sys.stderr)
        return EXIT_FAILED
    command = argv[i + 1 :]
    if not command:
        print("meith confine: no command after --", file=sys.stderr)
        return EXIT_FAILED
    try:
        restrict_self(write_dirs, write_files)
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
