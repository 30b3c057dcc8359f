"""Apply the walls of a confinement to this process, then exec a command inside them.

    python -I -S confine_exec.py [--env-file FILE] --write DIR [--write DIR ...]
        [--write-file FILE ...] [--read-only PATH ...] [--bind SRC DST ...] [--hide PATH ...]
        [--devpts] [--net none|PROXYSOCK] [--ports SOCK] [--tcp-connect PORT]
        [--proxy-url URL] -- ARGV...

Run as the child of a spawn (so it is safe in a threaded runtime, unlike `preexec_fn`): the
walls apply to this process and everything it execs or forks from then on.

**Nothing of the caller's runs before the walls.** The spawner starts this wrapper under a
fixed, minimal environment (`fixed_environment`): no loader variable (`LD_PRELOAD`,
`GCONV_PATH`, ...) and no `PYTHON*` variable reaches the dynamic loader or the interpreter that
runs it. The caller's environment is handed over in `--env-file` (NUL-separated `KEY=VALUE`,
the format of /proc/PID/environ, a 0600 file of this uid), which is read as data and removed,
and reaches only the final `execve`, after every wall is in place.

Walls, in the order they are built:

- with namespaces (`--read-only`, `--hide`, `--bind`, `--devpts` or `--net`): a user and mount
  namespace of its own; SRC of each `--bind` mounted on the file DST (the runtime's socket at a
  path the process can reach once its own is covered); each `--read-only` PATH bind-mounted
  read-only (repository metadata); `--devpts`: a private devpts instance on /dev/pts (and its
  ptmx on /dev/ptmx), so no other terminal can be opened; each `--hide` PATH covered (an empty
  read-only tmpfs over a directory, /dev/null over a file): meith homes and sockets, secrets.
- `--net`: a network namespace with only loopback. With a PROXYSOCK (a Unix socket of the
  runtime's network gate, reachable through the file system from any network namespace), a
  small forwarder outside the process's domain listens on 127.0.0.1 inside and relays to it,
  and the proxy variables of the child point there; with `--ports SOCK` the same forwarder
  accepts connections on SOCK (from the runtime) for a port of the namespace's loopback (a dev
  server the user opens at localhost:PORT).
- Landlock: writing, creating, removing, renaming and truncating only beneath the `--write`
  directories (and on the `--write-file` files); reads and execution stay allowed; with ABI 6+
  signals and abstract unix sockets are scoped to the new domain. `--tcp-connect PORT` (ABI
  4+, repeatable; `--tcp-connect 0` for none): TCP connections only to those ports (the
  network wall where no network namespace can be made).

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

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
ACCESS_NET_BIND_TCP = 1 << 0  # ABI 4
ACCESS_NET_CONNECT_TCP = 1 << 1  # ABI 4
RULE_NET_PORT = 2
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

#: The whole environment the wrapper itself starts with (plus `MEITH_*` marker variables, which
#: neither the loader nor Python reads): the caller's reaches only the final execve.
FIXED_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: The port the forwarder listens on inside a network namespace (the namespace is private, so
#: only the confined process could hold it; it is taken before the process starts).
PROXY_PORT = 3128
#: What a confined process's clients reach the network gate through.
_PROXY_VARS = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")
_NO_PROXY = "localhost,127.0.0.1,::1"
#: The wrapper's own variable naming its env file (see `Confinement.command`).
ENV_FILE_VAR = "MEITH_CONFINE_ENV"
#: At most this many bytes of environment are read from --env-file.
MAX_ENV_BYTES = 4 * 1024 * 1024

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


class _NetPortAttr(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


def fixed_environment(markers: dict[str, str] | None = None) -> dict[str, str]:
    """The environment to start the wrapper with: a fixed PATH and locale, and the `MEITH_*`
    `markers` (the process id the killer looks for); anything else is refused."""
    env = {"PATH": FIXED_PATH, "LC_ALL": "C"}
    for key, value in (markers or {}).items():
        if not key.startswith("MEITH_") or not key.replace("_", "").isalnum():
            raise ValueError(f"not a marker variable: {key!r}")
        env[key] = value
    return env


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
    libc = _libc()
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
    ruleset = libc.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if ruleset < 0:
        raise _fail("landlock_create_ruleset")
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
                    if libc.syscall(
                        SYS_ADD_RULE, ruleset, RULE_PATH_BENEATH, ctypes.byref(rule), 0
                    ):
                        raise _fail(f"landlock_add_rule {path}")
                finally:
                    os.close(fd)
        for port in tcp_ports or ():
            if port <= 0:
                continue
            net_rule = _NetPortAttr(ACCESS_NET_CONNECT_TCP, port)
            if libc.syscall(SYS_ADD_RULE, ruleset, RULE_NET_PORT, ctypes.byref(net_rule), 0):
                raise _fail(f"landlock_add_rule tcp {port}")
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


def enter_user_mount_namespace(net: bool = False) -> None:
    """A user and mount namespace of its own (this uid and gid map to themselves), with mount
    events kept private: what is mounted next is seen by this process and its children only.
    With `net`, a network namespace of its own too (loopback only, brought up)."""
    libc = _libc()
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWUSER | CLONE_NEWNS | (CLONE_NEWNET if net else 0)
    if libc.unshare(flags):
        raise _fail("unshare(user, mount" + (", net)" if net else ")"))
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


def private_devpts() -> None:
    """A devpts instance of its own on /dev/pts, and its ptmx on /dev/ptmx: the terminals of
    other sessions and of the user are gone from view (the process keeps the one it was given,
    an open descriptor, and /dev/tty)."""
    _mount_data("devpts", "/dev/pts", "devpts", 2 | 8, b"newinstance,ptmxmode=0666,mode=0620")
    if os.path.exists("/dev/ptmx"):
        _mount("/dev/pts/ptmx", "/dev/ptmx", None, MS_BIND)


def _mount_data(source: str, target: str, fstype: str, flags: int, data: bytes) -> None:
    if _libc().mount(source.encode(), target.encode(), fstype.encode(), flags, data):
        raise _fail(f"mount {target}")


def loopback_up() -> None:
    """Bring up `lo` in a new network namespace (it starts down)."""
    import fcntl
    import socket
    import struct

    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        ifreq = struct.pack("16sH22x", b"lo", 0)
        flags = struct.unpack("16sH22x", fcntl.ioctl(s, siocgifflags, ifreq))[1]
        fcntl.ioctl(s, siocsifflags, struct.pack("16sH22x", b"lo", flags | iff_up))


def hide(path: str) -> None:
    """Make `path` look empty and unwritable: an empty read-only tmpfs over a directory,
    /dev/null over anything else (a socket cannot be connected to through it). Nothing to
    cover when `path` does not exist."""
    if not os.path.lexists(path):
        return
    if os.path.isdir(path):
        _mount("tmpfs", path, "tmpfs", MS_RDONLY | 2 | 4)
    else:
        _mount("/dev/null", path, None, MS_BIND)


def read_env_file(path: str) -> dict[str, str]:
    """The caller's environment from `path` (NUL-separated KEY=VALUE), which is then removed.
    Only a regular 0600 file of this uid, opened without following links, is accepted."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if (
            st.st_uid != os.getuid()
            or st.st_mode & 0o077
            or not (st.st_mode & 0o170000 == 0o100000)
        ):
            raise OSError(f"{path}: not a private file of this user")
        chunks = []
        size = 0
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            size += len(chunk)
            if size > MAX_ENV_BYTES:
                raise OSError(f"{path}: environment larger than {MAX_ENV_BYTES} bytes")
            chunks.append(chunk)
    finally:
        os.close(fd)
        try:
            os.unlink(path)
        except OSError:
            pass
    env: dict[str, str] = {}
    for item in b"".join(chunks).split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep and key:
            env[os.fsdecode(key)] = os.fsdecode(value)
    return env


