"""Kernel confinement for processes started under a directory-confined grant (Landlock).

A `Confinement` is a plan: which directories and files the process may write, computed from
the grant's directory minus what must stay out of reach (meith's home, its own installation).
`wrap(argv)` returns the argv that applies it in the child, between spawn and exec, through the
small exec wrapper `policy/confine_exec.py`. Reads and execution stay allowed.

Where unprivileged user namespaces work, the plan also covers meith's home and socket (the
process can neither read the trust root nor call back into the runtime as the local user) and
mounts repository metadata inside the writable directory read-only (`.git`, the `gitdir:` a
worktree's `.git` file points to): a hook or config key planted there would run later, in the
user's own git, outside every wall.

Landlock rules only add access, so a protected directory inside the granted one is carved out
by granting the granted directory's other entries one by one instead: the process can then
write anywhere beneath them, but cannot create new entries directly in the directories that
lead to the protected one (the granted directory itself, in the common case).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import itertools
import os
import py_compile
import secrets
import stat
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from meith_core.base.homes import known_homes, known_sockets, registry_dir, user_tmp_dir
from meith_core.base.paths import is_within, outermost, resolved_within
from meith_core.policy import confine_exec as _confine_exec
from meith_core.policy.secret_paths import secret_paths

#: Device files every program expects to write (output discarded, random numbers, its tty).
DEVICE_FILES: Final = (
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/random",
    "/dev/urandom",
    "/dev/ptmx",
)
#: Pseudo-terminal slaves, and POSIX shared memory (semaphores of Python's multiprocessing).
DEVICE_DIRS: Final = ("/dev/pts", "/dev/shm")  # noqa: S108 - granted, not used as a temp dir

_WRAPPER: Final = _confine_exec.__file__


#: Forces the hardened-host path (no user namespaces), for tests: `MEITH_CONFINE_NO_NAMESPACES=1`.
NO_NAMESPACES_ENV: Final = "MEITH_CONFINE_NO_NAMESPACES"
#: Pretends an older Landlock ABI (an integer), for tests: `MEITH_CONFINE_LANDLOCK_ABI=3`.
ABI_ENV: Final = "MEITH_CONFINE_LANDLOCK_ABI"


@dataclass(frozen=True, slots=True)
class Wall:
    """One wall of a confinement: whether this host builds it, how, and if not, the fix."""

    name: str
    built: bool
    how: str
    #: What is missing and how to get it, when not built.
    fix: str = ""

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"wall": self.name, "built": self.built, "how": self.how}
        if not self.built:
            out["fix"] = self.fix
        return out


_USERNS_FIX = (
    "enable unprivileged user namespaces: sysctl -w kernel.unprivileged_userns_clone=1 "
    "(Debian), or on Ubuntu 24.04+ sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 "
    "or an AppArmor profile for python allowing 'userns,'; in a container, run it with "
    "user namespaces allowed (e.g. docker --security-opt seccomp=unconfined, or podman)"
)
_KERNEL_FIX = "a kernel with Landlock enabled (5.13+, lsm=landlock in the boot parameters)"


@dataclass(frozen=True, slots=True)
class LandlockStatus:
    """What this kernel's Landlock (and namespaces) can enforce."""

    abi: int
    #: Whether user, mount and network namespaces work here (hiding meith's homes, sockets and
    #: the secret paths, read-only repository metadata, a private devpts, the network wall).
    namespaces: bool = False

    @property
    def available(self) -> bool:
        return self.abi >= 1

    @property
    def scopes_signals(self) -> bool:
        return self.abi >= 6

    @property
    def tcp_rules(self) -> bool:
        return self.abi >= 4

    def walls(self) -> list[Wall]:
        """Every wall of a confined process, built here or not (never claimed when not)."""
        ns, ll = self.namespaces, self.available
        net_how = (
            "a network namespace with only loopback; named destinations through meith's "
            "gate (HTTP CONNECT proxy over a Unix socket), proxy variables set"
        )
        if not ns and self.tcp_rules:
            net_how = (
                "no network namespace: Landlock TCP rules allow TCP connections only to "
                "meith's gate; UDP and other protocols are NOT blocked"
            )
        return [
            Wall(
                "writes",
                ll,
                f"Landlock ABI {self.abi}: writes only beneath the granted directory and a "
                "private temp dir",
                _KERNEL_FIX,
            ),
            Wall(
                "environment",
                True,
                "the wrapper starts with a fixed environment; the caller's reaches only the "
                "final execve, inside every wall",
            ),
            Wall(
                "signals",
                self.scopes_signals,
                "Landlock ABI 6+ scopes signals and abstract unix sockets to the domain",
                "Linux 6.12+ (Landlock ABI 6)",
            ),
            Wall(
                "terminals",
                ll,
                "a private devpts instance: other sessions' and the user's terminals are not there"
                if ns
                else "Landlock: of /dev/pts only its own terminal can be read or written",
                _KERNEL_FIX,
            ),
            Wall(
                "runtimes",
                True,
                "every runtime asks a peer outside its user namespace or with no_new_privs "
                "for a session token" + ("; all meith homes and sockets are hidden" if ns else ""),
                "",
            ),
            Wall(
                "homes-and-sockets-hidden",
                ns,
                "every meith home and runtime socket covered in the mount namespace",
                _USERNS_FIX
                + " (without: their files cannot be read, but sockets stay connectable; "
                "admission still refuses the process)",
            ),
            Wall(
                "secrets",
                ll,
                "the secret paths (confinement.secretPaths) covered in the mount namespace"
                if ns
                else "Landlock read rules: everything but the secret paths and meith homes "
                "is readable (the directories leading to them cannot be listed, and what is "
                "created there later cannot be read)",
                _KERNEL_FIX,
            ),
            Wall(
                "git-metadata",
                ns,
                "existing .git mounted read-only",
                _USERNS_FIX,
            ),
            Wall(
                "network",
                ns or self.tcp_rules,
                net_how,
                _USERNS_FIX + "; or Linux 6.7+ (Landlock ABI 4) for TCP-only rules",
            ),
            Wall(
                "udp",
                ns,
                "UDP has nowhere to go from a network namespace with only loopback",
                _USERNS_FIX,
            ),
        ]

    def missing(self) -> list[Wall]:
        return [w for w in self.walls() if not w.built]

    def describe(self) -> str:
        if not self.available:
            return (
                "Landlock is not available on this kernel: a directory-confined grant only "
                "limits where processes start; what they run has the user's full access"
            )
        text = (
            f"Landlock ABI {self.abi}: processes started under a directory-confined grant can "
            "write only beneath that directory and a private temporary directory"
        )
        if self.scopes_signals:
            text += ", and cannot signal or reach abstract sockets outside their domain"
        else:
            text += " (signals and abstract sockets are not scoped before ABI 6)"
        if self.namespaces:
            return text + (
                "; meith's homes and sockets and the secret paths are hidden from them, .git "
                "is read-only, they see only their own terminal and have no network but the "
                "destinations their grant names (--net)"
            )
        missing = ", ".join(w.name for w in self.missing())
        return (
            text + f"; user namespaces are unavailable, so these walls are MISSING: {missing} "
            f"(fix: {_USERNS_FIX})"
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "available": self.available,
            "abi": self.abi,
            "scopesSignals": self.scopes_signals,
            "namespaces": self.namespaces,
            "tcpRules": self.tcp_rules,
            "walls": [w.to_dict() for w in self.walls()],
            "missing": [w.name for w in self.missing()],
            "summary": self.describe(),
        }


