"""The confinement plan: where a process started under a directory-confined grant may write,
what it cannot see, which metadata is read-only for it, and its network — computed from the
grant's directory minus what must stay out of reach (`confine.protected`: meith's homes, its own
installation), for the walls this host can build (`confine.status`).

The plan is data: `Confinement.beneath(..., status=...)` takes the host's Landlock and
namespace status as an argument, so a test can compare the whole plan for any host without the
kernel. `wrap(argv)` renders it as the exec wrapper's command line (`confine.wrapper.main`),
and `command(argv, env)` adds the fixed environment and the env file.

Landlock rules only add access, so a protected directory inside the granted one is carved out
by granting the granted directory's other entries one by one instead: the process can then
write anywhere beneath them, but cannot create new entries directly in the directories that
lead to the protected one (the granted directory itself, in the common case).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from meith_core.base.home_registry import known_sockets, user_tmp_dir
from meith_core.base.paths import is_within, outermost, resolved_within
from meith_core.confine.carve import carve
from meith_core.confine.envfile import write_env_file
from meith_core.confine.gitdirs import repository_metadata
from meith_core.confine.launcher import private_dir, wrapper_argv, wrapper_environment
from meith_core.confine.protected import installation_paths, meith_homes
from meith_core.confine.secret_files import find_secret_files
from meith_core.confine.secret_paths import secret_paths, secret_patterns
from meith_core.confine.sockets import private_dirs, user_sockets
from meith_core.confine.status import LandlockStatus, landlock_status
from meith_core.confine.wrapper.environment import ENV_FILE_VAR
from meith_core.confine.wrapper.namespaces import RESOLV_STUB

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


def resolv_stub() -> str:
    """The resolv.conf a confined process gets (its lookups go to the forwarder's stub), a
    file in the per-user directory the process never sees."""
    path = user_tmp_dir() / "resolv.conf"
    try:
        if path.read_bytes() == RESOLV_STUB:
            return str(path)
    except OSError:
        private_dir(user_tmp_dir())
    temp = path.with_name(f".resolv.{os.getpid()}")
    temp.write_bytes(RESOLV_STUB)
    os.replace(temp, path)
    return str(path)


@dataclass(frozen=True, slots=True)
class NetworkAccess:
    """How a confined process reaches the network (`Confinement.beneath(net=...)`).

    With network namespaces: `control_fd`, the spawn's control channel (`confine.channel`), an
    inherited descriptor the forwarder inside keeps (None: no forwarder, nothing beyond the
    process's own loopback); `gate`: whether the forwarder offers the runtime's gate as the
    process's proxy; `listen`: host-loopback destinations the grant names, where the forwarder
    listens inside and tunnels through the gate (`127.0.0.1:5432`). Without them:
    `proxy_port`, the gate's TCP port on the host's loopback (Landlock TCP rules allow only it).
    """

    control_fd: int | None = None
    gate: bool = False
    listen: tuple[str, ...] = ()
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
    #: Whether this host's Landlock has TCP rules (the network wall without a namespace).
    tcp_rules: bool = False
    #: Directories replaced by an empty read-only tmpfs (`/tmp`, `/run/user`, ...; see
    #: `confine.sockets`), and what is mounted back into them, by descriptor.
    private: tuple[str, ...] = ()
    keep: tuple[str, ...] = ()
    #: A PID namespace of its own: every process of the spawn ends with it.
    pid_namespace: bool = False
    #: Files inside the directory whose names are secret (`confine.secret_files`), covered
    #: through a descriptor; `secret_files_note`: why that list is incomplete, when it is.
    secret_files: tuple[str, ...] = ()
    secret_files_note: str = ""

    @classmethod
    def beneath(
        cls,
        directory: str,
        *,
        home: str | os.PathLike[str] | None = None,
        extra_dirs: Iterable[str] = (),
        protect: Iterable[str] = (),
        hide: Iterable[str] = (),
        bind: Iterable[tuple[str, str]] = (),
        net: NetworkAccess | None = None,
        tty: str | None = None,
        secrets: Iterable[str] | None = None,
        patterns: Iterable[str] | None = None,
        sockets: Iterable[str] = (),
        status: LandlockStatus | None = None,
    ) -> Confinement:
        """Write access beneath `directory`, the `extra_dirs` (a private temp dir) and the usual
        device files; never to what `confine.protected` names (every meith home, `home`
        included, and meith's installation) or the `protect`ed paths, even inside `directory`.

        With namespaces: every meith home and socket, the `hide` paths and the secret paths
        (`secrets`, default: `confine.secret_paths` with `home`'s setting) are covered,
        repository metadata is read-only, the process gets a private devpts, and each `bind`
        source (the socket, for a child that calls back with a session token) is mounted on its
        target file first. The user's sockets are out of reach (`confine.sockets`): /tmp,
        /run/user and the like are private, empty but for the directory, the extra dirs and the
        `sockets` the grant names, which are mounted back; well-known sockets are covered. The
        files beneath `directory` whose names are secret by `patterns` (default: the setting
        `confinement.secretPatterns` of `home`) are covered too.
        Without namespaces nothing is covered or bound and only the process's own terminal
        `tty` (a /dev/pts path) is writable.

        The network: none beyond the process's own loopback, unless `net` names the gate that
        decides its destinations (see `NetworkAccess`). `status`: the host's walls (default:
        this kernel's, `landlock_status()`)."""
        status = landlock_status() if status is None else status
        root = os.path.realpath(directory)
        # Only what is there is covered (or shut from reads) below: absent paths are not
        # resolved for nothing.
        secret = tuple(secrets) if secrets is not None else secret_paths(home=home, existing=True)
        homes = meith_homes(home)
        # Every path is resolved once here; from then on containment is string work
        # (`resolved_within`, `outermost`): a user may have thousands of homes registered.
        # `protected_paths(home)`, without resolving every home a second time.
        guarded = [*dict.fromkeys([*homes, *installation_paths()])]
        guarded += [os.path.realpath(p) for p in protect]
        dirs, files = carve(root, [p for p in guarded if resolved_within(p, root)])
        extra = [os.path.realpath(d) for d in extra_dirs]
        dirs += extra
        files += [f for f in DEVICE_FILES if os.path.exists(f)]
        keep = [root, *extra]
        if not status.namespaces:
            # Only its own terminal: no other /dev/pts entry is writable.
            dirs += [d for d in DEVICE_DIRS if d != "/dev/pts" and os.path.isdir(d)]
            own_tty = (
                [os.path.realpath(tty)] if tty is not None and is_within(tty, "/dev/pts") else []
            )
            files += own_tty
            # Nothing to cover things with: Landlock limits reads instead, to everything but
            # the secret paths, meith's homes and sockets, and /dev/pts (its own tty aside).
            unread = [
                *homes,
                *known_sockets(homes),
                *hide,
                *secret,
                str(user_tmp_dir()),
                "/dev/pts",
            ]
            shut = [
                real
                for real in (os.path.realpath(p) for p in unread if os.path.lexists(p))
                if not any(resolved_within(k, real) for k in keep)
            ]
            read_dirs, read_files = carve("/", outermost(shut))
            return cls(
                tuple(dirs),
                tuple(files),
                network=net or NetworkAccess(),
                read_dirs=(*read_dirs, *dirs),
                read_files=(*read_files, *own_tty),
                tcp_rules=status.tcp_rules,
            )
        dirs += [d for d in DEVICE_DIRS if os.path.isdir(d)]
        with contextlib.suppress(OSError):
            private_dir(user_tmp_dir())  # to cover it, even before a socket lives there
        granted = [os.path.realpath(s) for s in sockets]
        covered = [*homes, *known_sockets(homes), *hide, *secret, str(user_tmp_dir())]
        real = [os.path.realpath(p) for p in covered if os.path.lexists(p)]
        real += user_sockets()
        # Never cover what the process was granted (or what leads to it), nor what it binds.
        keep += [os.path.realpath(t) for _s, t in bind] + granted
        private = [d for d in private_dirs() if not any(resolved_within(d, k) for k in keep)]
        back = outermost(k for k in keep if any(resolved_within(k, d) for d in private))
        # What lies in a private directory is gone already, unless it is mounted back.
        real = [
            p
            for p in real
            if not any(resolved_within(k, p) for k in keep)
            and (
                not any(resolved_within(p, d) for d in private)
                or any(resolved_within(p, k) for k in back)
            )
        ]
        # Covering a directory covers what is inside it (which is then gone to mount on).
        hidden = tuple(outermost(real))
        writable = [root, *dirs]
        metadata = tuple(
            p for p in repository_metadata(root) if any(is_within(p, w) for w in writable)
        )
        names = secret_patterns(home=home) if patterns is None else tuple(patterns)
        found = find_secret_files(root, names)
        return cls(
            tuple(dirs),
            tuple(files),
            metadata,
            hidden,
            tuple((os.path.realpath(source), target) for source, target in bind),
            devpts=True,
            network=net or NetworkAccess(),
            net_namespace=True,
            tcp_rules=status.tcp_rules,
            private=tuple(private),
            keep=tuple(back),
            pid_namespace=True,
            secret_files=found.files,
            secret_files_note=found.note,
        )

    def covers(self, path: str) -> bool:
        """Whether the resolved `path` is out of the process's sight in its mount namespace:
        covered, or in a private directory and not mounted back."""
        if any(resolved_within(path, h) for h in self.hidden):
            return True
        return any(resolved_within(path, d) for d in self.private) and not any(
            resolved_within(path, k) for k in self.keep
        )

    def wrap(self, argv: Sequence[str], *, env_file: str | None = None) -> list[str]:
        """`argv` run through the exec wrapper that confines it first. Spawn it under
        `wrapper_environment()`; the child's environment goes in `env_file` (see `command`,
        which does both). Without `env_file` the child gets the wrapper's own environment."""
        wrapped = wrapper_argv()
        if env_file is not None:
            wrapped += ["--env-file", env_file]
        for d in self.write_dirs:
            wrapped += ["--write", d]
        for f in self.write_files:
            wrapped += ["--write-file", f]
        for p in self.private:
            wrapped += ["--private", p]
        for p in self.keep:
            wrapped += ["--keep", p]
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
        for f in self.secret_files:
            wrapped += ["--hide-file", f]
        wrapped += self._network_args()
        if self.pid_namespace:
            wrapped.append("--pid-ns")
        return [*wrapped, "--", *argv]

    def _network_args(self) -> list[str]:
        net = self.network
        if net is None:
            return []
        if self.net_namespace:
            args = ["--net", "gate" if net.gate and net.control_fd is not None else "none"]
            if net.control_fd is not None:
                args += ["--control", str(net.control_fd), "--resolv", resolv_stub()]
                for spec in net.listen:
                    args += ["--listen", spec]
            return args
        if not self.tcp_rules:
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
        fixed = wrapper_environment(markers)
        fixed[ENV_FILE_VAR] = write_env_file(env)
        return self.wrap(argv), fixed


__all__ = ["DEVICE_DIRS", "DEVICE_FILES", "Confinement", "NetworkAccess"]