# -- the forwarder: the only way out of a network namespace --------------------------------


def _grow_pipe(fd: int) -> None:
    """A 1 MiB pipe (the default is 64 KiB): fewer splice calls per megabyte."""
    try:
        import fcntl

        fcntl.fcntl(fd, 1031, 1 << 20)  # F_SETPIPE_SZ
    except OSError:
        pass


def _pump(src: object, dst: object) -> None:
    """Copy until end of file: splice(2) through a pipe (no copy through Python) where the
    kernel and Python have it."""
    try:
        splice = getattr(os, "splice", None)
        if splice is not None:
            r, w = os.pipe()
            _grow_pipe(w)
            try:
                sfd, dfd = src.fileno(), dst.fileno()  # type: ignore[attr-defined]
                while True:
                    n = splice(sfd, w, 1 << 20)
                    if n == 0:
                        break
                    while n:
                        n -= splice(r, dfd, n)
            finally:
                os.close(r)
                os.close(w)
        else:
            while True:
                data = src.recv(1 << 20)  # type: ignore[attr-defined]
                if not data:
                    break
                dst.sendall(data)  # type: ignore[attr-defined]
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(1)  # type: ignore[attr-defined]
        except OSError:
            pass


def _relay(a: object, b: object) -> None:
    import threading

    other = threading.Thread(target=_pump, args=(b, a), daemon=True)
    other.start()
    _pump(a, b)
    other.join()
    a.close()  # type: ignore[attr-defined]
    b.close()  # type: ignore[attr-defined]