@functools.cache
def compiled_wrapper() -> str:
    """The exec wrapper, compiled once: a script run by path is compiled on every start (as
    long as a Python start-up again on a loaded machine), a .pyc is not. Kept in the per-user
    0700 directory under /tmp (confined processes can neither write nor see it), named by a
    hash of the source and the interpreter's magic number; the source itself when that fails."""
    try:
        with open(_WRAPPER, "rb") as fh:
            source = fh.read()
        tag = hashlib.sha256(importlib.util.MAGIC_NUMBER + source).hexdigest()[:20]
        directory = user_tmp_dir() / "code"
        _private_dir(directory.parent)
        _private_dir(directory)
        target = directory / f"confine_exec-{tag}.pyc"
        if not target.exists():
            partial = directory / f".{tag}.{os.getpid()}.tmp"
            py_compile.compile(_WRAPPER, cfile=str(partial), doraise=True)
            os.chmod(partial, 0o600)
            os.replace(partial, target)
        return str(target)
    except (OSError, py_compile.PyCompileError):
        return _WRAPPER


@functools.cache
def landlock_status() -> LandlockStatus:
    """The kernel's Landlock and namespace support (asked once per process). The test knobs
    `MEITH_CONFINE_NO_NAMESPACES=1` and `MEITH_CONFINE_LANDLOCK_ABI=N` can only take away."""
    abi = _confine_exec.abi_version()
    forced = os.environ.get(ABI_ENV, "").strip()
    if forced.isdigit():
        abi = min(abi, int(forced))
    no_ns = os.environ.get(NO_NAMESPACES_ENV, "").strip() not in ("", "0")
    return LandlockStatus(abi, abi >= 1 and not no_ns and _namespaces_work())