def _outbound(conn: object, proxy_sock: str) -> None:
    import socket

    up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        up.connect(proxy_sock)
    except OSError:
        up.close()
        conn.close()  # type: ignore[attr-defined]
        return
    _relay(conn, up)


def _inbound(conn: object) -> None:
    import socket

    line = b""
    try:
        while not line.endswith(b"\n") and len(line) < 16:
            chunk = conn.recv(1)  # type: ignore[attr-defined]
            if not chunk:
                break
            line += chunk
        port = int(line.strip())
        if not 0 < port < 65536:
            raise ValueError(port)
        inner = socket.create_connection(("127.0.0.1", port), timeout=5)
        inner.settimeout(None)
    except (OSError, ValueError):
        conn.close()  # type: ignore[attr-defined]
        return
    _relay(conn, inner)


def _forward(main_pid: int, tcp: object, proxy_sock: str | None, ports: object | None) -> None:
    """Relay until the confined process `main_pid` exits: 127.0.0.1:PROXY_PORT inside to the
    runtime's gate (`proxy_sock`), and connections on `ports` to a loopback port inside."""
    import selectors
    import threading

    sel = selectors.DefaultSelector()
    pidfd = os.pidfd_open(main_pid)
    sel.register(pidfd, selectors.EVENT_READ, "exit")
    if tcp is not None:
        sel.register(tcp, selectors.EVENT_READ, "out")  # type: ignore[arg-type]
    if ports is not None:
        sel.register(ports, selectors.EVENT_READ, "in")  # type: ignore[arg-type]
    while True:
        for key, _ in sel.select():
            if key.data == "exit":
                os._exit(0)
            try:
                conn, _addr = key.fileobj.accept()  # type: ignore[union-attr]
            except OSError:
                continue
            if key.data == "out":
                t = threading.Thread(target=_outbound, args=(conn, proxy_sock), daemon=True)
            else:
                t = threading.Thread(target=_inbound, args=(conn,), daemon=True)
            t.start()