def _namespaces_work() -> bool:
    try:
        probe = subprocess.run(
            [sys.executable, "-I", "-S", "-B", _WRAPPER, "--probe-namespaces"],
            capture_output=True,
            timeout=10,
            check=False,
            env=_confine_exec.fixed_environment(),
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return probe.returncode == 0


@dataclass(frozen=True, slots=True)
class NetworkAccess:
    """How a confined process reaches the network (`Confinement.beneath(net=...)`).

    `proxy_socket`: the Unix socket of the runtime's gate (`policy.netgate.NetworkGate`) that
    decides each destination; None: no network at all beyond the process's own loopback.
    `ports_socket`: where the forwarder inside accepts connections for its loopback ports (a
    dev server the user opens at localhost:PORT). `proxy_port`: the gate's TCP port on the
    host's loopback, for hosts without network namespaces (Landlock TCP rules allow only it).
    """

    proxy_socket: str | None = None
    ports_socket: str | None = None
    proxy_port: int | None = None


@dataclass(frozen=True, slots=True)
class Confinement:
    """Where a confined process may write, what it cannot see, and its network."""

    write_dirs: tuple[str, ...]
    write_files: tuple[str, ...] = ()
    #: Mounted read-only, then covered, in a private mount namespace (empty without one).
    read_only: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    #: `(source, target)`: source mounted on the file target before anything is covered.
    binds: tuple[tuple[str, str], ...] = ()
    #: A private devpts instance (with namespaces).
    devpts: bool = False
    #: None: the network is left as it is (a plan made without `beneath`); else the wall.
    network: NetworkAccess | None = None
    #: Whether the network wall is a namespace (else Landlock TCP rules, where available).
    net_namespace: bool = False
    #: Where namespaces are missing: reading limited to these directories and files (all of
    #: the file system but the secret paths, meith's homes and other terminals); None: reads
    #: are not limited (what namespaces hide is then covered instead).
    read_dirs: tuple[str, ...] | None = None
    read_files: tuple[str, ...] = ()

    @classmethod
    def beneath(
        cls,
        directory: str,
        *,
        home: str | Path | None = None,
        extra_dirs: Iterable[str] = (),
        protect: Iterable[str] = (),
        hide: Iterable[str] = (),
        bind: Iterable[tuple[str, str]] = (),
        net: NetworkAccess | None = None,
        tty: str | None = None,
        secrets: Iterable[str] | None = None,
    ) -> Confinement:
        """Write access beneath `directory`, the `extra_dirs` (a private temp dir) and the usual
        device files; never to meith's `home` (the trust root), any other meith home, meith's
        own installation or the `protect`ed paths, even inside `directory`.

        With namespaces: every meith home and socket, the `hide` paths and the secret paths
        (`secrets`, default: `policy.secret_paths` with `home`'s setting) are covered,
        repository metadata is read-only, the process gets a private devpts, and each `bind`
        source (the socket, for a child that calls back with a session token) is mounted on its
        target file first. Without them nothing is covered or bound and only the process's
        own terminal `tty` (a /dev/pts path) is writable.

        The network: none beyond the process's own loopback, unless `net` names the gate that
        decides its destinations (see `NetworkAccess`)."""
        status = landlock_status()
        root = os.path.realpath(directory)
        secret = tuple(secrets) if secrets is not None else secret_paths(home=home)
        homes = [*known_homes(), *([str(home)] if home is not None else [])]
        # Every path is resolved once here; from then on containment is string work
        # (`resolved_within`, `outermost`): a user may have thousands of homes registered.
        guarded = [os.path.realpath(p) for p in [*_protected(None), *homes, *protect]]
        guarded.append(os.path.realpath(registry_dir()))
        dirs, files = _carve(root, [p for p in guarded if resolved_within(p, root)])
        dirs += [os.path.realpath(d) for d in extra_dirs]
        files += [f for f in DEVICE_FILES if os.path.exists(f)]
        if not status.namespaces:
            # Only its own terminal: no other /dev/pts entry is writable.
            dirs += [d for d in DEVICE_DIRS if d != "/dev/pts" and os.path.isdir(d)]
            own_tty = (
                [os.path.realpath(tty)] if tty is not None and is_within(tty, "/dev/pts") else []
            )
            files += own_tty
            # Nothing to cover things with: Landlock limits reads instead, to everything but
            # the secret paths, meith's homes and sockets, and /dev/pts (its own tty aside).
            unread = [*homes, *known_sockets(), *hide, *secret, str(registry_dir())]
            unread += [str(user_tmp_dir()), "/dev/pts"]
            keep = [root, *(os.path.realpath(d) for d in extra_dirs)]
            shut = [
                real
                for real in (os.path.realpath(p) for p in unread if os.path.lexists(p))
                if not any(resolved_within(k, real) for k in keep)
            ]
            read_dirs, read_files = _carve("/", outermost(shut))
            return cls(
                tuple(dirs),
                tuple(files),
                network=net or NetworkAccess(),
                net_namespace=False,
                read_dirs=(*read_dirs, *dirs),
                read_files=(*read_files, *own_tty),
            )
        dirs += [d for d in DEVICE_DIRS if os.path.isdir(d)]
        with contextlib.suppress(OSError):
            _private_dir(user_tmp_dir())  # to cover it, even before a socket lives there
        covered = [*homes, *known_sockets(), *hide, *secret, str(user_tmp_dir())]
        real = [os.path.realpath(p) for p in covered if os.path.lexists(p)]
        # Never cover what the process was granted (or what leads to it), nor what it binds.
        keep = [root, *(os.path.realpath(d) for d in extra_dirs)]
        keep += [os.path.realpath(t) for _s, t in bind]
        real = [p for p in real if not any(resolved_within(k, p) for k in keep)]
        # Covering a directory covers what is inside it (which is then gone to mount on).
        hidden = tuple(outermost(real))
        writable = [root, *dirs]
        metadata = tuple(
            p for p in repository_metadata(root) if any(is_within(p, w) for w in writable)
        )
        return cls(
            tuple(dirs),
            tuple(files),
            metadata,
            hidden,
            tuple(bind),
            devpts=True,
            network=net or NetworkAccess(),
            net_namespace=True,
        )

    def wrap(self, argv: Sequence[str], *, env_file: str | None = None) -> list[str]:
        """`argv` run through the exec wrapper that confines it first. Spawn it under
        `fixed_environment()`; the child's environment goes in `env_file` (see `command`,
        which does both). Without `env_file` the child gets the wrapper's own environment."""
        wrapped = [sys.executable, "-I", "-S", "-B", compiled_wrapper()]
        if env_file is not None:
            wrapped += ["--env-file", env_file]
        for d in self.write_dirs:
            wrapped += ["--write", d]
        for f in self.write_files:
            wrapped += ["--write-file", f]
        for p in self.read_only:
            wrapped += ["--read-only", p]
        for source, target in self.binds:
            wrapped += ["--bind", source, target]
        if self.devpts:
            wrapped.append("--devpts")
        if self.read_dirs is not None:
            for d in self.read_dirs:
                wrapped += ["--read", d]
            for f in self.read_files:
                wrapped += ["--read-file", f]
        for p in self.hidden:
            wrapped += ["--hide", p]
        wrapped += self._network_args()
        return [*wrapped, "--", *argv]

    def _network_args(self) -> list[str]:
        net = self.network
        if net is None:
            return []
        if self.net_namespace:
            args = ["--net", net.proxy_socket or "none"]
            if net.ports_socket is not None:
                args += ["--ports", net.ports_socket]
            return args
        if not landlock_status().tcp_rules:
            return []  # no network wall can be built here (and `walls()` says so)
        if net.proxy_port is None:
            return ["--tcp-connect", "0"]
        return [
            "--tcp-connect",
            str(net.proxy_port),
            "--proxy-url",
            f"http://127.0.0.1:{net.proxy_port}",
        ]

    def command(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        *,
        markers: Mapping[str, str] | None = None,
    ) -> tuple[list[str], dict[str, str]]:
        """`(argv, environment)` to spawn: the wrapper under a fixed, minimal environment (plus
        the `MEITH_*` `markers`), with `env` handed over in a private file that the wrapper
        reads as data, removes, and gives only to the final execve. Nothing of `env` (a
        loader variable, PYTHON*, ...) can act before every wall is in place.

        The file's name is in the wrapper's environment (`MEITH_CONFINE_ENV`), not its argv:
        /proc/PID/environ, unlike the command line, is out of a confined process's reach
        (Landlock denies it access to processes outside its domain), and the directory cannot
        be listed (0300), so no other confined process can read the file before the wrapper
        removes it."""
        fixed = _confine_exec.fixed_environment(dict(markers or {}))
        fixed[_confine_exec.ENV_FILE_VAR] = write_env_file(env)
        return self.wrap(argv), fixed


def confine_wrapper_environment(markers: Mapping[str, str] | None = None) -> dict[str, str]:
    """The fixed environment to start the exec wrapper with (plus `MEITH_*` `markers`): for a
    spawner that builds the wrapper's command line itself (`wrap(argv, env_file=...)`)."""
    return _confine_exec.fixed_environment(dict(markers or {}))


def write_env_file(env: Mapping[str, str]) -> str:
    """`env` as a private file for the wrapper (`--env-file`), in the per-user 0700 directory
    under /tmp that confined processes cannot see. The wrapper removes it."""
    directory = user_tmp_dir() / "env"
    _private_dir(directory.parent)
    _private_dir(directory, 0o300)  # files are opened by name only: no listing
    payload = b"".join(
        os.fsencode(k) + b"=" + os.fsencode(v) + b"\0"
        for k, v in env.items()
        if k and "=" not in k and "\0" not in k and "\0" not in v
    )
    path = str(directory / f"env-{secrets.token_hex(16)}")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, payload)
    finally:
        os.close(fd)
    return path