def start_forwarder(proxy_sock: str | None, ports_path: str | None) -> None:
    """Listen inside the network namespace, then leave the relaying to a detached grandchild
    (outside the Landlock domain the command gets, so it can neither trace nor, with ABI 6+,
    signal it; not a child of the command, so nothing of the command's waits for it)."""
    import socket

    tcp = None
    if proxy_sock is not None:
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        tcp.bind(("127.0.0.1", PROXY_PORT))
        tcp.listen(128)
    ports = None
    if ports_path is not None:
        ports = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        ports.bind(ports_path)
        ports.listen(128)
    main_pid = os.getpid()
    child = os.fork()
    if child == 0:
        try:
            if os.fork() != 0:
                os._exit(0)
            os.setsid()
            null = os.open("/dev/null", os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            keep = {null, tcp.fileno() if tcp else -1, ports.fileno() if ports else -1}
            for fd in _open_fds():
                if fd > 2 and fd not in keep:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            try:
                restrict_self([], [])
            except OSError:
                pass
            _forward(main_pid, tcp, proxy_sock, ports)
        finally:
            os._exit(0)
    os.waitpid(child, 0)
    if tcp is not None:
        tcp.close()
    if ports is not None:
        ports.close()


def _open_fds() -> list[int]:
    try:
        return [int(n) for n in os.listdir("/proc/self/fd")]
    except OSError:
        return list(range(3, 256))


def proxy_environment(url: str) -> dict[str, str]:
    """What ordinary clients (curl, pip, urllib, git over https) read to use the gate."""
    env = dict.fromkeys(_PROXY_VARS, url)
    env["no_proxy"] = env["NO_PROXY"] = _NO_PROXY
    return env


#: Loader variables that run code in every process that starts with them.
_LOADER_HOOKS = ("LD_PRELOAD", "LD_AUDIT")
_LIST_FLAGS = (
    "--write",
    "--write-file",
    "--read-only",
    "--hide",
    "--tcp-connect",
    "--read",
    "--read-file",
)
_VALUE_FLAGS = ("--env-file", "--net", "--ports", "--proxy-url")


def main(argv: list[str]) -> int:
    if argv == ["--probe-namespaces"]:
        try:
            enter_user_mount_namespace(net=True)
            private_devpts()
            loopback_up()
        except OSError as exc:
            print(exc, file=sys.stderr)
            return EXIT_FAILED
        return 0
    lists: dict[str, list[str]] = {flag: [] for flag in _LIST_FLAGS}
    values: dict[str, str] = {}
    binds: list[tuple[str, str]] = []
    devpts = False
    i = 0
    while i < len(argv) and argv[i] != "--":
        flag = argv[i]
        if flag == "--bind" and i + 2 < len(argv):
            binds.append((argv[i + 1], argv[i + 2]))
            i += 3
            continue
        if flag == "--devpts":
            devpts = True
            i += 1
            continue
        if flag in lists and i + 1 < len(argv):
            lists[flag].append(argv[i + 1])
            i += 2
            continue
        if flag in _VALUE_FLAGS and i + 1 < len(argv):
            values[flag] = argv[i + 1]
            i += 2
            continue
        print(f"meith confine: unexpected argument {flag!r}", file=sys.stderr)
        return EXIT_FAILED
    command = argv[i + 1 :]
    if not command:
        print("meith confine: no command after --", file=sys.stderr)
        return EXIT_FAILED
    net = values.get("--net")
    if "--env-file" not in values and os.environ.get(ENV_FILE_VAR):
        values["--env-file"] = os.environ[ENV_FILE_VAR]
    if "--env-file" not in values:
        preloaded = [k for k in _LOADER_HOOKS if k in os.environ]
        if preloaded:
            # The loader has already run that code here, outside every wall: do not go on
            # as if nothing happened. Spawners hand the environment over in --env-file.
            print(
                f"meith confine: refusing to run: {', '.join(preloaded)} reached the wrapper "
                "itself (spawn it with Confinement.command, which gives the caller's "
                "environment to the command only)",
                file=sys.stderr,
            )
            return EXIT_FAILED
    try:
        # Data only: the caller's environment is parsed here and applied at the execve.
        env = read_env_file(values["--env-file"]) if "--env-file" in values else dict(os.environ)
        tcp_ports = [int(p) for p in lists["--tcp-connect"]] if lists["--tcp-connect"] else None
        if lists["--read-only"] or lists["--hide"] or binds or devpts or net:
            # Mounts first: once Landlock applies, the mount topology cannot change any more
            # (so the confined process cannot undo them either).
            enter_user_mount_namespace(net=net is not None)
            for source, target in binds:
                bind(source, target)
            for path in lists["--read-only"]:
                read_only(path)
            if devpts:
                private_devpts()
            for path in lists["--hide"]:
                hide(path)
            if net is not None:
                loopback_up()
                proxy = None if net == "none" else net
                if proxy is not None or "--ports" in values:
                    start_forwarder(proxy, values.get("--ports"))
                if proxy is not None:
                    env.update(proxy_environment(f"http://127.0.0.1:{PROXY_PORT}"))
        if "--proxy-url" in values:
            env.update(proxy_environment(values["--proxy-url"]))
        limit_reads = bool(lists["--read"])
        restrict_self(
            lists["--write"],
            lists["--write-file"],
            tcp_ports=tcp_ports,
            read_dirs=lists["--read"] if limit_reads else None,
            read_files=lists["--read-file"],
        )
    except (OSError, ValueError) as exc:
        # Never run the command unconfined when confinement was asked for.
        print(f"meith confine: could not confine the process: {exc}", file=sys.stderr)
        return EXIT_FAILED
    try:
        # The caller's environment and argv: only here, inside every wall.
        os.execvpe(command[0], command, env)  # noqa: S606 - the command is the caller's
    except FileNotFoundError:
        print(f"meith confine: command not found: {command[0]}", file=sys.stderr)
        return EXIT_NOT_FOUND
    except OSError as exc:
        print(f"meith confine: cannot run {command[0]}: {exc}", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