def discard_env_file(spawned: Sequence[str] | Mapping[str, str]) -> None:
    """Remove the env file of a wrapper that was never spawned: give the environment
    `command` returned (or a wrapped argv with `--env-file`)."""
    if isinstance(spawned, Mapping):
        path = spawned.get(_confine_exec.ENV_FILE_VAR)
        if path:
            with contextlib.suppress(OSError):
                os.unlink(path)
        return
    for flag, value in itertools.pairwise(spawned):
        if flag == "--env-file":
            with contextlib.suppress(OSError):
                os.unlink(value)
            return
        if flag == "--":
            return


def _private_dir(path: Path, mode: int = 0o700) -> None:
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
        raise OSError(f"{path} is not a private directory of this user; remove it")
    if stat.S_IMODE(st.st_mode) != mode:
        os.chmod(path, mode)


def _carve(root: str, protected: list[str]) -> tuple[list[str], list[str]]:
    """Rules that cover `root` except the `protected` paths beneath it."""
    if not protected:
        return [root], []
    if any(p == root for p in protected):
        return [], []
    dirs: list[str] = []
    files: list[str] = []
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return [], []
    # `root` and `protected` are resolved; each protected path is filed under the entry of
    # `root` it lies in, so each level costs one pass over the paths, not entries x paths.
    beneath: dict[str, list[str]] = {}
    prefix = root if root.endswith("/") else root + "/"
    for p in protected:
        if p.startswith(prefix):
            beneath.setdefault(p[len(prefix) :].split("/", 1)[0], []).append(p)
    for entry in entries:
        path = entry.path
        if entry.is_symlink():
            continue  # a rule follows the link: it could name any directory
        inner = beneath.get(entry.name)
        if inner:
            sub_dirs, sub_files = _carve(path, inner)
            dirs += sub_dirs
            files += sub_files
        elif entry.is_dir():
            dirs.append(path)
        else:
            files.append(path)
    return dirs, files


def repository_metadata(root: str) -> list[str]:
    """The git metadata of `root` and of its direct subdirectories: each `.git` (directory or
    pointer file) and, for a pointer file, the `gitdir:` it names and that one's common dir."""
    found: list[str] = []
    candidates = [os.path.join(root, ".git")]
    try:
        candidates += [
            os.path.join(e.path, ".git")
            for e in os.scandir(root)
            if e.is_dir(follow_symlinks=False) and e.name != ".git"
        ]
    except OSError:
        pass
    for dotgit in candidates:
        if os.path.islink(dotgit) or not os.path.lexists(dotgit):
            continue
        found.append(dotgit)
        if os.path.isfile(dotgit):
            target = _gitdir_of(dotgit)
            if target is not None:
                found.append(target)
                common = _read_pointer(os.path.join(target, "commondir"), target)
                if common is not None:
                    found.append(common)
    return list(dict.fromkeys(found))


def _gitdir_of(pointer: str) -> str | None:
    try:
        with open(pointer, encoding="utf-8", errors="replace") as f:
            line = f.readline(4096).strip()
    except OSError:
        return None
    if not line.startswith("gitdir:"):
        return None
    return _resolve_dir(line[len("gitdir:") :].strip(), os.path.dirname(pointer))


def _read_pointer(path: str, base: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            value = f.readline(4096).strip()
    except OSError:
        return None
    return _resolve_dir(value, base) if value else None


def _resolve_dir(value: str, base: str) -> str | None:
    path = os.path.realpath(os.path.join(base, value))
    return path if os.path.isdir(path) else None


def _protected(home: str | Path | None) -> list[str]:
    """Never writable by a confined process: meith's home (the trust root) and meith's own
    installation (code the next `meith` run would execute)."""
    paths = [sys.prefix, str(Path(__file__).parent)]
    return [str(home), *paths] if home is not None else paths
